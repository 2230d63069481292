"""Deep Sets can model pairwise relations (000 §8.3.2 theory B).

Sources: the main seed 000 §8.3.2 theory B (000:496-520: the Deep Sets theorem, the Set
Transformer paragraph and the comparison table); Zaheer et al. 2017 (Deep Sets, Theorem 2);
Wagstaff, Fuchs, Engelcke, Posner & Osborne 2019, "On the Limitations of Representing Functions
on Sets", ICML (a continuous sum-decomposition of functions of n real numbers needs a latent
width >= n, and width n suffices); Lee et al. 2019 (Set Transformer).

``kernel.set-function-audit``, measured through the project's ``nn.sets``:
- a pairwise function written as rho(sum_j phi(x_j)) and run by ``DeepSets`` (sum pooling):
  the smallest gap between n real numbers ("are two points close?", the seed's own example) with
  phi(x) = (x, x^2, ..., x^n) (power sums, latent width n) and rho = Newton's identities ->
  the polynomial prod_i (t - x_i) -> its roots -> the smallest gap; and
  sum_{i<j} x_i.x_j = (|sum x|^2 - sum |x|^2) / 2 with phi(x) = (x, |x|^2) (width d + 1).

Issue 31: the record of 000:515 ("Set Transformer O(n^2)") was dropped: the seed describes the
SAB-based model (000:502), whose cost is O(n^2); refuting it with ISAB's O(n m) was a strawman.
The ISAB cost measurement went with it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.nn.init import seeded
from transformer_math.nn.sets import DeepSets

F64 = torch.float64


class PowerSums(nn.Module):
    """phi(x) = (x, x^2, ..., x^n) for scalar elements: (B, n, 1) -> (B, n, n)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([x ** (k + 1) for k in range(self.n)], dim=-1)


class SmallestGapFromPowerSums(nn.Module):
    """rho: power sums (p_1..p_n) of n numbers -> the smallest gap between them.

    Newton's identities k e_k = sum_{i=1}^k (-1)^(i-1) e_(k-i) p_i give the elementary symmetric
    polynomials, i.e. the coefficients of prod_i (t - x_i) = sum_k (-1)^k e_k t^(n-k); its roots
    (eigenvalues of the companion matrix) are the numbers again, sorted; rho returns the smallest
    difference of neighbours. (B, n) -> (B, 1).
    """

    def forward(self, p: Tensor) -> Tensor:
        b, n = p.shape
        e = [torch.ones(b, dtype=p.dtype)]
        for k in range(1, n + 1):
            e.append(sum((-1) ** (i - 1) * e[k - i] * p[:, i - 1] for i in range(1, k + 1)) / k)
        coeffs = torch.stack([(-1) ** k * e[k] for k in range(1, n + 1)], dim=-1)  # t^(n-k)
        companion = torch.zeros(b, n, n, dtype=p.dtype)
        companion[:, 0, :] = -coeffs
        companion[:, 1:, :-1] = torch.eye(n - 1, dtype=p.dtype)
        roots = torch.linalg.eigvals(companion).real.sort(dim=-1).values
        return (roots[:, 1:] - roots[:, :-1]).amin(dim=-1, keepdim=True)


class PairSum(nn.Module):
    """rho(a, b) = (|a|^2 - b) / 2 for a = sum_j x_j, b = sum_j |x_j|^2: sum_{i<j} x_i.x_j."""

    def forward(self, h: Tensor) -> Tensor:
        a, b = h[..., :-1], h[..., -1:]
        return 0.5 * (a.pow(2).sum(-1, keepdim=True) - b)


class SquaredNormFeatures(nn.Module):
    """phi(x) = (x, |x|^2): (B, n, d) -> (B, n, d + 1)."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([x, x.pow(2).sum(-1, keepdim=True)], dim=-1)


def _deep_sets(gen: torch.Generator, in_dim: int, phi: nn.Module, rho: nn.Module) -> DeepSets:
    """A ``DeepSets`` (sum pooling) whose encoder and decoder are replaced by ``phi``, ``rho``:
    the forward is the library's, rho(set_pool(phi(x), "sum"))."""
    model = seeded(lambda: DeepSets(in_dim, 4, 1, pooling="sum"), gen)
    model.phi, model.rho = phi, rho
    return model.to(F64).eval()


