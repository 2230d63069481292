"""Kaplan et al.'s joint scaling law in N (parameters) and D (tokens); its product misreading.

Source: Kaplan et al. 2020, "Scaling Laws for Neural Language Models" (arXiv 2001.08361), eq. (1.5)

    L(N, D) = [ (N_c / N)^(alpha_N / alpha_D) + D_c / D ]^alpha_D,

whose limits are the single-variable laws of eq. (1.1)-(1.2), L(N) = (N_c / N)^alpha_N (D -> inf)
and L(D) = (D_c / D)^alpha_D (N -> inf) (the seed's 000:1126 quotes exponents 0.076 and 0.095).
Constants: the fit of eq. (1.5) in Kaplan et al.'s Table 2, alpha_N = 0.076, alpha_D = 0.103,
N_c = 6.4e13 non-embedding parameters, D_c = 1.8e13 tokens.

The seed's table (000:137) writes the law as a product, L ~ N^-alpha D^-beta. A product is
separable in logs: d^2 log L / (d log N d log D) = 0. The joint law is not: with
u = (N_c/N)^(alpha_N/alpha_D) and v = D_c / D,

    d^2 log L / (d log N d log D) = -alpha_D (alpha_N / alpha_D) u v / (u + v)^2,

which peaks at -alpha_N / 4 where the two terms are equal (u = v), and a product cannot have the
plateau L -> L(N) > 0 as D -> inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from transformer_math.bugs import declare_bug, planted

BRACKET_EXPONENT = declare_bug(
    "scaling.kaplan-bracket-exponent",
    "Kaplan's joint law evaluated with (N_c/N)^alpha_N inside the bracket instead of "
    "(N_c/N)^(alpha_N/alpha_D): the D -> infinity limit becomes (N_c/N)^(alpha_N alpha_D), not "
    "the single-variable law L(N)",
    module=__name__,
    seen_in="eq. (1.5) of Kaplan et al. 2020 nests the exponents; dropping the ratio is the "
    "natural slip when writing it from the single-variable laws")


@dataclass(frozen=True)
class KaplanJointLaw:
    """L(N, D) = [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D (Kaplan et al. 2020, eq. 1.5)."""

    alpha_n: float = 0.076
    alpha_d: float = 0.103
    n_c: float = 6.4e13
    d_c: float = 1.8e13

    def __post_init__(self) -> None:
        for name in ("alpha_n", "alpha_d", "n_c", "d_c"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")

    def model_term(self, params: float) -> float:
        """(N_c / N)^(alpha_N / alpha_D), the bracket's parameter term."""
        exponent = self.alpha_n / self.alpha_d
        if planted(BRACKET_EXPONENT):  # planted bug: falsifier of architecture.kaplan-joint-law
            exponent = self.alpha_n
        return (self.n_c / params) ** exponent

    def loss(self, params: float, tokens: float) -> float:
        """L(N, D) in nats per token (N non-embedding parameters, D tokens; both > 0)."""
        if not (params > 0 and tokens > 0):
            raise ValueError(f"params and tokens must be > 0, got {params}, {tokens}")
        return (self.model_term(params) + self.d_c / tokens) ** self.alpha_d

    def loss_params(self, params: float) -> float:
        """L(N) = (N_c / N)^alpha_N, the D -> infinity law (eq. 1.1)."""
        return (self.n_c / params) ** self.alpha_n

    def loss_tokens(self, tokens: float) -> float:
        """L(D) = (D_c / D)^alpha_D, the N -> infinity law (eq. 1.2)."""
        return (self.d_c / tokens) ** self.alpha_d

    def cross_log_derivative(self, params: float, tokens: float) -> float:
        """d^2 log L / (d log N d log D) = -alpha_N u v / (u + v)^2 (closed form)."""
        u = (self.n_c / params) ** (self.alpha_n / self.alpha_d)
        v = self.d_c / tokens
        return -self.alpha_n * u * v / (u + v) ** 2


def _solve3(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve the 3 x 3 system a x = b by Gaussian elimination with partial pivoting, in Python
    floats: the same bits whatever ran before (a LAPACK least-squares call differed in the last
    digit between runs, which the determinism test sees)."""
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, 3):
            f = m[r][col] / m[col][col]
            m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    x = [0.0, 0.0, 0.0]
    for r in (2, 1, 0):
        x[r] = (m[r][3] - sum(m[r][c] * x[c] for c in range(r + 1, 3))) / m[r][r]
    return x


def product_form_fit(params: list[float], tokens: list[float],
                     losses: list[float]) -> tuple[float, float, float, float]:
    """Least-squares fit of log L = log c - alpha log N - beta log D (the product form
    L = c N^-alpha D^-beta, 000:137) in float64, by the normal equations (3 unknowns, a
    well-conditioned design over a grid of N and D); returns (c, alpha, beta, max relative
    error)."""
    rows = [(1.0, math.log(n), math.log(d)) for n, d in zip(params, tokens, strict=True)]
    y = [math.log(v) for v in losses]
    gram = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    rhs = [sum(r[i] * t for r, t in zip(rows, y, strict=True)) for i in range(3)]
    coef = _solve3(gram, rhs)
    err = max(abs(math.exp(sum(c * x for c, x in zip(coef, r, strict=True)) - t) - 1.0)
              for r, t in zip(rows, y, strict=True))
    return math.exp(coef[0]), -coef[1], -coef[2], err
