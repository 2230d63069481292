"""The one strict typed-JSON reader and writer (``typed_json``, issue 37 item 4)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from transformer_math import typed_json as tj


def test_writer_turns_non_finite_floats_into_strings_and_reads_back(tmp_path: Path) -> None:
    doc = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": (1, 2), "d": {3, 1}}
    path = tj.write_json(doc, tmp_path / "sub" / "x.json")
    back = tj.loads(path.read_text(), str(path))
    assert back == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "c": [1, 2], "d": [1, 3]}


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_loads_refuses_bare_non_finite_tokens(token: str) -> None:
    with pytest.raises(ValueError, match=r"f\.json: .*not a JSON number"):
        tj.loads(f'{{"x": {token}}}', "f.json")


def test_loads_names_the_file_on_bad_json() -> None:
    with pytest.raises(ValueError, match=r"^f\.json is not valid JSON"):
        tj.loads("{", "f.json")
    with pytest.raises(ValueError, match=r"^f\.json is not valid JSON \(nested too deeply\)"):
        tj.loads("[" * 100_000, "f.json")
    with pytest.raises(ValueError, match=r"^f\.json is not valid JSON"):
        tj.loads("{", "f.json")


@pytest.mark.parametrize(
    ("getter", "value", "message"),
    [
        ("get_int", True, "must be a JSON integer, got true"),
        ("get_int", 2.0, "must be a JSON integer, got 2.0"),
        ("get_int", "2", 'must be a JSON integer, got "2"'),
        ("get_bool", 1, r"must be a JSON boolean \(true/false\), got 1"),
        ("get_bool", None, r"must be a JSON boolean \(true/false\), got null"),
        ("get_float", False, "must be a finite number, got false"),
        ("get_float", math.nan, "must be a finite number, got NaN"),
        ("get_float", "1.0", 'must be a finite number, got "1.0"'),
        ("get_str", 3, "must be a string, got 3"),
        ("get_list", {"a": 1}, 'must be a JSON array, got {"a": 1}'),
        ("get_dict", [1], r"must be a JSON object, got \[1\]"),
    ],
)
def test_getters_reject_the_wrong_type_naming_file_and_key(getter: str, value: object,
                                                           message: str) -> None:
    fields = tj.Fields({"k": value}, "config.json")
    with pytest.raises(ValueError, match=rf"^k in config\.json {message}$"):
        getattr(fields, getter)("k")


def test_ranges_are_part_of_the_rule() -> None:
    fields = tj.Fields({"i": 0, "f": 0.0}, "c.json")
    span = r"^i in c\.json must be a JSON integer in \[1, 8\], got 0$"
    with pytest.raises(ValueError, match=span):
        fields.get_int("i", minimum=1, maximum=8)
    with pytest.raises(ValueError, match=r"in \[1, inf\]"):
        fields.get_int("i", minimum=1)
    with pytest.raises(ValueError, match=r"^f in c\.json must be a finite number > 0.0, got 0.0$"):
        fields.get_float("f", minimum=0.0, strict=True)
    assert fields.get_float("f", minimum=0.0) == 0.0


def test_getters_accept_the_right_type_and_defaults() -> None:
    fields = tj.Fields({"i": 3, "b": False, "f": 2, "s": "x", "l": [1], "d": {"a": 1},
                        "n": None}, "c.json", null_is_missing=True)
    assert fields.get_int("i") == 3
    assert fields.get_bool("b") is False
    assert fields.get_float("f") == 2.0 and isinstance(fields.get_float("f"), float)
    assert fields.get_str("s") == "x"
    assert fields.get_list("l") == [1]
    assert fields.get_dict("d") == {"a": 1}
    assert fields.get_int("n", 7) == 7  # null counts as absent here
    assert fields.get_int("absent", None) is None  # the default is returned as it is
    assert fields.get_bool("absent", None) is None
    with pytest.raises(ValueError, match=r"^c\.json lacks the required key 'absent'$"):
        fields.get_int("absent")


def test_null_is_a_value_unless_told_otherwise() -> None:
    with pytest.raises(ValueError, match="must be a JSON integer, got null"):
        tj.Fields({"n": None}, "c.json").get_int("n", 7)


def test_fields_needs_an_object() -> None:
    with pytest.raises(ValueError, match=r"^c\.json must hold a JSON object, got \[\]$"):
        tj.Fields([], "c.json")


def test_errors_are_value_errors_and_long_values_are_cut() -> None:
    with pytest.raises(ValueError, match=r"\.\.\.$"):
        tj.expect_int("x" * 500, "k")
    assert len(tj.show(list(range(1000)))) == 60
    assert tj.show(math.inf) == json.dumps(math.inf)


def test_non_finite_tokens_can_be_left_to_the_getters() -> None:
    raw = tj.loads('{"x": NaN}', "f.json", non_finite_tokens=True)
    with pytest.raises(ValueError, match=r"^x in f\.json must be a finite number, got NaN$"):
        tj.Fields(raw, "f.json").get_float("x")


def test_bytes_must_be_utf8() -> None:
    assert tj.loads('{"a": "\u00e9"}'.encode(), "f.json") == {"a": "\u00e9"}
    with pytest.raises(ValueError, match=r"^f\.json is not valid JSON"):
        tj.loads(b'"\xff"', "f.json")
