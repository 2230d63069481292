"""Several seeds of one token classifier trained as ONE batched model (issue 19 item 4).

:func:`train_token_classifiers` does for every seed s in ``seeds`` what
:func:`~transformer_math.experiments.component_ablation.train_token_classifier` does for one,
but with the S models' parameters stacked along a leading seed axis and a single vectorised
forward and backward per step. The convention is PyTorch's model-ensembling recipe
(``torch.func.stack_module_state``, ``torch.func.functional_call``, ``torch.func.vmap``; PyTorch
docs, "Model ensembling" tutorial of ``torch.func``); the optimisation is our own.

Math. Let theta_s be seed s's parameters (tensors P_1..P_m) and Theta the stacked leaves,
Theta_j = [P_j(theta_1); ...; P_j(theta_S)] of shape (S, *P_j.shape). At step t every seed draws
its own batch (x_s, y_s) from its own stream ``Generator().manual_seed(s + 1)`` (the same draws
as the one-seed loop), and the vmapped forward gives f(theta_s, x_s) for all s at once.

1. One backward of L(Theta) = sum_s L_s(theta_s). The seeds' parameters are disjoint, so
   dL/dtheta_s = dL_s/dtheta_s: slice s of every stacked gradient is seed s's gradient.
2. Clipping by each seed's own global norm, as ``clip_grad_norm_(model.parameters(), 1.0)``
   does per model: n_s = ||(g_{1,s}, ..., g_{m,s})||_2 = sqrt(sum_j ||g_{j,s}||^2), then
   g_{j,s} <- g_{j,s} * min(1, c / (n_s + 1e-6)) with c = 1 (torch's formula). Clipping by the
   norm of the stacked gradient instead would couple the seeds (a seed with a large gradient
   would shrink the others' steps); :func:`clip_per_seed_` has ``per_seed=False`` for exactly
   that wrong variant, which the tests use to show the comparison can fail.
3. AdamW over the stacked leaves with the same hyper-parameters (betas (0.9, 0.98), weight
   decay, the warm-up + cosine ``_lr_at`` schedule). Every AdamW operation is elementwise
   (moments, bias corrections from the shared step count, decoupled decay p <- p (1 - lr wd)),
   so on slice s it is seed s's own AdamW; the fused kernel (default where torch has it for
   CPU) computes the same update in one pass instead of a Python loop over the tensors.
4. Evaluation: each seed on its own evaluation set (``Generator().manual_seed(s + 10_007)``) or
   all on the shared ``evaluation = (inputs, targets)``, one seed at a time through the
   unbatched ``functional_call`` with slice s of the weights (the one-seed forward: a stacked
   (S, 2048, ...) activation falls out of the cache and measured 4x one seed's time).

Hence the batched run equals the S one-seed runs up to float rounding: the batched kernels
(a batched matmul over S instead of S matmuls, the mean of each seed's token losses taken from
``reduction="none"``, a fused AdamW) may round differently from the per-model ones, and training
amplifies such differences over the steps. Measured (tests/experiments/test_seed_batch.py,
ComponentAblationConfig.tiny's task, 3 seeds, the five arms): at most 1.4e-7 relative on the
losses after 40 steps, 4e-5 after 200, exact accuracies equal.

vmap and attention: PyTorch has no batching rule for the fused CPU ``"sdpa"`` kernel; under vmap
it falls back to a loop over the seeds (with a warning), so by default the batched model runs
the matmul ``"reference"`` backend (``attention_backend="reference"``: measured within 6 % of
the fallback's time on every arm, faster on three of four, and no warning). Both compute
softmax(q k^T / sqrt(d_h)) v with the same parameters (the backend is no parameter), so the
choice changes rounding only; ``attention_backend=None`` keeps the config's own.

Speed (``OMP_NUM_THREADS=1 tmath bench -k seeds``, bench/seeds_bench.py, 2-core machine under
load): 3 seeds batched cost 2.05-2.24 times one seed for the full block, 2.10-2.17 over the five
component-ablation arms, against 3 for the loop; the issue's 1.8 is not reached. Batching saves
per-operation overhead (Python, dispatch, the optimizer's per-tensor loop), not arithmetic: one
model with a 3 x larger batch (the same FLOPs, no vmap) already costs 1.8-1.85 times one seed
per step at this size (d 32, 512 tokens a step), and vmap adds its own per-call work (wrapping
the stacked tensors, ``functional_call`` swapping them in, per-op batching rules; a linear layer
becomes a batched matmul plus a separate bias add). A fused LayerNorm and no NaN probes in
attention make both runs about 25 % faster and leave the ratio at 2.2.

No global RNG is read or advanced: models come from ``build_transformer(cfg, seed)``, data from
explicit generators.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.func import functional_call, stack_module_state, vmap

from transformer_math.data.sequence_tasks import TaskSpec, make_task
from transformer_math.experiments.component_ablation import (
    Progress,
    TrainedModelResult,
    TrainSettings,
    _lr_at,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

#: max_norm of the gradient clipping of ``train_token_classifier``
MAX_GRAD_NORM = 1.0
#: AdamW implementations (``torch.optim.AdamW`` keywords): the same elementwise update as a
#: Python loop over the tensors, as ``_foreach`` kernels, or as one fused kernel per step
OPTIMIZER_IMPLS: dict[str, dict[str, bool]] = {
    "loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True},
}
#: torch >= 2.4 has a fused AdamW for CPU tensors (the project allows torch 2.3)
FUSED_ON_CPU = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 4)


def clip_per_seed_(params: Sequence[Tensor], max_norm: float = MAX_GRAD_NORM, *,
                   per_seed: bool = True) -> Tensor:
    """Clip stacked gradients (leading seed axis) in place; returns the S norms before clipping.

    ``per_seed=True``: each seed by its own global norm (what ``clip_grad_norm_`` does on one
    model); ``per_seed=False``: every seed by the norm of the whole stack (the wrong variant:
    kept for the tests' planted difference).
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        raise ValueError("no gradients to clip")
    seeds = grads[0].shape[0]
    flat = torch.cat([g.reshape(seeds, -1) for g in grads], dim=1)  # (S, total size)
    norms = torch.linalg.vector_norm(flat, dim=1)  # (S,)
    total = norms if per_seed else norms.norm().expand(seeds)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(seeds, *([1] * (g.dim() - 1))))
    return norms


