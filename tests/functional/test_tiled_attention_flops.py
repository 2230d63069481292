"""The tiled attention's backward recomputes the logits (+1 Q K^T per tile, 7/6 of reference
attention's training FLOPs); the planted bug flash.backward-recomputes-output changes only the
FLOPs, not the gradients (architecture.flash-recompute-flops catches it by counting)."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.diagnostics.flops import count_flops
from transformer_math.functional.tiled_attention import tiled_attention


def _grads_and_flops() -> tuple[list[torch.Tensor], int]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 64, 8, generator=g, dtype=torch.float64, requires_grad=True)
               for _ in range(3))

    def step() -> None:
        tiled_attention(q, k, v, block_q=16, block_k=16).sum().backward()

    flops = count_flops(step).total
    return [t.grad.clone() for t in (q, k, v)], flops


def test_backward_recompute_bug_changes_flops_not_gradients() -> None:
    grads, flops = _grads_and_flops()
    assert flops == 14 * 64 * 64 * 8  # 7 matrix products of 2 N^2 d
    with plant("flash.backward-recomputes-output"):
        bad_grads, bad_flops = _grads_and_flops()
    assert bad_flops == flops + 4 * 64 * 64 * 8
    for a, b in zip(grads, bad_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
