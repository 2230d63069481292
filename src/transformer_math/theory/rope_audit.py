"""Closed forms and counterexamples for the audit of the seeds' RoPE group theory.

Nothing here trains or builds a model: every function is a formula of 000 §8.3.3 (理论 A, B, the
3-D RoPE bridge) or 004 ch. 9, or a counterexample to one of them, evaluated in float64 with
``torch.linalg.matrix_exp`` / explicit 2x2 blocks, sharing no code with ``functional/rope.py``.

- :func:`so2_generator`, :func:`rope_generator`: J = [[0, -1], [1, 0]] spans so(2); RoPE's
  generator is the direct sum X = ⊕_i θ_i J, and R_m = exp(m X) (000:624).
- :func:`torus_element`, :func:`torus_phases`: the block-diagonal representation of the torus
  SO(2)^{d/2} and its inverse on the image (faithfulness, 000:624).
- :func:`kronecker_rotations`, :func:`plane_rotation`: the third seed's SO(2)^{⊗ d/2} read as a
  tensor (Kronecker) product, and the embedded plane rotations whose product is the direct sum
  (004:399, 004:405).
- :func:`reflection`, :func:`power_family`, :func:`relative_defect`, :func:`distance_to_so2`: the
  relative constraint <f(m) q, f(n) k> = g(q, k, n - m) does not force f(m) = R(m θ) (000:614):
  f(m) = A G(m) with G a homomorphism; on integer positions G(1) may be a reflection.
- :func:`sinusoid_shift_distance`: |PE(p + D) - PE(p)| = (sum_i 4 sin^2(D θ_i / 2))^(1/2), the
  same for every p, and never 0 for an integer D != 0 when θ_0 = 1 (000:574-576).
- :func:`so3_hat`, :func:`so3_block_rotation`, :func:`so3_euler_rotation`: the "SO(3)^{d/3}
  3D RoPE" of 000:670 / 000:686, R(p) = ⊕_b exp(ω_b [p]_x) or Euler angles ω_b p, whose
  rotations do not commute.
- :func:`seed_init_binds`, :func:`module_apply_with_seed_signature`: two facts about the third
  seed's NDimensionalRoPE (004:527, 004:551) reproduced with a few lines of our own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn

F64 = torch.float64


def so2_generator() -> Tensor:
    """J = [[0, -1], [1, 0]], the generator of so(2) (000:624): exp(α J) = R(α)."""
    return torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=F64)


def rope_generator(inv_freq: Tensor) -> Tensor:
    """X = diag(θ_0 J, θ_1 J, ...) (interleaved planes (2i, 2i+1)), skew-symmetric (d, d)."""
    J = so2_generator()
    return torch.block_diag(*[float(t) * J for t in inv_freq.double().tolist()])


def rotation_2d(angle: float) -> Tensor:
    """R(α) = [[cos α, -sin α], [sin α, cos α]] (000:600), float64, from math.cos/sin."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, -s], [s, c]], dtype=F64)


def torus_element(phases: Tensor) -> Tensor:
    """ρ(φ) = exp(⊕_i φ_i J): the direct-sum representation of the torus SO(2)^{d/2} on R^d."""
    return torch.linalg.matrix_exp(rope_generator(phases))


def torus_phases(matrix: Tensor) -> Tensor:
    """The torus element of a block-diagonal rotation: φ_i = atan2(M[2i+1, 2i], M[2i, 2i]) in
    [0, 2π). ρ(φ) determines φ mod 2π, so ρ is injective (faithful)."""
    idx = torch.arange(0, matrix.shape[-1], 2)
    return torch.atan2(matrix[idx + 1, idx], matrix[idx, idx]).remainder(2 * math.pi)


def kronecker_rotations(angles: Iterable[float]) -> Tensor:
    """⊗_i R(α_i), the tensor-product reading of 004:399/405's SO(2)^{⊗ d/2}: a 2^k x 2^k
    matrix (k factors), whose eigen-angles are the sums ±α_0 ± α_1 ± ..., not the α_i."""
    out = torch.ones(1, 1, dtype=F64)
    for a in angles:
        out = torch.kron(out, rotation_2d(a))
    return out


def plane_rotation(dim: int, plane: int, angle: float) -> Tensor:
    """The d x d rotation of plane (2 plane, 2 plane + 1) by ``angle``, identity elsewhere (the
    R_{2i} of 004:405 read as embedded plane rotations; they commute, and their product is the
    block-diagonal R_m)."""
    out = torch.eye(dim, dtype=F64)
    out[2 * plane:2 * plane + 2, 2 * plane:2 * plane + 2] = rotation_2d(angle)
    return out


def reflection(phi: float) -> Tensor:
    """The reflection of R^2 across the line at angle φ: [[cos 2φ, sin 2φ], [sin 2φ, -cos 2φ]]
    (orthogonal, det -1, F^2 = I)."""
    c, s = math.cos(2 * phi), math.sin(2 * phi)
    return torch.tensor([[c, s], [s, -c]], dtype=F64)


def power_family(generator: Tensor, base: Tensor) -> Callable[[int], Tensor]:
    """m -> A G^m for integer m (G orthogonal, so G^{-1} = G^T): f(m)^T f(n) = G^{n-m}, a
    function of n - m only, for ANY orthogonal G, a reflection included."""
    def f(m: int) -> Tensor:
        g = generator if m >= 0 else generator.T
        return base @ torch.linalg.matrix_power(g, abs(int(m)))
    return f