def train_token_classifiers(
    model_cfg: TransformerConfig,
    task: str,
    spec: TaskSpec,
    settings: TrainSettings,
    seeds: Sequence[int],
    evaluation: tuple[Tensor, Tensor] | None = None,
    *,
    progress: Progress = None,
    attention_backend: str | None = "reference",
    per_seed_clip: bool = True,
    optimizer_impl: str | None = None,
) -> list[TrainedModelResult]:
    """``[train_token_classifier(model_cfg, task, spec, settings, s, evaluation=evaluation)
    for s in seeds]`` (up to float rounding) as one vmapped model; see the module docstring.

    ``attention_backend`` replaces the config's backend in the batched model (None: keep it).
    ``optimizer_impl`` names an entry of :data:`OPTIMIZER_IMPLS` (None: ``"fused"`` where torch
    has it, else ``"foreach"``; ``train_token_classifier`` runs ``"loop"``, torch's CPU default:
    measured equal to 1e-7 relative after 40 steps, ``"foreach"`` bit-equal to ``"loop"``).
    ``per_seed_clip=False`` clips by the stacked norm (wrong; for tests only). Each result's
    ``seconds`` is the batch's wall time divided by ``len(seeds)`` (the amortised cost per
    seed, so the seconds of the results still add up to the time spent).
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    if model_cfg.dropout > 0:
        raise ValueError("dropout is not supported: vmap would need one random stream per seed")
    if optimizer_impl is None:
        optimizer_impl = "fused" if FUSED_ON_CPU else "foreach"
    if optimizer_impl not in OPTIMIZER_IMPLS:
        raise ValueError(f"optimizer_impl must be one of {sorted(OPTIMIZER_IMPLS)}, got "
                         f"{optimizer_impl!r}")
    start = time.perf_counter()
    cfg = (model_cfg if attention_backend is None
           else dataclasses.replace(model_cfg, attention_backend=attention_backend))
    models = [build_transformer(cfg, s) for s in seeds]
    params, buffers = stack_module_state(models)  # leaves (S, ...) that require grad
    base = copy.deepcopy(models[0]).to("meta")  # the structure only; weights come from params
    del models
    tied = cfg.tie_embeddings  # untying costs ~0.5 ms a call; only a tied model needs it

    leaves = list(params.values())
    state = {**params, **buffers}  # one dict, no empty buffer dict for vmap to walk

    def forward(tensors: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(base, tensors, (x,), tie_weights=tied)

    batched = vmap(forward)
    opt = torch.optim.AdamW(leaves, lr=settings.lr, weight_decay=settings.weight_decay,
                            betas=(0.9, 0.98), **OPTIMIZER_IMPLS[optimizer_impl])
    streams = [torch.Generator().manual_seed(s + 1) for s in seeds]
    count = len(seeds)
    curve_steps: list[int] = []
    curves: list[list[float]] = [[] for _ in seeds]
    running = torch.zeros(count, dtype=torch.float64)
    base.train()
    for step in range(settings.steps):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, settings)
        pairs = [make_task(task, spec, settings.batch_size, g) for g in streams]
        x = torch.stack([p[0] for p in pairs])  # (S, B, n)
        y = torch.stack([p[1] for p in pairs])
        logits = batched(state, x)  # (S, B, n, C)
        losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                 reduction="none").view(count, -1).mean(dim=1)  # (S,)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        clip_per_seed_(leaves, MAX_GRAD_NORM, per_seed=per_seed_clip)
        opt.step()
        running += losses.detach().double()
        if (step + 1) % settings.log_every == 0:
            curve_steps.append(step + 1)
            for curve, value in zip(curves, (running / settings.log_every).tolist(),
                                    strict=True):
                curve.append(value)
            running.zero_()
            if progress is not None:
                progress((step + 1) / settings.steps)
    base.eval()
    results_eval: list[tuple[float, float]] = []
    with torch.no_grad():
        for i, s in enumerate(seeds):
            if evaluation is None:
                x_eval, y_eval = make_task(task, spec, settings.eval_size,
                                           torch.Generator().manual_seed(s + 10_007))
            else:
                x_eval, y_eval = evaluation
            # one seed at a time, unbatched: a (S, eval_size, ...) activation would leave the
            # cache (measured 4x one seed's time for 3 seeds), and this is the one-seed forward
            logits = functional_call(base, {name: value[i] for name, value in state.items()},
                                     (x_eval,), tie_weights=tied)
            loss = float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                         y_eval.reshape(-1)))
            results_eval.append((loss, float((logits.argmax(-1) == y_eval).double().mean())))
    seconds = (time.perf_counter() - start) / count
    return [TrainedModelResult(loss, acc, list(curve_steps), curve, seconds)
            for (loss, acc), curve in zip(results_eval, curves, strict=True)]
