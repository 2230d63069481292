"""The results document: build it from a run, write it as strict JSON, read it back.

JSON has no NaN or infinity, yet a measurement may be one (a falsifier that overflows is the
point of ``attention.stable-softmax``). :func:`to_jsonable` therefore writes non-finite floats as
the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` and the file is written with
``allow_nan=False``, so any JSON reader can open it. Tensors, arrays and numpy scalars become
lists and numbers; enums their values; anything else unknown its ``str``. The writer is the
project's one strict JSON writer, :mod:`transformer_math.typed_json`, re-exported here.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import platform
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_math import typed_json
from transformer_math.report.results_schema import SchemaError, check_claim_entry
from transformer_math.typed_json import dumps, to_jsonable, write_json  # noqa: F401

if TYPE_CHECKING:
    from transformer_math.claims.registry import Claim, ClaimResult

SCHEMA = "transformer-math/results/1"

#: Keys every claim entry of a results document carries (``ClaimResult.to_json``).
CLAIM_KEYS: tuple[str, ...] = (
    "id",
    "topic",
    "source",
    "statement",
    "tier",
    "verdict",
    "predicted",
    "measured",
    "tolerance",
    "falsifier",
    "seconds",
)

VERDICTS: tuple[str, ...] = ("verified", "refuted", "failed", "cited", "inconclusive")


def environment() -> dict[str, Any]:
    """Versions and time of this run: package, torch, numpy, python, platform, UTC timestamp."""
    import numpy
    import torch

    from transformer_math import __version__

    return {
        "version": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "torch_threads": torch.get_num_threads(),
        "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def build_results(
    results: Iterable[ClaimResult],
    *,
    seed: int,
    tier: str,
    size: str,
    pattern: str | None = None,
    seeds: int | None = None,
    run: Mapping[str, Any] | None = None,
    left_out: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The results document of one ``tmath verify`` run (see the package docstring).

    ``run`` is how it executed (``execution.executors.RunInfo``): the document then names its
    ``executor`` (``"inline"`` or ``"ray"``) at the top and holds ``run`` beside the summary.
    ``left_out`` (:func:`report.left_out.left_out`) is kept as ``summary["left_out"]``.
    """
    from transformer_math.claims.registry import summarize

    results = list(results)
    summary: dict[str, Any] = dict(summarize(results))
    summary.update(seed=seed, tier=tier, size=size, pattern=pattern, seeds=seeds)
    summary.update(environment())
    if left_out is not None:
        summary["left_out"] = dict(left_out)
    document: dict[str, Any] = {"schema": SCHEMA}
    if run is not None:
        document["executor"] = run["executor"]
    document["claims"] = [to_jsonable(r.to_json()) for r in results]
    document["summary"] = to_jsonable(summary)
    if run is not None:
        document["run"] = to_jsonable(run)
    return document


def claim_to_json(c: Claim) -> dict[str, Any]:
    """What ``tmath list --json`` shows of a registered claim (nothing is run): id, topic, tier,
    source, statement, expected verdict, version, seed lines, refuted statements, falsifier."""
    from transformer_math.claims.registry import claim_json

    falsifier = None
    if c.falsifier is not None:
        falsifier = {"name": c.falsifier.name, "bug": c.falsifier.bug,
                     "description": c.falsifier.describe()}
    return {**claim_json(c), "falsifier": falsifier}


def summary_from_claims(claims: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts like ``summarize`` computed from claim entries (for documents without a summary),
    by the same definitions (:mod:`transformer_math.claims.counts`)."""
    from transformer_math.claims import counts

    claims = list(claims)
    problems = sum(
        1
        for c in claims
        if c.get("verdict") == "failed"
        or (c.get("expected_met") is False
            and "inconclusive" not in (c.get("verdict"), c.get("expected")))
        or (isinstance(c.get("falsifier"), Mapping) and c["falsifier"].get("caught") is False)
    )
    seconds = sum(float(c.get("seconds") or 0.0) for c in claims)
    return {
        "total": len(claims),
        **{v: n for v, n in counts.by_verdict(claims).items() if v in VERDICTS},
        "by_kind": counts.by_kind(claims),
        "distinct_errors": counts.distinct_errors(claims),
        **counts.falsifier_counts(claims),
        "problems": problems,
        "seconds": round(seconds, 3),
    }


MAX_RESULTS_BYTES = 64 * 2**20
"""Largest results file :func:`read_results` reads (64 MiB)."""
MAX_RESULTS_DEPTH = 64
"""Deepest nesting of arrays and objects :func:`read_results` accepts (a document written by
``tmath verify --json`` is about 10 deep)."""


def read_results(path: Path) -> dict[str, Any]:
    """Read and check a results document; ``ValueError`` names what is wrong with it.

    Refused before parsing: a missing or non-regular file, one over :data:`MAX_RESULTS_BYTES`,
    and text nested deeper than :data:`MAX_RESULTS_DEPTH` (so the JSON parser and the renderer,
    which recurse, never meet a ``RecursionError``).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"results file {str(path)!r} does not exist")
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise ValueError(f"results file {str(path)!r} has {size} bytes, more than the maximum "
                         f"{MAX_RESULTS_BYTES}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"results file {str(path)!r} is not valid JSON: {exc}") from exc
    depth = json_nesting_depth(text)
    if depth > MAX_RESULTS_DEPTH:
        raise ValueError(f"results file {str(path)!r} is nested {depth} levels deep, more than "
                         f"the maximum {MAX_RESULTS_DEPTH}")
    # the one strict reader; NaN tokens that json writes by default are left to the schema
    document = typed_json.loads(text, f"results file {str(path)!r}", non_finite_tokens=True)
    validate_results(document, origin=str(path))
    return document


_NOT_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[^\[\]{}"]+')


def json_nesting_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text``, brackets inside strings ignored
    (a linear scan without recursion; the text need not be valid JSON)."""
    skeleton = _NOT_BRACKETS.sub("", text)
    steps = map({"[": 1, "{": 1, "]": -1, "}": -1, '"': 0}.__getitem__, skeleton)
    return max(itertools.accumulate(steps, initial=0))


def validate_results(document: Any, *, origin: str = "results") -> None:
    """Raise ``ValueError`` unless ``document`` has a ``claims`` list of entries with an id."""
    if not isinstance(document, dict) or not isinstance(document.get("claims"), list):
        raise ValueError(
            f"{origin} must be a JSON object with a 'claims' list (tmath verify --json)"
        )
    for i, entry in enumerate(document["claims"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError(f"{origin}: claims[{i}] must be an object with a string 'id'")
        try:
            check_claim_entry(entry, f"claims[{i}]")
        except SchemaError as exc:
            raise ValueError(f"{origin}: {exc}") from None
    summary = document.get("summary")
    if summary is not None and not isinstance(summary, dict):
        raise ValueError(f"{origin}: 'summary' must be an object, got {type(summary).__name__}")
