"""The third seed's ``rope_circuit`` (004 ch. 10, 004:623-638) against the RoPE matrix.

RoFormer's rotation R_Theta(m) is d_k x d_k and block diagonal (``theory/rope_circuit.py``).
The seed's pseudo-code starts from identity(d_k) and appends the d_k/2 blocks with block_diag,
so it returns a 2 d_k x 2 d_k matrix. Both are computed; the correct one is compared with the
project's RoPE (``functional.rope``: the explicit ``rotary_matrix`` and ``apply_rotary`` on the
basis vectors), the seed's is measured for its shape.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.rope import apply_rotary, rope_cos_sin, rotary_matrix
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.i18n.message import msg
from transformer_math.theory.rope_circuit import rope_block_matrix, seed_rope_circuit_matrix

HEAD_DIMS = (4, 8, 64)
POSITIONS = (0, 1, 7, 100)


def _project_rope_matrix(m: int, inv_freq: torch.Tensor) -> torch.Tensor:
    """R(m) read off the project's apply_rotary: rows of the output for x = I are (R e_j)^T."""
    d = 2 * inv_freq.numel()
    cos, sin = rope_cos_sin(torch.tensor([m]), inv_freq, layout="interleaved")
    eye = torch.eye(d, dtype=torch.float64)[None]  # (1, d, d): d "tokens" at one position
    rotated = apply_rotary(eye.transpose(0, 1), cos, sin, layout="interleaved")  # (d, 1, d)
    return rotated[:, 0, :].T