def relative_defect(family: Callable[[int], Tensor], triples: Iterable[tuple[int, int, int]]
                    ) -> float:
    """max over (m, n, t) of max |f(m)^T f(n) - f(m + t)^T f(n + t)|: 0 exactly when
    <f(m) q, f(n) k> depends on (m, n) only through n - m (the constraint of 000:592)."""
    worst = 0.0
    for m, n, t in triples:
        a = family(m).T @ family(n)
        b = family(m + t).T @ family(n + t)
        worst = max(worst, float((a - b).abs().max()))
    return worst


def distance_to_so2(matrix: Tensor) -> float:
    """min over α of |M - R(α)|_F for a 2x2 M = [[a, b], [c, d]]:
    (|M|_F^2 + 2 - 2 ((a + d)^2 + (c - b)^2)^(1/2))^(1/2); 2 for every reflection."""
    a, b, c, d = (float(v) for v in matrix.flatten())
    sq = a * a + b * b + c * c + d * d + 2.0 - 2.0 * math.hypot(a + d, c - b)
    return math.sqrt(max(sq, 0.0))


def sinusoid_shift_distance(shift: int, inv_freq: Iterable[float]) -> float:
    """|PE(p + D) - PE(p)| for the sinusoidal code with frequencies θ_i: each (sin, cos) pair
    moves by the chord 2 |sin(D θ_i / 2)|, whatever p. Zero needs D θ_i ∈ 2πZ for every i, which
    θ_0 = 1 forbids for any integer D != 0 (π is irrational): the code is injective for every
    base and length; the base only sets how close far positions come."""
    return math.sqrt(sum(4.0 * math.sin(shift * t / 2.0) ** 2 for t in inv_freq))


def so3_hat(v: Tensor) -> Tensor:
    """[v]_x, the so(3) matrix with [v]_x w = v x w (generators G_x, G_y, G_z; [G_x, G_y] =
    G_z, so they do not commute)."""
    x, y, z = (float(c) for c in v)
    return torch.tensor([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]], dtype=F64)


def so3_exp(v: Tensor) -> Tensor:
    """exp([v]_x) by Rodrigues' formula: I + sin|v| K + (1 - cos|v|) K^2, K = [v/|v|]_x (the
    rotation about v by |v|; equals ``torch.linalg.matrix_exp(so3_hat(v))``)."""
    angle = float(v.double().norm())
    if angle == 0.0:
        return torch.eye(3, dtype=F64)
    K = so3_hat(v.double() / angle)
    return torch.eye(3, dtype=F64) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def so3_block_rotation(position: Tensor, freqs: Iterable[float]) -> Tensor:
    """The "SO(3)^{d/3} 3D RoPE" of 000:670 / 000:686: block b rotates R^3 by
    exp(ω_b [p]_x) (about the axis p by ω_b |p|), (3B, 3B). Since exp(-[p]) exp([r]) is not
    exp([r - p]) for non-parallel p, r, inner products depend on more than r - p."""
    return torch.block_diag(*[so3_exp(position * w) for w in freqs])


def so3_euler_rotation(position: Tensor, freqs: Iterable[float]) -> Tensor:
    """The other natural "SO(3)^{d/3}" design: block b is exp(ω_b p_x G_x) exp(ω_b p_y G_y)
    exp(ω_b p_z G_z) (Euler angles proportional to the coordinates); not relative either."""
    axes = torch.eye(3, dtype=F64)
    blocks = []
    for w in freqs:
        block = torch.eye(3, dtype=F64)
        for a in range(3):
            block = block @ so3_exp(axes[a] * (w * float(position[a])))
        blocks.append(block)
    return torch.block_diag(*blocks)


# ------------------------------------------------ the third seed's NDimensionalRoPE (004 ch. 9)


class _InitScope(nn.Module):
    """A module whose __init__ binds what the seed's NDimensionalRoPE.__init__ binds before
    its frequency line (004:513-525): its parameters, then ``self.pairs_per_dim`` (an
    attribute), the list and the loop variable; it records the names a bare identifier on the
    next line can resolve to."""

    def __init__(self, head_dim: int, n_dims: int, max_pos_per_dim: int, base: float) -> None:
        super().__init__()
        self.head_dim, self.n_dims, self.base = head_dim, n_dims, base
        self.pairs_per_dim = head_dim // (2 * n_dims)
        inv_freq_list: list[Tensor] = []
        self.visible = set(locals()) | set(globals()) | set(dir(__builtins__))
        del inv_freq_list, max_pos_per_dim


def seed_init_binds(name: str, head_dim: int = 64, n_dims: int = 2) -> bool:
    """Whether a bare ``name`` resolves inside a scope shaped like the seed's __init__ at
    004:527 (``pairs_per_dim`` does not: only ``self.pairs_per_dim`` was assigned, so the
    seed's constructor raises NameError)."""
    return name in _InitScope(head_dim, n_dims, 16, 10000.0).visible


class _ApplyWithSeedSignature(nn.Module):
    """A module defining ``apply(self, x, positions)`` as the seed does (004:551), which
    shadows ``nn.Module.apply(fn)`` (the recursive initialiser)."""

    def apply(self, x, positions):  # type: ignore[override]  # the seed's signature
        return x


def module_apply_with_seed_signature() -> tuple[bool, str]:
    """Run ``nn.Module.apply(fn)`` on a container holding a module with the seed's ``apply``
    signature (what ``model.apply(init_weights)`` does): (succeeded, error)."""
    parent = nn.Sequential(nn.Identity(), _ApplyWithSeedSignature())  # no weights: no RNG
    try:
        parent.apply(lambda module: None)
    except TypeError as exc:
        return False, f"TypeError: {exc}"
    return True, ""
