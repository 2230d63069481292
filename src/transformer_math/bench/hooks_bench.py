"""Hook points cost nothing when unused (issue 13): the same model with and without them.

Baseline: a forward pass with every ``HookPoint`` bypassed (``nn.hooks.hook_points_bypassed``:
each is a bare ``lambda x: x``, as if the model had none). Candidate: the same forward with the
hook points in place and no callback registered (``HookPoint.__call__`` checks for hooks and
returns its input). Target ratio 1.02. A second benchmark reports what a full
``run_with_cache`` costs (no target: it materialises every attention pattern on purpose).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import hook_points_bypassed, run_with_cache
from transformer_math.nn.transformer import Transformer, build_transformer

CONFIG = TransformerConfig(hidden_size=64, num_layers=4, num_heads=4, vocab_size=256,
                           max_seq_len=128, position="rope")
BATCH, SEQ_LEN = 4, 64


def _model_and_tokens() -> tuple[Transformer, Tensor]:
    model = build_transformer(CONFIG, 0).eval()
    tokens = torch.randint(0, CONFIG.vocab_size or 1, (BATCH, SEQ_LEN),
                           generator=torch.Generator().manual_seed(0))
    return model, tokens


@benchmark("hooks.unused-overhead")
def unused_overhead() -> Benchmark:
    model, tokens = _model_and_tokens()

    @torch.no_grad()
    def baseline() -> Tensor:
        with hook_points_bypassed():
            return model(tokens)

    @torch.no_grad()
    def candidate() -> Tensor:
        return model(tokens)

    return Benchmark(
        name="hooks.unused-overhead",
        description=f"forward with hook points, no callback vs hook points bypassed; "
        f"L={CONFIG.num_layers} d={CONFIG.hidden_size} B={BATCH} T={SEQ_LEN}",
        baseline=baseline, candidate=candidate, target_ratio=1.02, repeats=31, number=5,
    )


@benchmark("hooks.run-with-cache")
def cache_everything() -> Benchmark:
    model, tokens = _model_and_tokens()

    @torch.no_grad()
    def baseline() -> Tensor:
        return model(tokens)

    @torch.no_grad()
    def candidate() -> object:
        return run_with_cache(model, tokens)

    return Benchmark(
        name="hooks.run-with-cache",
        description="run_with_cache of every hook point (patterns materialised) vs forward",
        baseline=baseline, candidate=candidate, repeats=9,
    )
