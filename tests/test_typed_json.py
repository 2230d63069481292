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
    with pytest.raises(tj.TypedJSONError, match=r"f\.json: .*not a JSON number"):
        tj.loads(f'{{"x": {token}}}', "f.json")


def test_loads_names_the_file_on_bad_json() -> None:
    with pytest.raises(tj.TypedJSONError, match=r"^f\.json: not valid JSON"):
        tj.loads("{", "f.json")


@pytest.mark.parametrize(
    ("getter", "value", "message"),
    [
        ("get_int", True, "must be an integer, got true"),
        ("get_int", 2.0, "must be an integer, got 2.0"),
        ("get_int", "2", 'must be an integer, got "2"'),
        ("get_bool", 1, "must be true or false, got 1"),
        ("get_bool", None, "must be true or false, got null"),
        ("get_float", False, "must be a number, got false"),
        ("get_float", math.nan, "must be a finite number, got NaN"),
        ("get_float", "1.0", 'must be a number, got "1.0"'),
        ("get_str", 3, "must be a string, got 3"),
        ("get_list", {"a": 1}, 'must be a list, got {"a": 1}'),
        ("get_dict", [1], "must be an object, got \\[1\\]"),
    ],
)
def test_getters_reject_the_wrong_type_naming_file_and_key(getter: str, value: object,
                                                           message: str) -> None:
    fields = tj.Fields({"k": value}, "config.json")
    with pytest.raises(tj.TypedJSONError, match=f'^config.json: "k" {message}$'):
        getattr(fields, getter)("k")


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
    assert fields.get_int("absent", None) is None
    assert fields.fields("d").get_int("a") == 1
    with pytest.raises(tj.TypedJSONError, match=r'^c\.json: missing key "absent"$'):
        fields.get_int("absent")
    with pytest.raises(tj.TypedJSONError, match=r'^c.json: "d": "a" must be a string'):
        fields.fields("d").get_str("a")


def test_null_is_a_value_unless_told_otherwise() -> None:
    with pytest.raises(tj.TypedJSONError, match="must be an integer, got null"):
        tj.Fields({"n": None}, "c.json").get_int("n", 7)


def test_fields_needs_an_object() -> None:
    with pytest.raises(tj.TypedJSONError, match=r"^c\.json: must hold a JSON object, got \[\]$"):
        tj.Fields([], "c.json")


def test_errors_are_value_errors_and_long_values_are_cut() -> None:
    with pytest.raises(ValueError, match=r"\.\.\.$"):
        tj.expect_int("x" * 500, "k")
    assert len(tj.show(list(range(1000)))) == 60
    assert tj.show(math.inf) == json.dumps(math.inf)
