"""A results document written by hand: a few claims spread over the chapter's sections, with
every kind of verdict, a caught and an uncaught falsifier, a refutation and a cited correction.

Nothing is run (the report tests must stay fast); the entries have the shape
``ClaimResult.to_json`` gives them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest


def _margin(name: str, value: float, threshold: float, sense: str = "<=") -> dict[str, Any]:
    slack = threshold - value if sense == "<=" else value - threshold
    return {"name": name, "value": value, "threshold": threshold, "sense": sense, "slack": slack}


def _entry(cid: str, verdict: str, refs: list[tuple[str, int, int]], section: str | None,
           **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": cid, "topic": cid.split(".")[0], "source": "test source", "tier": "quick",
        "statement": f"statement of {cid}", "statement_zh": None,
        "verdict": verdict, "expected": verdict, "expected_met": True, "version": 1,
        "seed_refs": [{"seed": s, "lines": [a, b]} for s, a, b in refs],
        "section": section, "sections": [section] if section else [], "module": None,
        "refutes": [], "corrections": [], "predicted": 1.0, "measured": 1.0,
        "tolerance": 0.01, "falsifier": None, "seconds": 0.01, "notes": [], "details": {},
        "figures": [], "margins": [], "seed_margins": [], "per_seed": None, "error": None,
    }
    entry.update(extra)
    return entry


def _caught(name: str, measured: Any) -> dict[str, Any]:
    return {"name": name, "bug": name, "description": f"{name} planted", "caught": True,
            "verdict": "failed", "measured": measured}


CHAPTER_CLAIMS: list[dict[str, Any]] = [
    # Listed out of reading order on purpose: the report must sort them.
    _entry("memory.concept", "verified", [("003", 46, 52)], "003",
           falsifier=_caught("memory.bug", 9.0)),
    _entry("position.later", "verified", [("000", 626, 638)], "8.3.3",
           statement="RoPE rotations are orthogonal",
           statement_zh="RoPE 旋转是正交变换",
           predicted={"max_norm_change": 0.0}, measured={"max_norm_change": 1e-7},
           margins=[_margin("max |‖R x‖ - ‖x‖|", 1e-7, 1e-5)],
           falsifier=_caught("position.rope-skew", {"max_norm_change": 0.3})),
    _entry("position.earlier", "refuted", [("000", 564, 584), ("004", 184, 203)], "8.3.3",
           sections=["8.3.3", "004.position"],
           statement="Sinusoidal shifts are linear maps; the seed's formula is wrong",
           predicted={"shift_error": 0.0}, measured={"shift_error": 2e-7, "seed_error": 0.4},
           margins=[_margin("shift map error", 2e-7, 1e-5)],
           seed_margins=[_margin("seed's shift map error", 0.4, 1e-5)],
           refutes=[{"seed": "000", "line": 570, "says": "PE(p+k) = PE(p) + PE(k)",
                     "correct": "PE(p+k) = M_k PE(p), a rotation"}],
           falsifier=_caught("position.sinusoid-phase", {"shift_error": 0.5}),
           notes=["shift maps checked for k = 1..8"],
           details={"offsets": [1, 2, 3, 4, 5, 6, 7, 8], "dim": 16}),
    _entry("attention.scale", "verified", [("000", 223, 259)], "8.3.1", module="M1",
           statement="The scaled dot product has unit variance",
           predicted={"variance": 1.0}, measured={"variance": 1.02},
           margins=[_margin("|variance - 1|", 0.02, 0.1)],
           per_seed={"seeds": [0, 1, 2], "values": {"variance": [1.02, 0.98, 1.01]},
                     "mean": {"variance": 1.0033}, "spread": {"variance": 0.04}},
           falsifier=_caught("attention.scale-dropped", {"variance": 64.0}),
           figures=[{"title": "variance against d_k", "xlabel": "d_k", "ylabel": "variance",
                     "logx": False, "logy": False, "hlines": [[1.0, "predicted"]],
                     "vlines": [], "series": [{"label": "measured", "x": [8, 16, 32],
                                               "y": [1.0, 1.01, 0.99], "kind": "line",
                                               "style": "o-"}]}]),
    _entry("attention.uncaught", "verified", [("000", 315, 327)], "8.3.1",
           falsifier={"name": "attention.no-effect", "bug": "attention.no-effect",
                      "description": "changes nothing", "caught": False,
                      "verdict": "verified", "measured": 1.0}),
    _entry("heads.failed", "failed", [("004", 122, 131)], "004.heads",
           expected="verified", expected_met=False, measured="NaN",
           margins=[_margin("param count error", 12.0, 0.0)]),
    _entry("history.cited", "cited", [("000", 811, 820)], "8.3.5",
           corrections=[{"seed": "000", "line": 815, "says": "Pérez et al. 2019, NeurIPS",
                         "correct": "Pérez, Marinković and Barceló, ICLR 2019",
                         "source": "arXiv:1901.03429"}]),
    _entry("loose.unplaced", "verified", [], None),
]


@pytest.fixture
def chapter_document() -> dict[str, Any]:
    """A results document whose claims span 8.3.1, 8.3.3, 8.3.5, 004 and 003."""
    claims = copy.deepcopy(CHAPTER_CLAIMS)
    return {"schema": "transformer-math/results/1", "claims": claims,
            "summary": {"seed": 0, "tier": "quick", "size": "tiny"}}