@claim(
    "computation.rope-circuit-shape",
    source="004 ch. 10 (rope_circuit pseudo-code, 004:623-638); Su et al., RoFormer, arXiv "
    "2104.09864, eq. 15",
    statement="""The RoPE rotation R_Theta(m) is a d_k x d_k block-diagonal matrix of d_k/2
    plane rotations; built that way it equals the project's RoPE (its explicit matrix and
    apply_rotary) and satisfies R(m)^T R(n) = R(n - m). The third seed's rope_circuit, which
    starts from identity(d_k) and appends every block with block_diag, returns a
    2 d_k x 2 d_k matrix instead: refuted.""",
    statement_zh="""RoPE 旋转 R_Theta(m) 是由 d_k/2 个平面旋转组成的 d_k x d_k 分块对角矩阵；
    如此构造的矩阵等于项目的 RoPE（其显式矩阵与 apply_rotary），并满足
    R(m)^T R(n) = R(n - m)。第三份种子的 rope_circuit 从 identity(d_k) 出发、用 block_diag
    逐块追加，得到的却是 2 d_k x 2 d_k 矩阵：被驳斥。""",
    tier="quick",
    falsifier="computation.rope-block-transposed",
    expected="refuted",
    version=1,
    kind="code-audit",
    audit="""Issue 31 review (m, d1: falsifier in theory/rope_circuit, claims only): the claim
    is a code audit of the seed's own pseudo-code (004:628-637, transcribed and run for its
    shape) beside RoFormer's block matrix, which is compared with the project's RoPE
    (functional.rope); declared kind code-audit. The falsifier stays in the reference
    construction (allowed for a code audit); the refutation is the seed's code returning a
    2 d_k x 2 d_k matrix, which the review reads V.""",
    seed_refs=[("004", 623, 638)],
    refutes=[Refutation(
        seed="004", line=628, to_line=637,
        quote="R = identity(d_k)",
        reading="run as written, the pseudo-code returns the d_k x d_k RoPE rotation",
        says="rope_circuit: R = identity(d_k); for each plane R = block_diag(R, R_block); "
        "return R (the RoPE rotation matrix)",
        correct="R_Theta(m) = block_diag(B_0(m), ..., B_{d_k/2-1}(m)) is d_k x d_k; starting "
        "from identity(d_k) and appending the blocks gives diag(I_{d_k}, R(m)), 2 d_k x 2 d_k")],
)
def check_rope_circuit_shape(ctx: Context) -> Evidence:
    """Margins: shape of the block construction = (d_k, d_k); it equals the project's
    rotary_matrix (float64, 1e-12) and apply_rotary (float32 angles, 1e-5) at every (d_k, m);
    R(m)^T R(n) = R(n - m) (1e-12). Seed margin: the seed's rope_circuit has d_k rows."""
    shape_dev, seed_shape_dev, lib_err, apply_err, rel_err, seed_corner = 0.0, 0.0, 0.0, 0.0, \
        0.0, 0.0
    shapes: dict[str, list[int]] = {}
    for d_k in HEAD_DIMS:
        inv_freq = default_inv_freq(d_k, 10000.0)
        for m in POSITIONS:
            r = rope_block_matrix(m, inv_freq)
            seed = seed_rope_circuit_matrix(m, inv_freq, d_k)
            shape_dev = max(shape_dev, abs(r.shape[0] - d_k), abs(r.shape[1] - d_k))
            seed_shape_dev = max(seed_shape_dev, abs(seed.shape[0] - d_k))
            shapes[f"d_k={d_k}"] = [seed.shape[0], seed.shape[1]]
            lib_err = max(lib_err, float((r - rotary_matrix(m, inv_freq)).abs().max()))
            apply_err = max(apply_err,
                            float((r - _project_rope_matrix(m, inv_freq)).abs().max()))
            # where the seed's matrix holds the rotation: the lower-right d_k block
            seed_corner = max(seed_corner, float((seed[d_k:, d_k:] - r).abs().max()))
        for m, n in ((3, 10), (10, 3), (0, 100)):
            lhs = rope_block_matrix(m, inv_freq).T @ rope_block_matrix(n, inv_freq)
            rel_err = max(rel_err, float((lhs - rope_block_matrix(n - m, inv_freq))
                                         .abs().max()))
    margins = [
        at_most("max |rows or columns of the block construction - d_k|", shape_dev, 0.0),
        at_most("max |block construction - functional.rope.rotary_matrix| (float64)",
                lib_err, 1e-12),
        at_most("max |block construction - apply_rotary on the basis| (float32 angles)",
                apply_err, 1e-5),
        at_most("max |R(m)^T R(n) - R(n - m)|", rel_err, 1e-12),
    ]
    seed_margins = [
        at_most("seed 004:628 rope_circuit: |rows - d_k| (must be 0 for a d_k x d_k rotation)",
                seed_shape_dev, 0.0),
    ]
    return Evidence(
        predicted={"shape": "d_k x d_k", "equals_project_rope": True},
        measured={"block_construction_max_error_vs_rotary_matrix": lib_err,
                  "vs_apply_rotary": apply_err, "relative_property_error": rel_err,
                  "seed_rope_circuit_shape": shapes},
        tolerance={"float64": 1e-12, "float32_angles": 1e-5},
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            msg("d_k in {list_HEAD_DIMS}, m in {list_POSITIONS}, theta_i = 10000^(-2i/d_k) "
                "(functional.rope_scaling.default_inv_freq), interleaved pairing; apply_rotary "
                "forms its angles in float32 (FACTS.md), hence the 1e-5 tolerance at m <= 100.",
                list_HEAD_DIMS=list(HEAD_DIMS), list_POSITIONS=list(POSITIONS)),
            msg("The seed's pseudo-code transcribed "
                "(theory.rope_circuit.seed_rope_circuit_matrix, exact cos/sin instead of its "
                "rational approximations): it returns {shapes} (2 d_k x 2 d_k); its lower-right "
                "d_k block is R(m) to {seed_corner:.1e} and the top-left block is the identity it "
                "started from, so R x is not even defined for a d_k-dimensional query. The gate "
                "count it annotates (O(d_k log m)) is not a result of Chen et al. (see "
                "computation.precision-claims).", shapes=shapes, seed_corner=seed_corner),
        ],
        details={"seed_lower_right_block_error": seed_corner},
    )
