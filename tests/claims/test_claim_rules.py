"""Issue 31's rules, checked on the declarations (no claim is run):

- every claim declares its ``kind`` (measurement, construction, code-audit, model, cited);
- every refutation quotes the seed verbatim: ``quote`` is a substring of lines ``line`` to
  ``to_line`` of the seed file (whitespace aside), where the checkout has ``shared/seeds``;
- one distinct error is one record: no seed line is refuted by two records;
- a ``measurement`` claim's falsifier is a bug planted in code a user runs: the module holding
  the bug's site is neither a prediction (``theory/``) nor a claim module, and at least one
  module outside ``claims/`` imports it (read from the import graph, imports inside functions
  included);
- every claim has an adversarial review, ``docs/reviews/<claim-id>.md``, for its current
  ``version``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from transformer_math import bugs
from transformer_math.claims.registry import Kind, Verdict, all_claims

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = "transformer_math"
REVIEWS = ROOT / "docs" / "reviews"
SEEDS_DIR = ROOT.parent / "shared" / "seeds"
CLAIMS = all_claims()

#: the packages where a measurement's bug may live: library code a user runs
USER_CODE = ("functional", "nn", "checkpoints", "robotics", "data", "experiments", "commands",
             "diagnostics", "doctor", "execution", "bench")
PREDICTION_SIDE = ("theory", "claims")


def _seed_text() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(SEEDS_DIR.glob("*.txt")) if SEEDS_DIR.is_dir() else []:
        out[path.name[:3]] = path.read_text(encoding="utf-8").splitlines()
    return out


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_kind_is_declared(claim) -> None:
    assert isinstance(claim.kind, Kind), "declare kind= (measurement, construction, code-audit, " \
                                         "model, cited)"
    assert (claim.kind is Kind.CITED) == (claim.expected is Verdict.CITED)


REFUTATIONS = [(c, r) for c in CLAIMS for r in c.refutes]


@pytest.mark.parametrize("pair", REFUTATIONS, ids=lambda p: f"{p[0].id}@{p[1].seed}:{p[1].line}")
def test_refutation_quotes_the_seed_verbatim(pair) -> None:
    _claim, r = pair
    assert r.quote.strip(), "quote the seed's words (quote=...)"
    assert r.says.strip() and r.correct.strip()
    text = _seed_text()
    if r.seed not in text:
        pytest.skip("the seed files (../shared/seeds) are not beside this checkout")
    lines = text[r.seed]
    assert r.to_line <= len(lines), (r.line, r.to_line, len(lines))
    for seed, line in r.also:
        assert seed in text and line <= len(text[seed]), (seed, line)
    window = _squash("".join(lines[r.line - 1:r.to_line]))
    assert _squash(r.quote) in window, (
        f"{r.seed}:{r.line}-{r.to_line} does not contain the quote {r.quote!r}; the lines read "
        f"{''.join(lines[r.line - 1:r.to_line])[:300]!r}")


def test_one_record_per_distinct_error() -> None:
    seen: dict[tuple[str, int], str] = {}
    clashes = []
    for c, r in REFUTATIONS:
        for place in r.lines:
            if place in seen:
                clashes.append(f"{place[0]}:{place[1]} in {seen[place]} and {c.id}")
            seen[place] = c.id
    assert not clashes, "one seed error, one record (merge with also=...): " + "; ".join(clashes)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _importers() -> dict[str, set[str]]:
    """module -> the project modules that import it anywhere (inside functions too)."""
    files = sorted((SRC / PACKAGE).rglob("*.py"))
    modules = {_module_name(f) for f in files}
    importers: dict[str, set[str]] = {m: set() for m in modules}
    for f in files:
        me = _module_name(f)
        package = me if f.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != me:
                    importers[name].add(me)
    return importers


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


MEASUREMENTS = [c for c in CLAIMS if c.kind is Kind.MEASUREMENT]


@pytest.mark.parametrize("claim", MEASUREMENTS, ids=lambda c: c.id)
def test_measurement_falsifier_sits_in_code_a_user_runs(claim) -> None:
    assert claim.falsifier is not None, "a measurement has a planted-bug falsifier"
    bug = bugs.load_all()[claim.falsifier.bug]
    module = bug.module
    assert _area(module) not in PREDICTION_SIDE, (
        f"{bug.name} lives in {module}: the prediction side (theory/) or a claim module; plant "
        "the bug in the code being measured, or declare the claim's kind honestly")
    assert _area(module) in USER_CODE, f"{bug.name} lives in {module}, outside {USER_CODE}"
    users = {m for m in _importers().get(module, set()) if _area(m) != "claims"}
    assert users, (f"{bug.name} lives in {module}, which only claims import: a reference or "
                   "helper used for comparison, not code a user runs")


def _review_version(path: Path) -> int | None:
    m = re.search(r"^version:\s*(\d+)\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return int(m.group(1)) if m else None


REVIEW_SECTIONS = ("seed says", "could pass if false", "independent prediction", "falsifier",
                   "conclusion")


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_claim_has_a_fresh_review(claim) -> None:
    path = REVIEWS / f"{claim.id}.md"
    assert path.is_file(), f"no review {path.relative_to(ROOT)}"
    version = _review_version(path)
    assert version is not None, f"{path.name}: no 'version: N' line"
    assert version >= claim.version, (f"{path.name} reviews version {version}; the claim is at "
                                      f"version {claim.version}: review it again")
    text = path.read_text(encoding="utf-8").lower()
    missing = [s for s in REVIEW_SECTIONS if f"## {s}" not in text]
    assert not missing, f"{path.name}: sections missing {missing}"


def test_every_review_names_a_registered_claim() -> None:
    ids = {c.id for c in CLAIMS}
    stale = sorted(p.stem for p in REVIEWS.glob("*.md") if p.stem not in ids
                   and p.name != "README.md")
    assert not stale, f"reviews of claims that are not registered: {stale}"


def test_bugs_killed_by_a_test_name_a_test_that_plants_them() -> None:
    """A bug excused from the claims' zoo (``Bug.test``) names a test function that exists and
    plants that bug by name."""
    for bug in bugs.load_all().values():
        if not bug.test:
            continue
        path, _, name = bug.test.partition("::")
        file = ROOT / path
        assert file.is_file(), f"{bug.name}: no test file {path}"
        text = file.read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", text, re.MULTILINE), (bug.name, bug.test)
        assert bug.name in text, f"{bug.test} does not name the bug {bug.name!r}"
