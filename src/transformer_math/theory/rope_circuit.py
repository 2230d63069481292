"""The RoPE rotation matrix as the third seed's ``rope_circuit`` builds it, and as it should be.

RoFormer (Su et al., arXiv 2104.09864, eq. 15): for head dimension d_k (even) and frequencies
theta_i, i = 0 .. d_k/2 - 1, the rotation at position m is the block-diagonal d_k x d_k matrix

    R_Theta(m) = diag(B_0(m), ..., B_{d_k/2 - 1}(m)),   B_i(m) = [[cos m theta_i, -sin m theta_i],
                                                                 [sin m theta_i,  cos m theta_i]]

(interleaved pairing: plane i holds channels 2i, 2i + 1). The third seed's pseudo-code (004:624-
638) starts from ``R = identity(d_k)`` and then appends each 2 x 2 block with
``R = block_diag(R, R_block)``: the identity is never replaced, so it returns the
2 d_k x 2 d_k matrix diag(I_{d_k}, B_0, ..., B_{d_k/2 - 1}), which cannot act on a d_k-dimensional
query. :func:`seed_rope_circuit_matrix` transcribes the pseudo-code (exact cos/sin in place of
the rational approximations it names) to measure that shape; :func:`rope_block_matrix` is the
construction RoFormer defines.
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

BLOCK_TRANSPOSED = declare_bug(
    "computation.rope-block-transposed",
    "rope_block_matrix writes every 2 x 2 block as [[cos, sin], [-sin, cos]] (the transpose): "
    "it rotates by -m theta_i, i.e. builds R(-m) instead of R(m)",
    module=__name__,
    seen_in="sign conventions of the 2 x 2 rotation (row vs column vectors) mixed up when RoPE "
    "is written as an explicit matrix")


def _check(m: float, theta: Tensor) -> Tensor:
    if not isinstance(theta, Tensor) or theta.dim() != 1 or theta.numel() == 0:
        raise ValueError("theta must be a non-empty 1-D tensor of d_k / 2 frequencies")
    return float(m) * theta.to(torch.float64)


def rotation_block(angle: float) -> Tensor:
    """The 2 x 2 rotation [[cos a, -sin a], [sin a, cos a]] in float64."""
    a = torch.tensor(float(angle), dtype=torch.float64)
    c, s = torch.cos(a), torch.sin(a)
    if planted(BLOCK_TRANSPOSED):  # planted bug: falsifier of computation.rope-circuit-shape
        return torch.stack([torch.stack([c, s]), torch.stack([-s, c])])
    return torch.stack([torch.stack([c, -s]), torch.stack([s, c])])


def rope_block_matrix(m: float, theta: Tensor) -> Tensor:
    """R_Theta(m): the d_k x d_k block-diagonal rotation (d_k = 2 len(theta)), float64."""
    angles = _check(m, theta)
    return torch.block_diag(*[rotation_block(float(a)) for a in angles])


def seed_rope_circuit_matrix(m: float, theta: Tensor, d_k: int) -> Tensor:
    """REFUTATION DEMO ONLY: the third seed's ``rope_circuit`` (004:624-638) as written.

    ``R = identity(d_k)``, then for i in range(d_k // 2): ``R = block_diag(R, R_block)``. The
    starting identity stays in the top-left corner, so the result is 2 d_k x 2 d_k. Never use it
    as a RoPE matrix.
    """
    angles = _check(m, theta)
    if not isinstance(d_k, int) or d_k < 2 or d_k % 2 or d_k // 2 != angles.numel():
        raise ValueError(f"d_k must be an even int equal to 2 len(theta), got {d_k!r}")
    r = torch.eye(d_k, dtype=torch.float64)
    for i in range(d_k // 2):
        angle = angles[i]
        r_block = torch.stack([torch.stack([torch.cos(angle), -torch.sin(angle)]),
                               torch.stack([torch.sin(angle), torch.cos(angle)])])
        r = torch.block_diag(r, r_block)
    return r