def _pairwise_errors(ctx: Context) -> dict[str, float]:
    gen = ctx.generator(498)
    n, batch, d, n_vec = 5, 64, 3, 16
    x = torch.rand(batch, n, 1, generator=gen, dtype=F64)
    gap_model = _deep_sets(gen, 1, PowerSums(n), SmallestGapFromPowerSums())
    brute = (x - x.transpose(1, 2)).abs()  # (B, n, n) all pairwise distances
    brute = brute + torch.eye(n, dtype=F64) * 10.0
    true_gap = brute.flatten(1).amin(-1)
    y = torch.randn(batch, n_vec, d, generator=gen, dtype=F64)
    pair_model = _deep_sets(gen, d, SquaredNormFeatures(), PairSum())
    gram = y @ y.transpose(1, 2)
    true_pairs = (gram.sum((1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(-1)) / 2
    with torch.no_grad():
        gap = gap_model(x)[:, 0]
        pairs = pair_model(y)[:, 0]
    return {
        "smallest_gap_max_error": float((gap - true_gap).abs().max()),
        "smallest_gap_min_true": float(true_gap.min()),
        "pair_sum_max_relative_error": float(((pairs - true_pairs).abs()
                                              / true_pairs.abs().clamp(min=1.0)).max()),
        "latent_width_gap": n, "latent_width_pairs": d + 1,
    }


@claim(
    "kernel.set-function-audit",
    source="000 §8.3.2 theory B; Zaheer et al. 2017; Wagstaff et al. 2019 (ICML); Lee et al. "
    "2019 §3.2",
    statement="""Sum-decomposed Deep Sets rho(sum_j phi(x_j)) represent pairwise relations
    exactly: the smallest gap between n numbers with a latent width n (power sums) and
    sum_{i<j} x_i.x_j with width d + 1; what they lack is efficiency (latent width >= n for
    continuous functions, Wagstaff et al. 2019), not the ability.""",
    falsifier="sets.sum-pool-as-mean",
    expected="refuted",
    version=2,
    kind="construction",
    audit="""Issue 31 review: problem (c). 000:502/512/514 are fairly contradicted (V in the
    review) but by a construction (explicit phi, rho run through the library's DeepSets
    forward), not a trained model: the kind is now construction. The three lines are one
    error (Deep Sets cannot model pairwise relations / are weak because elements are encoded
    independently), so they are one record: 000:502 with also 512 and 514 (512 was a
    duplicate, 514 the same point in the table's expressivity row). The record of 000:515
    (Set Transformer O(n^2)) is dropped: the seed's Set Transformer is the SAB-based model of
    000:502, which does cost O(n^2); ISAB's O(n m) was a strawman. The ISAB cost margins and
    their part of the statement went with it. The construction is 1-D for the smallest gap
    (power sums of n reals), d-dimensional for the pair sum; Wagstaff et al. 2019 give the
    general width-n result.""",
    seed_refs=[("000", 496, 502), ("000", 508, 518)],
    refutes=[
        Refutation(
            "000", 502,
            quote='Deep Sets 的求和池化把所有元素**独立**编码后才聚合，无法建模元素之间的高阶相互'
            '作用（比如"这堆点里有没有两个点离得特别近"）',
            also=(512, 514),
            says="Deep Sets' sum pooling encodes every element independently before pooling, so "
            "it cannot model interactions between elements such as 'are two of the points "
            "particularly close?' (table, 512: 高阶交互 无法建模; 514: 表达力 弱)",
            reading="no rho(sum_j phi(x_j)) computes the smallest gap between the points: a "
            "sum-decomposed model run through the library's DeepSets misses it by >= 1e-3",
            correct="rho(sum_j phi(x_j)) computes the smallest gap exactly (phi = power sums, "
            "latent width n; measured to rounding); the Deep Sets theorem the seed states four "
            "lines above covers every continuous invariant function, pairwise ones included; "
            "the limitation is efficiency (latent width >= n, Wagstaff et al. 2019)"),
    ],
    corrections=[Correction(
        "000", 496, "Deep Sets 表示定理（Zaheer et al. 2017）：任意置换不变的连续函数都可以写成 "
        "rho(sum_j phi(x_j))",
        "Zaheer et al. prove the sum-decomposition for sets from a countable domain (their "
        "Theorem 2); for continuous functions of sets of up to n real numbers a continuous "
        "decomposition needs a latent width of at least n (Wagstaff et al. 2019), which the "
        "seed does not say",
        "Zaheer et al. 2017, 'Deep Sets', NeurIPS, Theorem 2 (countable X); Wagstaff, Fuchs, "
        "Engelcke, Posner & Osborne 2019, 'On the Limitations of Representing Functions on "
        "Sets', ICML (abstract: latent dimension at least the maximum set size)")],
    statement_zh="""求和分解的 Deep Sets rho(sum_j phi(x_j)) 能精确表示成对关系：n 个数之间的最小
    间距（幂和特征，潜在宽度 n），以及 sum_{i<j} x_i.x_j（宽度 d + 1）；它缺的是效率（对连续函数
    潜在宽度需 >= n，Wagstaff 等 2019），而不是能力。""",
)
def check_set_function_audit(ctx: Context) -> Evidence:
    """Deep Sets through ``DeepSets.forward`` (sum pooling of ``nn.sets.set_pool``) with the
    explicit phi, rho of the module docstring on 64 sets of 5 uniform numbers and 64 sets of 16
    vectors in R^3 (float64).

    Margins: smallest-gap error <= 1e-6 (eigenvalues of a 5 x 5 companion matrix; a double root
    would cost sqrt(eps), the sets' smallest gap is reported); pair-sum relative error <= 1e-12.
    Seed margin: 000:502 (also 512, 514: Deep Sets cannot model "two points close"):
    smallest-gap error >= 1e-3.

    Version 2 (issue 31): the 000:515 record and the SAB / ISAB cost margins are dropped; the
    three Deep Sets lines are one record.
    """
    errors = _pairwise_errors(ctx)
    margins = [
        at_most("Deep Sets (power sums, width n): max |smallest gap - brute force|",
                errors["smallest_gap_max_error"], 1e-6),
        at_most("Deep Sets (width d + 1): max relative error of sum_{i<j} x_i.x_j",
                errors["pair_sum_max_relative_error"], 1e-12),
    ]
    seed_margins = [
        at_least("000:502/512/514 Deep Sets cannot model 'two points close': smallest-gap "
                 "error", errors["smallest_gap_max_error"], 1e-3),
    ]
    return Evidence(
        predicted={"smallest gap error": 0.0, "pair sum error": 0.0},
        measured={"smallest gap error": errors["smallest_gap_max_error"],
                  "pair sum error": errors["pair_sum_max_relative_error"]},
        tolerance="1e-6 (gap), 1e-12 (pair sum)",
        verdict=decide(margins, seed_margins),
        notes=[
            msg("Both Deep Sets run the library's DeepSets.forward with sum pooling; only phi and "
            "rho are the explicit maps of the sum-decomposition (no training: representability "
            "is a property of the function class, not of an optimiser)."),
            msg("Smallest true gap over the 64 sets: {smallest_gap_min_true:.3g}.",
                smallest_gap_min_true=errors['smallest_gap_min_true']),
            "Efficiency, not ability: the power-sum phi needs a latent width n (Wagstaff et al. "
            "2019: a continuous sum-decomposition of functions of n reals needs width >= n); a "
            "Set Transformer sees pairs directly at O(n^2) (SAB).",
        ],
        details={"pairwise": errors},
        margins=margins,
        seed_margins=seed_margins,
    )
