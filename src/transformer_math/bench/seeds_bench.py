"""Three seeds trained as one batched model vs one seed alone (issue 19 item 4).

The training of the claim ``expressivity.component-ablation`` at its default size
(``ComponentAblationConfig.default()``: V = 8, n = 8, C = 4, d = 32, 2 heads, batch 64, AdamW,
warm-up + cosine), cut to :data:`STEPS` steps so that a repeat takes about a second:

- ``seeds.batched-3-vs-1``: one representative arm, the full block with 1 layer;
- ``seeds.batched-3-vs-1.variants``: all five arms of ``component_ablation.VARIANTS``, one after
  the other (what ``component_ablation.run`` trains per seed).

Baseline: ``train_token_classifier`` for seed 0 (the per-seed loop runs this once per seed);
candidate: ``seed_batch.train_token_classifiers`` for seeds 0, 1, 2 as one vmapped model.
ratio = candidate time / baseline time: the loop would cost about 3, the issue's target is 1.8.

The evaluation set is cut with the steps (:data:`EVAL_SIZE` instead of 2048): the claim evaluates
once after 1500 steps, so evaluation is under 1 % of its time, and a 2048-sequence evaluation
after 40 steps would be a sixth of the measured time here. Model building is included (about 1 %).

Run it at one thread (``OMP_NUM_THREADS=1 tmath bench -k seeds``): the models are tiny, a step is
part per-operation overhead (Python, dispatch, autograd, the optimizer's per-tensor loop), which
batching pays once for S seeds, and part arithmetic, which grows with S whatever is done.
Measured (2 cores under load, torch 2.13 CPU): 2.05-2.24 for the full block, 2.10-2.17 over the
five arms; the target is missed. One seed with a 3 x batch (the same arithmetic, no vmap)
already takes 1.8-1.85 x one seed per step: see the ``seed_batch`` module docstring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from transformer_math.bench.harness import Benchmark, benchmark

STEPS = 40
EVAL_SIZE = 64  # ~ 2048 * STEPS / 1500: evaluation keeps its share of the claim's run
SEEDS = (0, 1, 2)
TARGET_RATIO = 1.8  # issue 19 item 4


def _workloads(variants: tuple[tuple[str, int, str], ...]
               ) -> tuple[Callable[[], object], Callable[[], object]]:
    from transformer_math.experiments.component_ablation import (
        ComponentAblationConfig,
        train_token_classifier,
    )
    from transformer_math.experiments.presets import tiny_transformer_config
    from transformer_math.experiments.seed_batch import train_token_classifiers

    config = ComponentAblationConfig.default()
    settings = dataclasses.replace(config.train, steps=STEPS, log_every=10, eval_size=EVAL_SIZE)
    spec = config.spec
    cfgs = [
        tiny_transformer_config(
            spec.vocab_size, spec.num_classes, hidden_size=config.embed_dim,
            num_heads=config.num_heads, num_layers=layers, sublayers=block, position="none",
            max_seq_len=spec.seq_len, norm=norm,
        )
        for block, layers, norm in variants
    ]

    def one_seed() -> object:
        return [train_token_classifier(cfg, config.task, spec, settings, SEEDS[0])
                for cfg in cfgs]

    def batched() -> object:
        return [train_token_classifiers(cfg, config.task, spec, settings, SEEDS)
                for cfg in cfgs]

    return one_seed, batched


@benchmark("seeds.batched-3-vs-1")
def batched_3_vs_1() -> Benchmark:
    baseline, candidate = _workloads((("full", 1, "layernorm"),))
    return Benchmark(
        name="seeds.batched-3-vs-1",
        description=f"component-ablation default size, full/1L, {STEPS} steps: 3 seeds as one "
        f"vmapped model vs 1 seed (a loop costs ~3); issue target {TARGET_RATIO}",
        baseline=baseline,
        candidate=candidate,
        target_ratio=TARGET_RATIO,
        repeats=9,
        warmup=1,
    )


@benchmark("seeds.batched-3-vs-1.variants")
def batched_3_vs_1_variants() -> Benchmark:
    from transformer_math.experiments.component_ablation import VARIANTS

    baseline, candidate = _workloads(VARIANTS)
    return Benchmark(
        name="seeds.batched-3-vs-1.variants",
        description=f"the same over the {len(VARIANTS)} component-ablation arms; issue target "
        f"{TARGET_RATIO}",
        baseline=baseline,
        candidate=candidate,
        target_ratio=TARGET_RATIO,
        repeats=5,
        warmup=1,
    )
