"""A sliding window makes RoPE attention see only trained distances (the mechanism behind the
window variant of the extrapolation study, 000 §8.3.3 理论 C; experiments/rope_extrapolation)."""

from __future__ import annotations

import dataclasses

import torch

from transformer_math.claims.position._common import SEED_000, randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    at_most,
    claim,
    decide,
    exceeds,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer


@claim(
    "position.window-relative",
    source=f"{SEED_000} 理论 C ('可定义'与'外推质量好'是两回事), 故障表 #2; Beltagy et al. 2020 "
           "(sliding-window attention)",
    statement="""In a causal RoPE layer whose queries see only the last W keys (the library's
    sliding window, TransformerConfig.sliding_window, as the extrapolation study's window
    variant uses it), the output at every position t equals the output of the same layer run
    on the window x[t-W+1..t] alone at positions 0..W-1: its logits depend only on relative
    distances < W, so a windowed model never meets a distance it was not trained on, however
    long the sequence. Without the window the outputs differ.""",
    statement_zh="""在因果 RoPE 层中，若查询只能看到最近的 W 个键（库中的滑动窗口
    TransformerConfig.sliding_window，外推实验的窗口变体即用它），则每个位置 t 的输出等于同一层
    单独作用在窗口 x[t-W+1..t]（位置 0..W-1）上的输出：其 logit 只依赖小于 W 的相对距离，
    因此无论序列多长，带窗口的模型都不会遇到训练中没见过的距离。没有窗口时输出不同。""",
    falsifier="position.window-mask-sign",
    expected="verified",
    version=2,
    seed_refs=[("000", 649, 651), ("000", 1666, 1666)],
    kind="measurement",
    audit="""Issue 31 review (m, d1: the planted bug lived in the experiment's private
    window_mask, not in the library's sliding-window mask). Fixed: the window is now the
    project's own sliding window (TransformerConfig.sliding_window -> Transformer ->
    functional.masks.sliding_window_mask), and the falsifier position.window-mask-sign is
    planted at that site in nn/transformer.py, code every sliding-window model (Mistral, Phi-3
    adapters) runs. The private window_mask is gone; the extrapolation experiment's window
    variant uses the same library path. Thresholds unchanged (1e-4 float32 summation order,
    contrast 1e-2).""",
)
def check_window_relative(ctx: Context) -> Evidence:
    """A one-layer pre-LN RoPE decoder (``Transformer``, reference attention) on random vector
    inputs of length 64 with W = 8: the windowed model is the same weights with
    ``sliding_window = W`` in its config (the library's mask, where the falsifier's sign error
    is planted). One layer, so that the receptive field is exactly the window (with k layers
    it would be k (W - 1) + 1)."""
    d, heads, t, w = 16, 2, 64, 8
    config = TransformerConfig(hidden_size=d, num_heads=heads, num_layers=1, output_size=0,
                               max_seq_len=t, position="rope", attention_backend="reference")
    model = build_transformer(config, ctx.generator(0))
    x = randn(ctx.generator(12), 1, t, d)
    with torch.no_grad():
        full = model(inputs_embeds=x)
        alone = torch.cat([model(inputs_embeds=x[:, i - w + 1:i + 1])[:, -1:]
                           for i in range(w - 1, t)], dim=1)
        model.config = dataclasses.replace(config, sliding_window=w)
        windowed = model(inputs_embeds=x)
    err = float((windowed[:, w - 1:] - alone).abs().max())
    contrast = float((full[:, w - 1:] - alone).abs().max())
    # float32: RoPE angles at positions < 64 (rounding < 1e-5 rad) and a different summation
    # order of the same 8 keys: differences ~1e-6; 1e-4 leaves margin. The contrast threshold
    # is 100 times that: the full causal layer reads keys outside the window.
    margins = [
        at_most("max |windowed output - window alone|", err, 1e-4),
        exceeds("max |full causal output - window alone| (the window matters)", contrast, 1e-2),
    ]
    return Evidence(
        predicted={"windowed - alone": 0.0, "full - alone": "> 0"},
        measured={"windowed - alone": err, "full - alone": contrast},
        tolerance="1e-4 (float32 summation order, angles at positions < 64)",
        verdict=decide(margins),
        margins=margins,
        notes=[f"1 layer, hidden {d}, {heads} heads, T = {t}, W = {w}; positions t = W-1..T-1; "
               "the window alone (length W) never reaches the sliding-window site"],
    )
