"""Messages and their catalog (issue 37, item 1): every message id used in ``src/`` has a Chinese
entry whose placeholders agree with it, the committed ``.mo`` is the compile of the ``.po``, a
message keeps its id and arguments through JSON, pickle and the task codec, and the Chinese of a
sample of claims' notes and figure labels is what it was before the catalogs.

The sample (``fixtures/zh_before.json``) was recorded with the regular-expression translator at
commit bf417fa: ``tmath verify --tier quick --size tiny`` (seed 0), each note and label put
through ``i18n.text(..., "zh")``. The test runs those 15 quick claims again (about 6 s), writes
their results as JSON, reads them back as the report does and translates.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from transformer_math import i18n
from transformer_math.i18n import catalog
from transformer_math.i18n.message import Message, collect, msg, placeholders, revive

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("fixtures") / "zh_before.json"
CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("i18n_catalog",
                                                  ROOT / "tools" / "i18n_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["i18n_catalog"] = module
    spec.loader.exec_module(module)
    return module


# --- the catalog -------------------------------------------------------------------------------


def test_catalog_is_current_and_complete(tool: ModuleType) -> None:
    """Every msgid in src/ is in the .po with a translation, none is unused, and the .mo is the
    compile of the .po (``make i18n`` was run)."""
    assert tool.check() == []


def test_every_entry_keeps_the_placeholders_and_formats(tool: ModuleType) -> None:
    _, entries = tool.read_po(tool.po_path("zh"))
    assert entries
    for msgid, entry in entries.items():
        assert placeholders(entry.msgstr) == placeholders(msgid), msgid
        assert CJK.search(entry.msgstr), f"no Chinese in the entry of {msgid[:60]!r}"


def test_every_entry_formats(tool: ModuleType) -> None:
    """Each template formats with sample arguments of its specs (a wrong spec fails here)."""
    _, entries = tool.read_po(tool.po_path("zh"))
    for msgid, entry in entries.items():
        args = {name: ("x" if not spec or spec.startswith("!") else 0.5)
                for name, spec in placeholders(msgid).items()}
        assert entry.msgstr.format(**args) and msgid.format(**args)


def test_extraction_reads_message_calls(tmp_path: Path, tool: ModuleType) -> None:
    (tmp_path / "m.py").write_text('from x import msg\nA = msg("a {n:.2f} b", n=1.0)\n'
                                   'B = msg(name)\nC = other("c")\n')
    found = tool.extract(tmp_path)
    assert list(found) == ["a {n:.2f} b"]


def test_mo_round_trips_through_gettext(tmp_path: Path, tool: ModuleType) -> None:
    import gettext

    entries = {"a {n}": tool.Entry("a {n}", "甲 {n}"), "untranslated": tool.Entry("untranslated")}
    mo = tmp_path / "t.mo"
    mo.write_bytes(tool.compile_mo(tool.HEADER["zh"], entries))
    with mo.open("rb") as fh:
        t = gettext.GNUTranslations(fh)
    assert t.gettext("a {n}") == "甲 {n}" and t.gettext("untranslated") == "untranslated"


# --- the message type ---------------------------------------------------------------------------


def test_a_message_is_its_english_text() -> None:
    m = msg("variance {var:.3g} at d_k = {d_k}", var=0.123456, d_k=64)
    assert m == "variance 0.123 at d_k = 64" and isinstance(m, str)
    assert m.msgid == "variance {var:.3g} at d_k = {d_k}" and m.args == {"var": 0.123456, "d_k": 64}
    assert str(m) is m and f"{m}!" == "variance 0.123 at d_k = 64!"
    assert json.dumps([m]) == '["variance 0.123 at d_k = 64"]'


def test_arguments_must_match_the_placeholders() -> None:
    with pytest.raises(ValueError, match="names"):
        msg("a {x}", y=1)
    with pytest.raises(ValueError, match="not a name"):
        msg("a {}")


def test_arguments_are_kept_as_json_values() -> None:
    import numpy as np
    import torch

    m = msg("{a} {b:.2f} {c} {d}", a=np.int64(3), b=torch.tensor(0.25), c=[1, 2], d=None)
    assert m.args == {"a": 3, "b": 0.25, "c": "[1, 2]", "d": None} and m == "3 0.25 [1, 2] None"


def test_message_round_trips(tmp_path: Path) -> None:
    from transformer_math.execution import codec

    inner = msg("causal")
    m = msg("{case}: forward {fe:.1e}", case=inner, fe=float("inf"))
    for back in (Message.from_json(json.loads(json.dumps(m.to_json()))),
                 pickle.loads(pickle.dumps(m)),
                 codec.decode(json.loads(json.dumps(codec.encode(m))))):
        assert isinstance(back, Message) and back == m and back.msgid == m.msgid
        assert isinstance(back.args["case"], Message) and back.args["fe"] == float("inf")


def test_translation_by_catalog_with_nested_messages() -> None:
    m = msg("{case}: forward {fe:.1e}, grad {ge:.1e}", case=msg("causal"), fe=3e-7, ge=6e-7)
    assert i18n.text(m, "zh") == "因果：前向 3.0e-07，梯度 6.0e-07"
    assert i18n.text(m, "en") == "causal: forward 3.0e-07, grad 6.0e-07"
    assert i18n.translated(m, "zh")
    assert i18n.text(msg("not in the catalog {n}", n=1), "zh") == "not in the catalog 1"
    assert catalog.render(msg("causal"), "en") == "causal"


def test_the_same_message_with_other_numbers() -> None:
    zh = i18n.text(msg("relative error at L={depths_0}: {errors_0:.3e}, at L={depths}: "
                       "{errors:.3e}", depths_0=32, errors_0=1.25e-2, depths=512, errors=7.5e-5),
                   "zh")
    assert all(n in zh for n in ("32", "1.250e-02", "512", "7.500e-05")) and CJK.search(zh), zh


def test_collect_and_revive() -> None:
    note = msg("{case}: forward {fe:.1e}, grad {ge:.1e}", case=msg("causal"), fe=3e-7, ge=6e-7)
    entry = {"id": "x", "notes": [note, "plain"], "figures": [{"title": msg("causal")}]}
    table = collect(entry)
    assert [t["text"] for t in table] == ["causal", "causal: forward 3.0e-07, grad 6.0e-07"]
    back = revive(json.loads(json.dumps(i18n.with_messages(entry))))
    assert isinstance(back["notes"][0], Message) and back["notes"][1] == "plain"
    assert i18n.text(back["figures"][0]["title"], "zh") == "因果"
    broken = {"notes": ["a"], "messages": [{"text": "a", "id": "{zz}", "args": {}}]}
    assert revive(broken)["notes"] == ["a"]


# --- the Chinese of real claims, before and after -----------------------------------------------


def _texts(entry: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    labels: list[Any] = []
    for fig in entry.get("figures") or []:
        labels += [fig["title"], fig["xlabel"], fig["ylabel"]]
        labels += [s.get("label") or "" for s in fig["series"]]
        labels += [h[1] for h in fig.get("hlines", []) + fig.get("vlines", []) if len(h) > 1]
    return list(entry.get("notes") or []), [x for x in dict.fromkeys(labels) if x]


@pytest.fixture(scope="module")
def rerun() -> dict[str, dict[str, Any]]:
    from transformer_math.claims.registry import CLAIMS, Context, Size, all_claims, run_claim

    all_claims()
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["claims"]
    out = {}
    for rec in recorded:
        result = run_claim(CLAIMS[rec["id"]], Context(seed=0, size=Size.TINY))
        # through JSON, as `tmath report` reads a results file
        out[rec["id"]] = revive(json.loads(json.dumps(result.to_json())))
    return out


NORMALISED = [
    # the sublayer kinds are an argument now, joined by ", " in both languages (was "、")
    ("full、attention_only、ffn_only", "full, attention_only, ffn_only"),
]


@pytest.mark.parametrize("kind", ["notes", "labels"])
def test_chinese_of_recorded_claims_is_unchanged(rerun: dict[str, dict[str, Any]],
                                                  kind: str) -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["claims"]
    messages = 0
    for rec in recorded:
        notes, labels = _texts(rerun[rec["id"]])
        now = notes if kind == "notes" else labels
        assert [str.__str__(x) for x in now] == [w["en"] for w in rec[kind]], rec["id"]
        for x, was in zip(now, rec[kind], strict=True):
            messages += isinstance(x, Message)
            zh, before = i18n.text(x, "zh"), was["zh"]
            for a, b in NORMALISED:
                before = before.replace(a, b)
            assert zh == before, f"{rec['id']}: {x!r}"
    assert messages >= (20 if kind == "notes" else 5)
