"""In-context learning as gradient descent: explicit weights, Neumann sums, optimal preconditioner.

Source: main seed 000 §8.3.6 ("单层线性注意力 = 一步梯度下降的显式构造", exercise 8.3.6-1 and
8.3.6-4, the hand-computed trajectory 0, 1, 1.5, 1.75, 1.875), von Oswald et al. 2023
("Transformers learn in-context by gradient descent", Prop. 1), Ahn et al. 2023 (arXiv 2306.00297,
Thm. 1), Giannou et al. 2023 (Looped Transformers; Newton-Schulz iteration).

Layout and sign convention (FACTS.md, von Oswald): tokens are the columns

    e_j = [x_j; y_j] in R^{d+1}  (j = 1..N, the context),   e_q = [x_q; 0]  (the query).

One linear self-attention layer (no softmax) updates every token with a sum over the N context
tokens only (the query is not a key):

    e_j <- e_j + P W_V sum_{i=1}^{N} e_i (e_i^T W_K^T W_Q e_j).

The construction (``one_step_gd_weights``) is

    W_K = W_Q = [[I_d, 0], [0, 0]],   W_V = [[0, 0], [0, -1]],   P = (eta / N) e_{d+1} e_{d+1}^T,

so W_V e_i = (0, -y_i), scores are x_i^T x_j and the query's label slot becomes

    h_q[d+1] = -(eta / N) sum_i y_i x_i^T x_q = -x_q^T w_1,   w_1 = (eta / N) X^T y,

i.e. the model stores the NEGATIVE one-step-GD prediction, read out as ``-h[-1, -1]``. w_1 is one
gradient step from w_0 = 0 on the in-context least-squares loss with the 1/N made explicit,

    L(w) = 1/(2N) sum_i (w^T x_i - y_i)^2,   grad L(w) = H w - b,   H = X^T X / N,  b = X^T y / N.

(The seed writes L without 1/(2N), i.e. H = X^T X, b = X^T y, and absorbs N into eta.) Context
tokens receive y_j - x_j^T w_1, the residual of w_1; stacking L identical layers therefore performs
L gradient steps, w_L = eta sum_{j<L} (I - eta H)^j b (a Neumann partial sum), which tends to the
OLS solution H^{-1} b when 0 < eta < 2 / lambda_max(H), with error
|w_L - w*| <= |I - eta H|_2^L |w*|.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

GD_VALUE_SIGN = declare_bug(
    "icl.gd-value-sign",
    "the one-step-GD construction sets W_V = [[0,0],[0,+1]] (the -1 dropped): the layer stores "
    "+x_q^T w_1 and the read-out -h[-1,-1] returns the negated prediction",
    module=__name__,
    seen_in="sign conventions of von Oswald et al. 2023, Prop. 1 (FACTS.md: the construction "
    "stores the NEGATIVE prediction)")
AHN_GAMMA_SIGMA = declare_bug(
    "icl.ahn-gamma-is-sigma",
    "Ahn et al.'s Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I replaced by Sigma: the optimal "
    "preconditioner taken to be the naive whitening Sigma^{-1}",
    module=__name__,
    seen_in="the main seed's reading 'the preconditioner approximates Sigma^{-1}' (000 §8.3.6)",
    test="tests/claims/icl/test_construction_checks.py"
    "::test_ahn_gamma_has_the_isotropic_closed_form")
NEWTON_SCHULZ_SCALE = declare_bug(
    "icl.newton-schulz-scale",
    "Newton-Schulz initial guess A_0 = M^T / |M|_1 (the |M|_inf factor dropped): |I - M A_0| "
    "exceeds 1 for most M and the iteration diverges",
    module=__name__,
    seen_in="a wrong initial scale is the classic failure of Newton-Schulz (Ben-Israel & Cohen "
    "1966 need 0 < alpha < 2 / |M|_2^2)",
    test="tests/claims/icl/test_construction_checks.py"
    "::test_newton_schulz_initial_guess_contracts")


@dataclass(frozen=True)
class LinearAttentionWeights:
    """The four matrices of one linear self-attention layer (von Oswald's notation).

    The layer maps e_j <- e_j + P W_V sum_i e_i (e_i^T W_K^T W_Q e_j); all are (d+1, d+1).
    """

    key: Tensor  # W_K
    query: Tensor  # W_Q
    value: Tensor  # W_V
    projection: Tensor  # P

    def as_tuple(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.key, self.query, self.value, self.projection


def _check_positive_int(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def one_step_gd_weights(
    dim: int,
    eta: float,
    num_context: int,
    *,
    dtype: torch.dtype = torch.float64,
) -> LinearAttentionWeights:
    """Weights making one linear self-attention layer perform one GD step from w_0 = 0.

    W_K = W_Q = [[I_d, 0], [0, 0]], W_V = [[0, 0], [0, -1]], P = (eta / num_context)
    e_{d+1} e_{d+1}^T (von Oswald et al. 2023, Prop. 1; FACTS.md). Planted bug
    ``icl.gd-value-sign``: W_V's entry +1, so the layer stores +x_q^T w_1.
    """
    _check_positive_int("dim", dim)
    _check_positive_int("num_context", num_context)
    if not isinstance(eta, (int, float)) or not eta == eta:
        raise ValueError(f"eta must be a real number, got {eta!r}")
    size = dim + 1
    select_x = torch.zeros(size, size, dtype=dtype)
    select_x[:dim, :dim] = torch.eye(dim, dtype=dtype)
    value = torch.zeros(size, size, dtype=dtype)
    value[dim, dim] = -1.0
    if planted(GD_VALUE_SIGN):  # planted bug: falsifier of icl.one-step-gd
        value[dim, dim] = 1.0
    projection = torch.zeros(size, size, dtype=dtype)
    projection[dim, dim] = float(eta) / num_context
    return LinearAttentionWeights(select_x.clone(), select_x.clone(), value, projection)


def stacked_gd_weights(
    dim: int, eta: float, num_context: int, num_layers: int, *, dtype: torch.dtype = torch.float64
) -> list[LinearAttentionWeights]:
    """``num_layers`` copies of the one-step construction: L layers perform L GD steps.

    Each layer replaces the context labels by the residuals y_j - x_j^T w_l and the query slot by
    -x_q^T w_l, so the next identical layer takes the gradient at w_l (000 §8.3.6 "多层 = 多步").
    """
    _check_positive_int("num_layers", num_layers)
    return [one_step_gd_weights(dim, eta, num_context, dtype=dtype) for _ in range(num_layers)]


def _check_regression(x: Tensor, y: Tensor) -> None:
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., N, d), got {tuple(x.shape)}")
    if y.shape != x.shape[:-1]:
        raise ValueError(
            f"y must have shape {tuple(x.shape[:-1])} (x without d), got {tuple(y.shape)}"
        )


def least_squares_terms(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """H = X^T X / N and b = X^T y / N of L(w) = 1/(2N) |X w - y|^2, batched over leading dims."""
    _check_regression(x, y)
    n = x.shape[-2]
    hessian = x.transpose(-1, -2) @ x / n
    b = (x.transpose(-1, -2) @ y.unsqueeze(-1)).squeeze(-1) / n
    return hessian, b


def gd_iterates(x: Tensor, y: Tensor, eta: float, num_steps: int) -> Tensor:
    """Plain gradient descent on L(w) = 1/(2N) sum (w^T x_i - y_i)^2 from w_0 = 0.

    w_{t+1} = w_t - eta * (1/N) X^T (X w_t - y), computed from the residuals (not from H), so it
    is an independent computation of the Neumann sums. Returns (num_steps + 1, ..., d).
    """
    _check_regression(x, y)
    if num_steps < 0:
        raise ValueError(f"num_steps must be >= 0, got {num_steps}")
    n = x.shape[-2]
    w = torch.zeros(x.shape[:-2] + x.shape[-1:], dtype=x.dtype)
    out = [w]
    for _ in range(num_steps):
        residual = (x @ w.unsqueeze(-1)).squeeze(-1) - y  # (..., N)
        w = w - eta * (x.transpose(-1, -2) @ residual.unsqueeze(-1)).squeeze(-1) / n
        out.append(w)
    return torch.stack(out)


def neumann_partial_sums(hessian: Tensor, b: Tensor, eta: float, num_terms: int) -> Tensor:
    """w_L = eta * sum_{j=0}^{L-1} (I - eta H)^j b for L = 0..num_terms (exercise 8.3.6-4).

    Computed term by term from explicit matrix powers; returns (num_terms + 1, d) with w_0 = 0.
    As L -> infinity this tends to H^{-1} b when |I - eta H|_2 < 1, i.e. 0 < eta < 2/lambda_max.
    """
    if hessian.dim() != 2 or hessian.shape[0] != hessian.shape[1]:
        raise ValueError(f"hessian must be square (d, d), got {tuple(hessian.shape)}")
    if b.shape != hessian.shape[:1]:
        raise ValueError(f"b must have shape ({hessian.shape[0]},), got {tuple(b.shape)}")
    eye = torch.eye(hessian.shape[0], dtype=hessian.dtype)
    contraction = eye - eta * hessian
    sums = [torch.zeros_like(b)]
    total = torch.zeros_like(b)
    for j in range(num_terms):
        total = total + eta * torch.linalg.matrix_power(contraction, j) @ b
        sums.append(total)
    return torch.stack(sums)


def neumann_error_bound(hessian: Tensor, w_star: Tensor, eta: float, num_terms: int) -> Tensor:
    """|I - eta H|_2^L |w*| for L = 0..num_terms: w_L - w* = -(I - eta H)^L w*."""
    eye = torch.eye(hessian.shape[0], dtype=hessian.dtype)
    rate = torch.linalg.matrix_norm(eye - eta * hessian, ord=2)
    powers = torch.arange(num_terms + 1, dtype=hessian.dtype)
    return rate**powers * torch.linalg.vector_norm(w_star)


def ahn_gamma(sigma: Tensor, num_context: int) -> Tensor:
    """Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I (Ahn et al. 2023, Thm. 1; FACTS.md).

    For x ~ N(0, Sigma), w* ~ N(0, I) the global optimum of one-layer linear attention predicts
    y_q = x_q^T Gamma^{-1} (1/n) sum_i y_i x_i: one step of GD preconditioned by Gamma^{-1}. It
    follows from E[h h^T] = Gamma Sigma for h = (1/n) X^T X w* (Gaussian fourth moments). For
    Sigma = I, Gamma^{-1} = n / (n + d + 1) I.
    """
    if sigma.dim() != 2 or sigma.shape[0] != sigma.shape[1]:
        raise ValueError(f"sigma must be a square (d, d) matrix, got {tuple(sigma.shape)}")
    _check_positive_int("num_context", num_context)
    n = num_context
    if planted(AHN_GAMMA_SIGMA):  # planted bug (prediction side): killed by a test
        return sigma.clone()
    eye = torch.eye(sigma.shape[0], dtype=sigma.dtype)
    return (n + 1) / n * sigma + torch.trace(sigma) / n * eye


def ahn_optimal_preconditioner(sigma: Tensor, num_context: int) -> Tensor:
    """Gamma^{-1}, the preconditioner of the optimal one-layer linear attention (see ahn_gamma)."""
    return torch.linalg.inv(ahn_gamma(sigma, num_context))


def newton_schulz_initial(matrix: Tensor) -> Tensor:
    """A_0 = M^T / (|M|_1 |M|_inf), which guarantees |I - M A_0|_2 < 1 for invertible M."""
    norm1 = torch.linalg.matrix_norm(matrix, ord=1)
    norm_inf = torch.linalg.matrix_norm(matrix, ord=float("inf"))
    if planted(NEWTON_SCHULZ_SCALE):  # planted bug: killed by a test (A_0)
        return matrix.transpose(-1, -2) / norm1
    return matrix.transpose(-1, -2) / (norm1 * norm_inf)


def newton_schulz_inverse(
    matrix: Tensor, num_iters: int, *, initial: Tensor | None = None
) -> Tensor:
    """Iterates A_{t+1} = A_t (2I - M A_t) for t = 0..num_iters, shape (num_iters + 1, d, d).

    The residual R_t = I - M A_t obeys R_{t+1} = R_t^2, so |R_t| <= |R_0|^(2^t): quadratic
    convergence to M^{-1} when |R_0| < 1 (Giannou et al. 2023 implement one such step with a
    constant number of looped-transformer layers; 000 §8.3.6).
    """
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square (d, d), got {tuple(matrix.shape)}")
    if num_iters < 0:
        raise ValueError(f"num_iters must be >= 0, got {num_iters}")
    a = newton_schulz_initial(matrix) if initial is None else initial
    if a.shape != matrix.shape:
        raise ValueError(f"initial must have shape {tuple(matrix.shape)}, got {tuple(a.shape)}")
    two_eye = 2.0 * torch.eye(matrix.shape[0], dtype=matrix.dtype)
    iterates = [a]
    for _ in range(num_iters):
        a = a @ (two_eye - matrix @ a)
        iterates.append(a)
    return torch.stack(iterates)


def newton_schulz_tokens(matrix: Tensor, a: Tensor) -> Tensor:
    """The prompt on which ``newton_schulz_lsa_weights`` runs one Newton-Schulz step per layer.

    Rows i = 1..d are the context tokens e_i = [r_i; m_i; u_i] in R^{3d}: r_i = A^T u_i (row i
    of A), m_i = M u_i (column i of M), u_i the i-th basis vector (a position code); row d + 1 is
    the query token, all zeros (read out nothing, never a key). Shape (1, d + 1, 3d).
    """
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1] or a.shape != matrix.shape:
        raise ValueError(f"matrix and a must be square and of one shape, got "
                         f"{tuple(matrix.shape)} and {tuple(a.shape)}")
    d = matrix.shape[0]
    eye = torch.eye(d, dtype=matrix.dtype)
    context = torch.cat([a, matrix.T, eye], dim=1)  # row i: [A[i, :], M[:, i]^T, u_i^T]
    query = torch.zeros(1, 3 * d, dtype=matrix.dtype)
    return torch.cat([context, query]).unsqueeze(0)


def newton_schulz_read(tokens: Tensor) -> Tensor:
    """A from the first block of the context tokens of ``newton_schulz_tokens`` (rows of A)."""
    d = tokens.shape[-1] // 3
    return tokens[0, :d, :d]


def newton_schulz_lsa_weights(dim: int, *, dtype: torch.dtype = torch.float64
                              ) -> LinearAttentionWeights:
    """One linear self-attention layer that maps the A of ``newton_schulz_tokens`` to
    A (2I - M A) (one Newton-Schulz step, Giannou et al. 2023's iteration; 000:1054).

    With keys W_K e_i = [m_i; u_i], queries W_Q e_j = [r_j; -u_j] (in the second and third
    blocks), values W_V e_i = [r_i; 0; 0] and P = -1 on the first block, token j receives
    -sum_i r_i (m_i^T r_j - u_i^T u_j) = -(A^T M^T) r_j + r_j, i.e. row j of A - A M A; with the
    residual, r_j <- row j of 2A - A M A. The M and position blocks are left unchanged, so the
    same layer applied again (a loop) performs the next step.
    """
    _check_positive_int("dim", dim)
    d = dim
    size = 3 * d
    eye = torch.eye(d, dtype=dtype)
    key = torch.zeros(size, size, dtype=dtype)
    key[d:2 * d, d:2 * d] = eye  # m_i
    key[2 * d:, 2 * d:] = eye  # u_i
    query = torch.zeros(size, size, dtype=dtype)
    query[d:2 * d, :d] = eye  # r_j, paired with m_i
    query[2 * d:, 2 * d:] = -eye  # -u_j, paired with u_i
    value = torch.zeros(size, size, dtype=dtype)
    value[:d, :d] = eye  # r_i
    projection = torch.zeros(size, size, dtype=dtype)
    projection[:d, :d] = -eye
    return LinearAttentionWeights(key, query, value, projection)
