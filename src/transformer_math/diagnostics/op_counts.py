"""Counted work of a call: multiply-adds of matrix products plus elements touched by other ops.

A clock measures work *and* whatever else the machine is doing; a count measures only the work.
:func:`count_work` runs a call under a :class:`torch.utils._python_dispatch.TorchDispatchMode`
that sees every ATen operator the call dispatches (after autograd and the composite
decompositions, so ``torch.matmul`` and ``torch.einsum`` arrive as ``aten.mm`` / ``aten.bmm``)
and counts, per operator:

- matrix-product family (every operator of ``torch.utils.flop_counter.flop_registry``: ``mm``,
  ``addmm``, ``bmm``, ``baddbmm``, convolutions, the fused attention kernels): multiply-adds,
  i.e. the registry's FLOPs (2 M K N for an (M x K)(K x N) product) divided by 2;
- views and aliases (``transpose``, ``expand``, ``view``, ``_unsafe_view``, ...; operators whose
  schema marks the result as an alias of an input) and allocations that write nothing
  (``empty``, ``empty_strided``, ``empty_like``): nothing;
- every other operator (elementwise maps, reductions, copies, ``cat``, ``where``...): the number
  of elements it reads or writes, the largest ``numel`` among its tensor arguments and results
  (an elementwise op writes each output element once; a reduction reads each input once).

The count is a deterministic function of the code path and the shapes: the same call on inputs
of the same shapes gives the same integers, whatever runs beside it. Only operators without a
formula in the registry *and* with work beyond their inputs' and outputs' sizes are
under-counted; on the CPU that is the fused ``_scaled_dot_product_flash_attention_for_cpu``
kernel (its two n x n products are missing). Such operators are listed in
:attr:`WorkCount.unpriced` so that a caller can refuse them.

For a fixed algorithm the count is a polynomial in a size n (each operator touches a number of
elements that is a product of dimensions). :func:`work_polynomial` recovers that polynomial
exactly (rational arithmetic) from counts at a few sizes and checks it on the sizes it did not
use; its degree is the exponent of the cost, independent of the grid. The log-log slope of a
polynomial with nonnegative coefficients c_k at n is the work-weighted mean of the degrees,
sum_k k c_k n^k / sum_k c_k n^k, so it approaches the degree as the leading term takes over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

#: Operators that allocate without writing, or only reinterpret memory (not marked as views in
#: their schema): they cost no arithmetic.
FREE_OPERATORS = frozenset({
    "aten.empty", "aten.empty_strided", "aten.empty_like", "aten._unsafe_view",
    "aten.lift_fresh", "aten.detach", "aten.alias", "aten.clone_if_needed",
})

#: Fused operators whose arithmetic exceeds their inputs' and outputs' sizes but which the
#: FLOP registry does not price (see the module docstring).
UNPRICED_FUSED = frozenset({"aten._scaled_dot_product_flash_attention_for_cpu"})


@dataclass(frozen=True)
class WorkCount:
    """Work of one call: ``multiply_adds`` + ``elements`` = ``total``, split per operator."""

    multiply_adds: int
    elements: int
    by_operator: dict[str, int] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.multiply_adds + self.elements


def _is_view(func: Any) -> bool:
    schema = func._schema
    return any(r.alias_info is not None for r in schema.returns)


def _largest_numel(*trees: Any) -> int:
    sizes = [t.numel() for tree in trees for t in tree_leaves(tree) if isinstance(t, torch.Tensor)]
    return max(sizes, default=0)


class _WorkCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.multiply_adds = 0
        self.elements = 0
        self.by_operator: dict[str, int] = {}
        self.unpriced: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        name = str(packet)
        if packet in flop_registry:
            work = int(flop_registry[packet](*args, **kwargs, out_val=out)) // 2
            self.multiply_adds += work
        elif name in FREE_OPERATORS or _is_view(func):
            return out
        else:
            work = _largest_numel(args, kwargs, out)
            self.elements += work
            if name in UNPRICED_FUSED:
                self.unpriced.add(name)
        self.by_operator[name] = self.by_operator.get(name, 0) + work
        return out


def count_work(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> WorkCount:
    """Run ``fn(*args, **kwargs)`` and count its work (see the module docstring).

    Example: ``count_work(torch.mm, a, b).multiply_adds == M * K * N`` for a (M, K) and b (K, N);
    ``count_work(torch.exp, x).elements == x.numel()``.
    """
    counter = _WorkCounter()
    with counter:
        fn(*args, **kwargs)
    return WorkCount(
        multiply_adds=counter.multiply_adds,
        elements=counter.elements,
        by_operator=dict(sorted(counter.by_operator.items())),
        unpriced=tuple(sorted(counter.unpriced)),
    )


@dataclass(frozen=True)
class WorkPolynomial:
    """count(n) = sum_k coefficients[k] n^k, exact; ``held_out_error``: the largest absolute
    difference |count(n) - polynomial(n)| on the sizes not used to fit it (0 when the counts are
    that polynomial; counts are integers, so any nonzero difference of integer-valued
    polynomials is at least 1)."""

    coefficients: tuple[Fraction, ...]
    held_out_error: float

    @property
    def degree(self) -> int:
        """The largest k with a nonzero coefficient (0 for the zero polynomial)."""
        nonzero = [k for k, c in enumerate(self.coefficients) if c != 0]
        return max(nonzero, default=0)

    def __call__(self, n: int) -> Fraction:
        return sum((c * Fraction(n) ** k for k, c in enumerate(self.coefficients)), Fraction(0))

    def leading_share(self, n: int) -> float:
        """Share of the leading term in count(n)."""
        total = self(n)
        lead = self.coefficients[self.degree] * Fraction(n) ** self.degree
        return float(lead / total) if total != 0 else 1.0


def _solve_exact(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
    """Gauss-Jordan elimination in rational arithmetic (a small nonsingular system)."""
    m = len(rhs)
    rows = [[*row, b] for row, b in zip(matrix, rhs, strict=True)]
    for col in range(m):
        pivot = next(r for r in range(col, m) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        inv = 1 / rows[col][col]
        rows[col] = [v * inv for v in rows[col]]
        for r in range(m):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[col], strict=True)]
    return [rows[r][m] for r in range(m)]


def work_polynomial(
    sizes: Sequence[int], counts: Sequence[int], *, max_degree: int = 3
) -> WorkPolynomial:
    """The polynomial of degree <= ``max_degree`` through the first ``max_degree + 1`` points
    (exact), checked on the remaining ones (at least one must remain)."""
    if len(sizes) != len(counts):
        raise ValueError(f"sizes and counts differ in length: {len(sizes)} and {len(counts)}")
    if len(set(sizes)) != len(sizes) or any(n <= 0 for n in sizes):
        raise ValueError(f"sizes must be distinct and positive, got {list(sizes)}")
    if max_degree < 0 or len(sizes) < max_degree + 2:
        raise ValueError(
            f"need max_degree + 2 = {max_degree + 2} sizes to fit and check, got {len(sizes)}"
        )
    fit = range(max_degree + 1)
    matrix = [[Fraction(sizes[i]) ** k for k in range(max_degree + 1)] for i in fit]
    coeffs = _solve_exact(matrix, [Fraction(counts[i]) for i in fit])
    poly = WorkPolynomial(tuple(coeffs), 0.0)
    errors = [
        float(abs(poly(n) - c))
        for n, c in zip(sizes[max_degree + 1 :], counts[max_degree + 1 :], strict=True)
    ]
    return WorkPolynomial(tuple(coeffs), max(errors))
