"""Counted work (``diagnostics.count_work``), exact work polynomials, and two-clock timings."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from transformer_math.diagnostics import (
    WorkPolynomial,
    count_work,
    times_over_sizes,
    torch_threads,
    work_polynomial,
)
from transformer_math.functional import scaled_dot_product_attention


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def test_matrix_products_count_multiply_adds():
    a, b = _randn(3, 4), _randn(4, 5)
    work = count_work(torch.mm, a, b)
    assert (work.multiply_adds, work.elements) == (3 * 4 * 5, 0)
    x, y = _randn(2, 3, 4), _randn(2, 4, 6)
    assert count_work(torch.bmm, x, y).multiply_adds == 2 * 3 * 4 * 6
    # torch.matmul on batched operands arrives as aten.bmm (after the composite decomposition)
    assert count_work(torch.matmul, x, y).by_operator == {"aten.bmm": 2 * 3 * 4 * 6}


def test_elementwise_reductions_and_views():
    x = _randn(7, 9)
    assert count_work(torch.exp, x).elements == 63  # writes 63 elements
    assert count_work(lambda: x.sum(dim=-1)).elements == 63  # reads 63, writes 7
    view = count_work(lambda: x.t().reshape(9, 7).unsqueeze(0).expand(3, 9, 7))
    assert view.total == 0 and view.by_operator == {}  # views and aliases cost nothing
    assert count_work(lambda: x.t().contiguous()).elements == 63  # a copy is work
    assert count_work(lambda: torch.exp(x)).total == count_work(torch.exp, x).total


def test_counts_of_attention_are_exact_polynomials_in_n():
    """Reference attention does n^2 work and linear attention n work, exactly."""
    import transformer_math.functional.linear_attention  # noqa: F401  (registers "linear")

    d, sizes = 8, [8, 16, 32, 64, 128]
    totals: dict[str, list[int]] = {"reference": [], "linear": []}
    for n in sizes:
        q, k, v = _randn(1, 1, n, d), _randn(1, 1, n, d), _randn(1, 1, n, d)
        for backend in totals:
            work = count_work(scaled_dot_product_attention, q, k, v, backend=backend)
            totals[backend].append(work.total)
    full, linear = (work_polynomial(sizes, totals[b]) for b in ("reference", "linear"))
    assert (full.degree, linear.degree) == (2, 1)
    assert full.held_out_error == 0.0 and linear.held_out_error == 0.0
    # Q K^T and A V: n^2 d multiply-adds each, plus elementwise work on the n x n logits.
    assert full.coefficients[2] > 2 * d
    # the count does not depend on the values, nor on the thread count
    q, k, v = _randn(1, 1, 32, d) * 5, _randn(1, 1, 32, d), _randn(1, 1, 32, d)
    with torch_threads(1):
        again = count_work(lambda: scaled_dot_product_attention(q, k, v)).total
    assert again == totals["reference"][2]


def test_fused_cpu_attention_is_flagged_as_unpriced():
    q = k = v = _randn(1, 1, 16, 8)
    work = count_work(lambda: scaled_dot_product_attention(q, k, v, backend="sdpa"))
    # Either the fused kernel is priced (its two n^2 d products) or it is flagged; on the CPU
    # (torch 2.x) it is ``_scaled_dot_product_flash_attention_for_cpu``, which is flagged.
    assert work.multiply_adds >= 2 * 16 * 16 * 8 or work.unpriced
    assert not work.unpriced or work.multiply_adds == 0


def test_work_polynomial_is_exact_and_detects_what_it_cannot_fit():
    sizes = [1, 2, 3, 4, 5, 6]
    poly = work_polynomial(sizes, [3 * n * n + 2 * n + 7 for n in sizes])
    assert poly.coefficients == (Fraction(7), Fraction(2), Fraction(3), Fraction(0))
    assert poly.degree == 2 and poly.held_out_error == 0.0
    assert poly.leading_share(10) == pytest.approx(300 / 327)
    quartic = work_polynomial(sizes, [n**4 for n in sizes])  # degree 4 > max_degree 3
    assert quartic.held_out_error >= 1.0
    assert WorkPolynomial((Fraction(0),), 0.0).degree == 0
    with pytest.raises(ValueError, match="sizes"):
        work_polynomial([1, 2, 3, 4], [1, 2, 3, 4])  # nothing left to check
    with pytest.raises(ValueError, match="distinct"):
        work_polynomial([1, 1, 2, 3, 4], [1, 1, 2, 3, 4])


def test_times_over_sizes_reads_both_clocks_around_the_same_calls():
    calls: list[int] = []
    out = times_over_sizes(lambda n: (lambda: calls.append(n)), [3, 5], repeats=2, warmup=1)
    assert set(out) == {"thread", "wall"}
    assert all(len(v) == 2 and min(v) >= 0.0 for v in out.values())
    assert calls == [3, 5, 3, 5, 3, 5]  # warm-up, then interleaved rounds
    with pytest.raises(ValueError, match="clock"):
        times_over_sizes(lambda n: (lambda: None), [1, 2], clocks=("sundial",))
    with pytest.raises(ValueError, match="statistic"):
        times_over_sizes(lambda n: (lambda: None), [1, 2], statistic="mean")
