"""architecture.norms: the Xiong et al. gradient profile on the one Transformer."""

from __future__ import annotations

import torch

from transformer_math.claims.architecture.norms import (
    grad_profile_model,
    last_layer_grad_profile,
    last_layer_slopes,
)
from transformer_math.claims.registry import Context, Size


def test_grad_profile_preset() -> None:
    pre, post = (grad_profile_model(n, 4, dim=16, vocab=8) for n in ("pre", "post"))
    assert pre.has_final_norm and not post.has_final_norm
    assert pre.input_size is None and pre.vocab_size is None and pre.head_size == 8
    assert pre.causal and pre.head_bias


def test_profile_has_one_positive_norm_per_layer_and_post_is_larger_near_the_output() -> None:
    shape = {"dim": 32, "seq": 8, "batch": 2, "vocab": 16}
    pre = last_layer_grad_profile("pre", 8, torch.Generator().manual_seed(0), **shape)
    post = last_layer_grad_profile("post", 8, torch.Generator().manual_seed(0), **shape)
    assert len(pre) == len(post) == 8 and min(pre + post) > 0
    assert post[-1] > pre[-1]  # Theorem 1's direction already at one seed


def test_last_layer_slopes_follow_theorem_1_at_one_seed_and_not_with_the_bug() -> None:
    """Xiong et al. Thm. 1 on the project's blocks: Pre-LN slope near -1/2, Post-LN near 0
    (each inside its +-1/4 band with room); with Pre-LN placed as Post-LN, the Pre-LN arm's
    slope leaves its band (the falsifier, without the claim's 3 seeds)."""
    from transformer_math.bugs import plant

    ctx = Context(seed=0, size=Size.TINY, seeds=1)
    slopes, curves = last_layer_slopes(ctx)
    assert -0.75 + 0.1 <= slopes["pre_slope"] <= -0.25 - 0.1, slopes
    assert abs(slopes["post_slope"]) <= 0.25 - 0.05, slopes
    assert len(curves["pre"]) == len(curves["post"]) == 4
    with plant("norm.pre-ln-as-post-ln"):
        bad, _ = last_layer_slopes(ctx)
    assert bad["pre_slope"] > -0.25, bad
