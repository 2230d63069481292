"""attention.quadratic-cost (full tier): the verdict rests on counted work, not on time."""

from __future__ import annotations

import pytest

from transformer_math.claims.attention.quadratic_cost import _poly_text
from transformer_math.claims.registry import Context, Size, Verdict, get_claim
from transformer_math.diagnostics import work_polynomial

TINY = Context(seed=0, size=Size.TINY, seeds=1)


def test_poly_text_writes_the_highest_degree_first():
    poly = work_polynomial([1, 2, 3, 4, 5], [74 * n * n + 6 * n for n in (1, 2, 3, 4, 5)])
    assert _poly_text(poly) == "74 n^2 + 6 n"


@pytest.mark.slow
def test_quadratic_cost_rests_on_counted_work_and_catches_the_ignored_backend(attention_result):
    """Counted work: full attention is an exact degree-2 polynomial in n, linear attention an
    exact degree-1 one; with the requested backend ignored (attention.backend-ignored) the
    "linear" arm is softmax attention: degree-2 work and other outputs. Times are reported,
    not judged (and not measured once a count fails)."""
    res = attention_result("attention.quadratic-cost")
    assert res.error is None, res.error
    assert res.evidence.verdict is Verdict.VERIFIED
    details = res.evidence.details
    assert details["degrees"] == {"full": 2, "linear": 1}
    # 70 n^2 + 138 n + 3 from n = 32 (tiny): the slope is the work-weighted mean degree
    assert details["work_polynomial"]["full"] == ["3", "138", "70", "0"]
    assert details["count_exponents"]["full"] == pytest.approx(2.0, abs=0.03)
    assert details["work_polynomial"]["linear"] == ["3", "2407", "0", "0"]  # 3: NaN contract
    assert details["count_exponents"]["linear"] == pytest.approx(1.0, abs=1e-4)
    assert details["output_error"] < 1e-10
    assert set(details["timing"]["exponents"]) == {
        "full (thread)", "full (wall)", "linear (thread)", "linear (wall)"}
    assert all(m.holds for m in res.evidence.margins)
    assert not any("exponent" in m.name and "time" in m.name for m in res.evidence.margins)
    wrong = res.falsifier_evidence
    assert res.falsifier_caught is True and wrong is not None
    assert wrong.details["degrees"] == {"full": 2, "linear": 2}
    assert wrong.details["count_exponents"]["linear"] > 1.9
    assert wrong.details["output_error"] > 1e-3  # softmax attention, not the linear kernel
    assert wrong.details["timing"] is None
    failing = {m.name for m in wrong.margins if not m.holds}
    assert failing == {
        "linear attention: degree of the counted-work polynomial (worst of 1 seeds)",
        "linear attention: log-log exponent of counted work (worst of 1 seeds)",
        "max |output - definition| of the counted calls (float64) (worst of 1 seeds)"}
    per_seed = res.evidence.per_seed
    assert per_seed is not None and per_seed["seeds"] == [0]
    # The verdict does not depend on time: the counts repeat exactly, the times need not.
    again = get_claim("attention.quadratic-cost").check(TINY)
    assert again.details["counted_work"] == details["counted_work"]
    assert again.margins == res.evidence.margins


def test_counted_work_is_the_same_for_every_seed():
    """The count ignores the drawn values: over_seeds reports zero spread (issue 14)."""
    from transformer_math.claims.attention.quadratic_cost import _count_run

    runs = [_count_run(Context(seed=s, size=Size.TINY), [16, 32, 64, 128, 256])[0]
            for s in (0, 1)]
    for key in ("full degree", "linear degree", "full exponent", "linear exponent"):
        assert runs[0][key] == runs[1][key]
    assert runs[0]["full degree"] == 2.0 and runs[0]["linear degree"] == 1.0
