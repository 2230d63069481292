"""Doctor checks on depth, residual paths, norms and in-context copying (manual rows 4 and 7).

Manual row 7 (000:1671, §8.3.7): "gradients vanish or explode with depth" - a residual block is
one forward-Euler step h_{l+1} = h_l + f(h_l) whose Jacobian I + df keeps the product over layers
near the identity; without the identity path the product of df's vanishes or explodes (000 §8.3.7
反面). Manual row 4 (000:1668, §8.3.6): "few-shot never works" - in-context copying needs an
induction head, which needs two layers composed (Olsson et al. 2022).

Checks (all dynamic, through ``subject.engine``; no global RNG):

- ``depth.gradients``: ||dL/dh_l|| of a next-token cross-entropy on random tokens for every
  stream h_0..h_L, and the root-mean-square gain of the input-output Jacobian d h_l / d h_0
  (vector-Jacobian products with Gaussian probes); WARNING when the per-layer rate of either is
  outside a band set from a sweep.
- ``depth.residual-path``: Hutchinson's estimate of tr(d h_{l+1} / d h_l) / n for every block
  (Rademacher probes) and the cosine of the Jacobian with the identity: one of them ~1 with the
  identity path, both ~0 without; WARNING below the threshold.
- ``norm.statistics``: every LayerNorm / RMSNorm module's output, with its measured affine part
  removed, must have per-token mean 0 and variance 1 (LayerNorm) or mean square 1 (RMSNorm), up
  to eps; ERROR otherwise.
- ``norm.placement-probe``: the block update must be what the configured norm placement computes
  (Pre-LN: h_mid - h = f(N h) read at the sublayer's hook; Post-LN: h_mid = N(h + f h)); ERROR
  otherwise (project engine: hook points; transformers engine: forward hooks on the sublayers of
  pre-norm decoders).
- ``icl.induction``: previous-token and induction scores per head and the in-context loss drop
  on repeated random tokens [x, x]; INFO when no induction head exists (a fact, not a fault).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.diagnostics.head_detector import (
    transformer_lens_induction_score,
    transformer_lens_previous_token_score,
)
from transformer_math.diagnostics.icl_scores import induction_score, previous_token_score
from transformer_math.doctor.checks import NotApplicable, Subject, register_check
from transformer_math.doctor.engines import Engine, ProjectEngine
from transformer_math.doctor.findings import Finding, Severity, beyond, judged

SOURCE_DEPTH = ("000:1671 (manual row 7), §8.3.7 (residual = forward-Euler step, 反面: no "
                "residual); Xiong et al. 2020 eqs. 1-2")
SOURCE_NORM = ("000 §8.3.7 理论 B (LayerNorm: centre then rescale; RMSNorm: rescale only); "
               "Ba et al. 2016; Zhang & Sennrich 2019")
SOURCE_ICL = "000:1668 (manual row 4), §8.3.6 (induction heads); Olsson et al. 2022"

# ------------------------------------------------------------------ thresholds (from the sweep)
GRADIENT_RATE_BAND = 10.0
"""(g_0 / g_L)^(1/L) and J_L^(1/L) must lie in [1/10, 10] (sweep: :func:`depth_gradients`)."""
RESIDUAL_SCORE_MIN = 0.15
"""A block's identity score max(tr(J)/n, cos(J, I)) below this: no identity path (sweep:
:func:`residual_path`)."""
NORM_TOLERANCE = 1e-3
"""Largest per-token deviation of a norm's affine-free output statistics, float32 / float64
outputs (sweep: :func:`norm_statistics`)."""
NORM_TOLERANCE_LOW = 5e-2
"""The same for float16 / bfloat16 outputs (8 / 11 mantissa bits: rounding alone is ~4e-3)."""
PLACEMENT_TOLERANCE = 1e-4
"""Relative error of the configured placement's update (sweep: :func:`placement_probe`)."""
INDUCTION_MIN = 0.3
"""A head with induction score >= 0.3 is an induction head (sweep: :func:`icl_induction`), on
the project's scale (``diagnostics.icl_scores``: the mean over the second copy only; a perfect
head scores 1 there and 0.5 on TransformerLens's head-detector scale, so this is 0.15 there)."""
LOSS_DROP_MIN = 0.5
"""nats / token: the second copy predicted this much better than the first."""


# ------------------------------------------------------------------ shared measurements
def _token_probe(subject: Subject, salt: str, length: int | None = None) -> Tensor:
    engine = subject.need_engine()
    length = length or min(subject.probe_len, 64)
    if engine.max_positions is not None:
        length = min(length, engine.max_positions)
    return subject.random_ids(salt, length=max(length, 4))


def _next_token_loss(logits: Tensor, ids: Tensor) -> Tensor:
    """Mean cross-entropy of logits[:, t] predicting ids[:, t + 1] (natural log)."""
    v = logits.shape[-1]
    return nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, v),
                                       ids[:, 1:].reshape(-1).to(logits.device))


JACOBIAN_TOKENS = 32


def _jacobian_probe(ids: Tensor) -> Tensor:
    """The Jacobian probes' input: the first row, at most :data:`JACOBIAN_TOKENS` tokens (one
    reverse pass per layer or block costs L forward-backward passes; n = T d numbers per probe
    keep the estimates' spread ~sqrt(2 / n) small already)."""
    if ids.shape[0] == 1 and ids.shape[1] <= JACOBIAN_TOKENS:
        return ids
    return ids[:1, :JACOBIAN_TOKENS]


def depth_measurements(engine: Engine, ids: Tensor, generator: torch.Generator
                       ) -> dict[str, list[float]]:
    """Gradient norms ||dL/dh_l||_F (l = 0..L) of the next-token loss and the RMS gain of
    J_l = d h_l / d h_0 for l = 0..L.

    RMS gain: sqrt(E_u ||J_l^T u||^2 / n) with u ~ N(0, I_n) (n = numel(h_l)); E||J^T u||^2 =
    ||J||_F^2, so the gain is the root mean square singular value of J_l over sqrt(n)-normalised
    directions (1 for the identity). One probe per layer: the estimate's relative spread is
    ~sqrt(2) ||J J^T||_F / ||J||_F^2, small when J has high effective rank (the thousands of
    directions of (B, T, d)). J_l^T u is one vector-Jacobian product (reverse mode) per layer.
    """
    with torch.enable_grad():
        inputs = engine.embed(ids).detach().requires_grad_(True)
        out, states = engine.run_embedded(inputs)
        loss = _next_token_loss(out, ids)
        grads = torch.autograd.grad(loss, states)
        g_norms = [float(g.detach().double().norm()) for g in grads]
        small = _jacobian_probe(ids)  # L reverse passes: on one short row
        if small is not ids:
            inputs = engine.embed(small).detach().requires_grad_(True)
            _, states = engine.run_embedded(inputs)
        else:
            _, states = engine.run_embedded(inputs)
        h0 = states[0]
        j_norms = [1.0]
        for h in states[1:]:
            u = torch.randn(h.shape, generator=generator, dtype=torch.float32).to(h)
            (vjp,) = torch.autograd.grad(h, h0, grad_outputs=u, retain_graph=True)
            j_norms.append(float(vjp.detach().double().norm() / math.sqrt(u.numel())))
    return {"gradients": g_norms, "jacobian": j_norms, "loss": [float(loss.detach())]}


def block_traces(engine: Engine, ids: Tensor, generator: torch.Generator, probes: int = 2
                 ) -> dict[str, list[float]]:
    """Hutchinson's estimate of tr(J_l) / n, J_l = d h_{l+1} / d h_l (n = numel(h_l)), per block.

    E[v^T J v] = tr(J) for v with independent Rademacher entries (Hutchinson 1990); v^T J v is one
    vector-Jacobian product v^T J (reverse mode) dotted with v. The estimate's standard deviation
    is sqrt(2 sum_{i != j} ((J_ij + J_ji) / 2)^2) / n ~ sqrt(2 / n) times the RMS entry scale of
    J, so with n = B T d in the thousands one or two probes suffice. A residual block
    h + f(h) gives 1 + tr(df) / n; a block without the identity path gives tr(df) / n, ~0 for
    random weights. Cross-token entries of J do not enter the trace.
    """
    with torch.enable_grad():
        inputs = engine.embed(ids).detach().requires_grad_(True)
        _, states = engine.run_embedded(inputs)
        traces, cosines = [], []
        for lo, hi in itertools.pairwise(states):
            total = frob = 0.0
            for _ in range(probes):
                v = (torch.randint(0, 2, hi.shape, generator=generator) * 2 - 1).to(hi)
                (vjp,) = torch.autograd.grad(hi, lo, grad_outputs=v, retain_graph=True)
                total += float((vjp.detach().double() * v.double()).sum())
                frob += float(vjp.detach().double().pow(2).sum())
            n = lo.numel()
            traces.append(total / probes / n)
            gain = math.sqrt(frob / probes / n)  # ||J||_F / sqrt(n): E||J^T v||^2 = ||J||_F^2
            cosines.append(traces[-1] / gain if gain > 0 else 0.0)
    return {"traces": traces, "cosines": cosines}


def _rate(ratio: float, layers: int) -> float:
    if not ratio > 0 or not math.isfinite(ratio):
        return float("nan") if math.isnan(ratio) else (0.0 if ratio <= 0 else float("inf"))
    return ratio ** (1.0 / max(layers, 1))


@register_check("depth.gradients", kind="dynamic", manual_rows=(7,),
                families=("residual", "norm"), source=SOURCE_DEPTH)
def depth_gradients(subject: Subject) -> list[Finding]:
    """Gradient norms and Jacobian gain against depth: vanishing or exploding per layer.

    Probe: random tokens (batch ``options.batch``, length min(probe_len, 64)); L = the next-token
    cross-entropy (natural log) of the model's logits; g_l = ||dL/dh_l||_F for the streams
    h_0 (entering block 1) .. h_L (leaving block L), one reverse pass; J_l = RMS gain of
    d h_l / d h_0 (:func:`depth_measurements`: one VJP with a Gaussian probe per layer, on the
    first row's first 32 tokens). Judged per layer, so depths compare: the gradient rate
    rho_g = (g_0 / g_L)^(1/L) and the Jacobian rate rho_J = J_L^(1/L); WARNING when either is
    outside [1/10, 10] (|log rho| > log 10 = 2.30).

    Sweep (docs/doctor_sweeps.md (H5); project models Llama-like (RMSNorm, SwiGLU, RoPE, GQA) and
    GPT-2-like (LayerNorm, GELU, learned positions, N(0, 0.02^2) init), Pre- and Post-LN, depths
    2, 6, 12, probe_len 32): healthy random init (3 seeds, 36 models) max |log rho| 1.16
    (GPT-2-like Post-LN depth 2: the first norm rescales the 0.02-scale embedding); briefly
    trained (60 Adam steps, 12 models) max 0.42; transformers checkpoints (random and 150-step
    trained Llama / GPT-2 / Gemma, both engines) max 1.13; residual.dropped planted: GPT-2-like
    min 3.41 (6 of 6 flagged), Llama-like 0.04-0.67 (not flagged: the RMSNorm at every block
    input restores the stream's scale, so nothing vanishes; ``depth.residual-path`` and
    ``norm.placement-probe`` flag it). Threshold log 10 = 2.30, between 1.16 and 3.41.
    """
    engine = subject.need_engine()
    if engine.vocab_size is None:
        raise NotApplicable("the loss needs token ids (a vector-input model)")
    ids = _token_probe(subject, "depth.gradients")
    m = depth_measurements(engine, ids, subject.generator("depth.gradients.probe"))
    g, j = m["gradients"], m["jacobian"]
    layers = len(g) - 1
    subject.figure("depth.gradients", {"norms": g})
    subject.figure("depth.jacobian", {"norms": j})
    rho_g = _rate(g[0] / g[-1] if g[-1] > 0 else float("inf"), layers)
    rho_j = _rate(j[-1], layers)
    band = GRADIENT_RATE_BAND
    findings = []
    for name, rho, what in (("gradient", rho_g, "(||dL/dh_0|| / ||dL/dh_L||)^(1/L)"),
                            ("jacobian", rho_j, "RMS gain of d h_L / d h_0, ^(1/L)")):
        deviation = abs(math.log(rho)) if rho > 0 and math.isfinite(rho) else float("inf")
        if math.isnan(rho):
            deviation = float("nan")
        direction = "vanishes" if rho < 1 else "explodes"
        findings.append(judged(
            "depth.gradients", deviation, math.log(band), "above",
            summary=(f"{name} rate per layer {rho:.3g} ({what}; |log| {deviation:.3g}, band "
                     f"[1/{band:g}, {band:g}]) over {layers} layers"
                     + (f": the {name} {direction} with depth"
                        if beyond(deviation, math.log(band), "above") else "")),
            subject=name,
            meaning=("the signal through the stack shrinks or grows geometrically with depth, so "
                     "the early layers get no (or an unusable) training signal (manual row 7)"),
            fix=("check that every block adds its branch to the stream (x + f(x)) and where the "
                 "norms sit (Pre-LN keeps an identity path); use Pre-LN, warmup, or scaled "
                 "residual branches"),
            source=SOURCE_DEPTH,
            details={"gradient_norms": g, "jacobian_gain": j, "rate": rho, "loss": m["loss"][0],
                     "estimator": "VJP with one N(0, I) probe per layer: "
                                  "sqrt(||J^T u||^2 / n)"}))
    return findings


@register_check("depth.residual-path", kind="dynamic", manual_rows=(7,),
                families=("residual",), source=SOURCE_DEPTH)
def residual_path(subject: Subject) -> list[Finding]:
    """Each block's Jacobian J = d h_{l+1} / d h_l must contain the identity (h + f(h)).

    Measured per block on a random-token probe (:func:`block_traces`, 2 Rademacher probes): the
    trace tr(J) / n = <J, I> / n and the cosine <J, I> / (||J||_F ||I||_F) (tr(J) / n over the
    RMS gain ||J||_F / sqrt(n)). A Pre-LN block I + df has trace ~1 (its cosine falls when the
    branch is large next to a small stream); a Post-LN block N(h + f h) has J = dN (I + df),
    whose trace shrinks by the norm's 1 / sigma but whose cosine stays ~1; without the identity
    path both are ~tr(df) / n ~ 0. The identity score of a block is max(trace, cosine); WARNING
    (a statistical indicator: ``norm.placement-probe`` is the structural ERROR) when the smallest
    over blocks is below 0.15. Probe: the first row's first 32 tokens (n = 32 d numbers).

    Sweep (docs/doctor_sweeps.md (H5); the models of :func:`depth_gradients`): healthy random
    init (36 models) min score 0.956 (trace: Pre-LN >= 0.99, Post-LN >= 0.89); briefly trained
    project models (12) min 0.897 (the trace falls to 0.42 in Post-LN, the cosine to 0.675 in
    Pre-LN GPT-2 block 0, never both); transformers checkpoints: min 0.59 (the 150-step trained
    GPT-2, block 0: trace 0.59, cosine 0.13; in a Pre-LN block df = d f / d N * dN / dh is
    amplified by 1 / sigma(h), and the 0.02-scale embedding makes sigma small); residual.dropped
    planted (32 models over three runs): scores in [-0.038, 0.024]. Threshold 0.15: 4x below
    the lowest healthy score, 6x above the highest planted one.
    """
    engine = subject.need_engine()
    if engine.vocab_size is None:
        raise NotApplicable("the probe needs token ids (a vector-input model)")
    ids = _token_probe(subject, "depth.residual-path")
    m = block_traces(engine, _jacobian_probe(ids),
                     subject.generator("depth.residual-path.probe"))
    scores = [max(t, c) for t, c in zip(m["traces"], m["cosines"], strict=True)]
    worst = min(range(len(scores)), key=lambda i: -math.inf if math.isnan(scores[i])
                else scores[i])
    return [judged(
        "depth.residual-path", scores[worst], RESIDUAL_SCORE_MIN, "below",
        summary=(f"block {worst}: identity score {scores[worst]:.3g} (tr(J)/n "
                 f"{m['traces'][worst]:.3g}, cosine(J, I) {m['cosines'][worst]:.3g}; J = "
                 f"d h_(l+1) / d h_l, Hutchinson with 2 Rademacher probes; ~1 with an identity "
                 f"path, ~0 without); all blocks: " + ", ".join(f"{t:.2f}" for t in scores)),
        subject=f"block {worst}",
        meaning=("the block's output does not contain its input: the identity (residual) path "
                 "is missing, so signals and gradients pass only through the sublayers and "
                 "vanish or explode with depth (000 §8.3.7 反面)"),
        fix="return h + f(h) (Pre-LN: h + f(N h); Post-LN: N(h + f h)), not f(h)",
        source=SOURCE_DEPTH, details={"scores": scores, **m})]


# ------------------------------------------------------------------ norm.statistics
def _norm_kind(module: nn.Module) -> str | None:
    name = type(module).__name__
    if name.endswith("LayerNorm"):
        return "layernorm"
    if name.endswith("RMSNorm"):
        return "rmsnorm"
    return None


def _norm_eps(module: nn.Module) -> float | None:
    for attr in ("eps", "variance_epsilon", "epsilon"):
        value = getattr(module, attr, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _dtype_of(module: nn.Module) -> torch.dtype:
    for p in module.parameters(recurse=False):
        return p.dtype
    return torch.float32


@torch.no_grad()
def _measured_affine(module: nn.Module, d: int, dtype: torch.dtype, device: torch.device
                     ) -> tuple[Tensor, Tensor]:
    """(gain, shift) per channel, measured by calling the module on +-x with x of per-token
    mean 0 and mean square 1 (alternating +-1, a zero last entry rescaled for odd d), where
    LayerNorm and RMSNorm (with or without centring) agree: N(x) = g x / sqrt(1 + eps) + b, so
    g = sqrt(1 + eps) (N(x) - N(-x)) / (2 x) and b = (N(x) + N(-x)) / 2.
    Reading the affine part off the module instead of its parameter names covers every storage
    convention (Gemma's 1 + w in ``transformers``; the project's adapters store the gain g = 1 + w
    itself, added on load)."""
    x = torch.ones(d, dtype=torch.float64)
    x[1::2] = -1.0
    if d % 2:
        x[-1] = 0.0
        x = x * math.sqrt(d / (d - 1)) if d > 1 else x
    probe = torch.stack([x, -x]).unsqueeze(0).to(device=device, dtype=dtype)  # (1, 2, d)
    y = module(probe).double().cpu()[0]
    rescale = math.sqrt(1.0 + (_norm_eps(module) or 0.0))  # the probe's s / (s + eps), s = 1
    gain = (y[0] - y[1]) / (2 * torch.where(x == 0, torch.ones_like(x), x)) * rescale
    shift = (y[0] + y[1]) / 2
    if d % 2:  # the zero entry's gain is unknown: probe it alone with a shifted pattern
        z = torch.zeros(d, dtype=torch.float64)
        z[-1], z[0] = 1.0, -1.0
        z = z * math.sqrt(d / 2)
        probe2 = torch.stack([z, -z]).unsqueeze(0).to(device=device, dtype=dtype)
        y2 = module(probe2).double().cpu()[0]
        gain[-1] = (y2[0, -1] - y2[1, -1]) / (2 * z[-1]) * rescale
    return gain, shift


def _norm_modules(engine: Engine) -> list[tuple[str, nn.Module, str]]:
    model = getattr(engine, "model", None)
    if not isinstance(model, nn.Module):
        raise NotApplicable("the engine exposes no torch module to hook")
    found = []
    for name, module in model.named_modules():
        kind = _norm_kind(module)
        if kind is not None:
            found.append((name, module, kind))
    return found


def norm_deviations(engine: Engine, ids: Tensor) -> list[dict[str, Any]]:
    """Per norm module (its first call on ``ids``): the largest per-token deviation of the
    affine-free output z = (y - b) / g from mean 0 (LayerNorm) and from the variance (LayerNorm)
    or mean square (RMSNorm) s / (s + eps) that eps implies (s: the input's variance or mean
    square). Channels are all kept; a module with a gain below 1e-4 of its largest (not
    invertible) is reported with ``skipped``."""
    modules = _norm_modules(engine)
    if not modules:
        raise NotApplicable("no LayerNorm / RMSNorm module found")
    seen: dict[str, tuple[Tensor, Tensor]] = {}
    affine: dict[str, tuple[Tensor, Tensor]] = {}
    for name, module, _ in modules:
        d = _width(module)
        if d is None:
            continue
        p = next(module.parameters(), None)
        device = p.device if p is not None else torch.device("cpu")
        affine[name] = _measured_affine(module, d, _dtype_of(module), device)

    def recorder(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if name not in seen and args and isinstance(args[0], Tensor) and isinstance(
                    output, Tensor):
                seen[name] = (args[0].detach(), output.detach())
        return hook

    handles = [m.register_forward_hook(recorder(n)) for n, m, _ in modules if n in affine]
    try:
        engine.logits(ids)
    finally:
        for handle in handles:
            handle.remove()
    rows = []
    for name, module, kind in modules:
        if name not in seen or name not in affine:
            continue
        x, y = seen[name]
        gain, shift = affine[name]
        eps = _norm_eps(module)
        row: dict[str, Any] = {"module": name, "kind": kind, "class": type(module).__name__,
                               "eps": eps, "dtype": str(y.dtype).replace("torch.", "")}
        if not bool(gain.abs().min() > 1e-4 * gain.abs().max()):
            rows.append({**row, "deviation": float("nan"), "skipped": "a gain is ~0"})
            continue
        xd = x.double().cpu().reshape(-1, x.shape[-1])
        z = (y.double().cpu().reshape(-1, y.shape[-1]) - shift) / gain
        e = 0.0 if eps is None else eps
        if kind == "layernorm":
            s = xd.var(dim=-1, unbiased=False)
            mean = z.mean(dim=-1)
            second = z.var(dim=-1, unbiased=False)
            mean_dev = float(mean.abs().max())
        else:
            s = xd.pow(2).mean(dim=-1)
            second = z.pow(2).mean(dim=-1)
            mean_dev = 0.0
        expected = s / (s + e)
        second_dev = float((second - expected).abs().max())
        rows.append({**row, "deviation": max(mean_dev, second_dev), "mean_dev": mean_dev,
                     "second_dev": second_dev,
                     "low_precision": y.dtype not in (torch.float32, torch.float64)})
    return rows


def _width(module: nn.Module) -> int | None:
    for attr in ("dim", "normalized_shape", "hidden_size"):
        value = getattr(module, attr, None)
        if isinstance(value, int) and value > 0:
            return value
        if isinstance(value, tuple | list) and len(value) == 1 and isinstance(value[0], int):
            return int(value[0])
    weight = getattr(module, "weight", None)
    if isinstance(weight, Tensor) and weight.dim() == 1:
        return int(weight.shape[0])
    return None


@register_check("norm.statistics", kind="dynamic", manual_rows=(7,), families=("norm",),
                source=SOURCE_NORM)
def norm_statistics(subject: Subject) -> list[Finding]:
    """LayerNorm / RMSNorm outputs, affine part removed, have mean 0 and variance (mean square) 1.

    The norm modules are found by class name (``...LayerNorm``, ``...RMSNorm``: the project's
    ``nn.norms`` classes, ``torch.nn.LayerNorm``, transformers' ``LlamaRMSNorm`` ...); torch
    forward hooks record each one's input x and output y on a random-token probe; the affine
    part (gain g, shift b) is measured on the module (:func:`_measured_affine`), so
    z = (y - b) / g should satisfy per token: mean(z) = 0 and var(z) = s / (s + eps), s = var(x)
    (LayerNorm), or mean(z^2) = s / (s + eps), s = mean(x^2) (RMSNorm). Measured: the largest
    deviation over tokens and modules; ERROR above 1e-3 (float32 outputs; 5e-2 for 16-bit).

    Sweep (docs/doctor_sweeps.md (H5); the models of :func:`depth_gradients`): healthy random
    init (36 models) max 3.4e-7, briefly trained (12) max 4.7e-7, transformers checkpoints
    (Llama, GPT-2, Gemma with its 1 + w gains, random and trained, both engines) max 3.7e-7;
    norm.layernorm-no-centering planted (LayerNorm models): min 0.41 over 6 + 4 models (the
    token mean left in, ~1/sqrt(d) of the scale per token; at d = 768 still ~0.04-0.1);
    inert in RMSNorm models. Threshold 1e-3.
    """
    engine = subject.need_engine()
    if engine.vocab_size is None:
        raise NotApplicable("the probe needs token ids (a vector-input model)")
    ids = _token_probe(subject, "norm.statistics")
    rows = norm_deviations(engine, ids)
    judged_rows = [r for r in rows if not math.isnan(r["deviation"])]
    if not judged_rows:
        raise NotApplicable("no norm module could be measured (gains ~0 or no calls)")
    worst = max(judged_rows, key=lambda r: r["deviation"])
    tol = NORM_TOLERANCE_LOW if worst["low_precision"] else NORM_TOLERANCE
    what = "mean 0 and variance" if worst["kind"] == "layernorm" else "mean square"
    return [judged(
        "norm.statistics", worst["deviation"], tol, "above", bad=Severity.ERROR,
        summary=(f"{worst['module']} ({worst['class']}): output without its affine part is "
                 f"off {what} s/(s+eps) by {worst['deviation']:.3g} (largest over tokens; "
                 f"mean {worst.get('mean_dev', 0.0):.3g}, second moment "
                 f"{worst.get('second_dev', 0.0):.3g}); {len(judged_rows)} norm modules"),
        subject=worst["module"],
        meaning=("the normalisation does not compute what its class says: a LayerNorm that does "
                 "not centre keeps the token's mean (not shift-invariant), an RMSNorm that "
                 "centres or a wrong eps / axis changes every downstream activation"),
        fix=("LayerNorm: (x - mean) / sqrt(var + eps) * g + b over the last axis; RMSNorm: "
             "x / sqrt(mean(x^2) + eps) * g"),
        source=SOURCE_NORM,
        details={"modules": rows})]


# ------------------------------------------------------------------ norm.placement-probe
def _relative(a: Tensor, b: Tensor) -> float:
    scale = max(float(a.double().norm()), float(b.double().norm()), 1e-30)
    return float((a.double() - b.double()).norm()) / scale


def _hypotheses(h: Tensor, out: Tensor, branch: Tensor, norm: nn.Module) -> dict[str, float]:
    """How far the sublayer's output ``out`` is from each candidate computation, given its input
    ``h`` and the branch output f (read at the hook)."""
    with torch.no_grad():
        return {"pre": _relative(out, h + branch), "post": _relative(out, norm(h + branch)),
                "pre, no residual": _relative(out, branch),
                "post, no residual": _relative(out, norm(branch))}


def placement_errors(engine: ProjectEngine, ids: Tensor) -> list[dict[str, Any]]:
    """Per sublayer of every block: the relative error of each hypothesis (pre / post, with or
    without the residual) in explaining the sublayer's output from its input and its branch,
    read at the hook points ``hook_resid_pre``, ``hook_attn_out``, ``hook_resid_mid``,
    ``hook_ffn_out``, ``hook_resid_post``."""
    from transformer_math.nn.hooks import run_with_cache

    model = engine.model
    _, cache = run_with_cache(model, ids, names=[
        f"layers.*.hook_{point}" for point in ("resid_pre", "attn_out", "resid_mid", "ffn_out",
                                               "resid_post")])
    rows = []
    for i, layer in enumerate(model.layers):
        p = f"layers.{i}."
        h = cache[p + "hook_resid_pre"]
        steps = []
        if layer.attn is not None:
            steps.append(("attention", layer.attn_norm, p + "hook_attn_out",
                          p + "hook_resid_mid"))
        if layer.cross_attn is not None:
            raise NotApplicable("cross-attention blocks need a memory the probe does not give")
        if layer.ffn is not None:
            steps.append(("ffn", layer.ffn_norm, p + "hook_ffn_out", p + "hook_resid_post"))
        for sub, norm, branch_name, out_name in steps:
            out = cache[out_name]
            rows.append({"layer": i, "sublayer": sub,
                         "errors": _hypotheses(h, out, cache[branch_name], norm)})
            h = out
    return rows


def _hf_placement_errors(engine: Engine, ids: Tensor) -> list[dict[str, Any]]:
    """transformers engine, pre-norm decoders whose layer is h + attn(N h) + mlp(N h'), read
    with forward hooks on each layer's attention and MLP children (Llama-like ``self_attn`` /
    ``mlp``, GPT-2 ``attn`` / ``mlp``): the block output must equal input + the two branches."""
    layers = getattr(engine, "layers", None)
    if layers is None:
        raise NotApplicable("the engine exposes no decoder layers")
    record: dict[str, Tensor] = {}

    def keep(key: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            value = output[0] if isinstance(output, tuple | list) else output
            if isinstance(value, Tensor):
                record[key] = value.detach()
        return hook

    def pre_keep(key: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            value = args[0] if args else kwargs.get("hidden_states")
            if isinstance(value, Tensor):
                record[key] = value.detach()
        return hook

    handles = []
    try:
        for i, layer in enumerate(layers):
            attn = getattr(layer, "self_attn", None) or getattr(layer, "attn", None)
            mlp = getattr(layer, "mlp", None)
            if attn is None or mlp is None or hasattr(layer, "post_feedforward_layernorm"):
                raise NotApplicable(f"layer {i} is not a plain pre-norm decoder layer "
                                    "(self_attn / attn and mlp, no sandwich norms)")
            handles.append(layer.register_forward_pre_hook(pre_keep(f"{i}.in"),
                                                           with_kwargs=True))
            handles.append(layer.register_forward_hook(keep(f"{i}.out")))
            handles.append(attn.register_forward_hook(keep(f"{i}.attn")))
            handles.append(mlp.register_forward_hook(keep(f"{i}.mlp")))
        engine.logits(ids)
    finally:
        for handle in handles:
            handle.remove()
    rows = []
    for i in range(len(layers)):
        keys = [f"{i}.{k}" for k in ("in", "out", "attn", "mlp")]
        if any(k not in record for k in keys):
            raise NotApplicable(f"layer {i}: a sublayer output was not seen by the hooks")
        h, out, a, f = (record[k] for k in keys)
        if a.shape != h.shape or f.shape != h.shape:
            raise NotApplicable(f"layer {i}: sublayer outputs are not stream-shaped")
        rows.append({"layer": i, "sublayer": "block",
                     "errors": {"pre": _relative(out, h + a + f),
                                "pre, no residual": _relative(out, a + f)}})
    return rows


@register_check("norm.placement-probe", kind="dynamic", manual_rows=(7,),
                families=("norm", "residual"), source=SOURCE_DEPTH)
def placement_probe(subject: Subject) -> list[Finding]:
    """The block computes the configured norm placement: Pre-LN h + f(N h), Post-LN N(h + f h).

    Project engine: for every sublayer, from its input h (``hook_resid_pre`` / ``hook_resid_mid``),
    its branch f (``hook_attn_out`` / ``hook_ffn_out``: what the block adds) and its output,
    the relative error ||out - hypothesis|| / max(||out||, ||hypothesis||) of four hypotheses:
    pre (h + f), post (N(h + f)), pre without residual (f), post without residual (N(f)).
    ERROR when the configured placement's error exceeds 1e-4; the summary names the hypothesis
    that fits.
    transformers engine: plain pre-norm decoder layers (Llama-like, GPT-2) only, block output
    = input + attention output + MLP output (forward hooks); other layouts NotApplicable.

    Sweep (docs/doctor_sweeps.md (H5); the models of :func:`depth_gradients`): healthy (36 random,
    12 trained, transformers checkpoints on both engines) error 0 exactly (the hypothesis is the
    block's own arithmetic); norm.pre-ln-as-post-ln planted in Pre-LN models: min 0.152
    (Llama-like; GPT-2-like 0.85-0.91), best fit 'post'; residual.dropped: min 0.80, best fit
    'pre, no residual' / 'post, no residual'. Threshold 1e-4.
    """
    engine = subject.need_engine()
    if engine.vocab_size is None:
        raise NotApplicable("the probe needs token ids (a vector-input model)")
    ids = _token_probe(subject, "norm.placement-probe")
    if isinstance(engine, ProjectEngine):
        configured = engine.config.norm_placement
        rows = placement_errors(engine, ids)
    else:
        configured = "pre"
        rows = _hf_placement_errors(engine, ids)
    worst = max(rows, key=lambda r: r["errors"][configured])
    error = worst["errors"][configured]
    best = min(worst["errors"], key=lambda k: worst["errors"][k])
    where = f"layer {worst['layer']} {worst['sublayer']}"
    return [judged(
        "norm.placement-probe", error, PLACEMENT_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"{where}: the configured {configured}-norm update is off by {error:.3g} "
                 f"(relative); the best-fitting computation is '{best}' "
                 f"({worst['errors'][best]:.3g})"),
        subject=where,
        meaning=("the block does not compute the placement it is configured with: a Pre-LN "
                 "model whose blocks normalise after the residual sum (Post-LN) loses the "
                 "identity path that makes deep Pre-LN stable, a block without the residual sum "
                 "loses it altogether (Xiong et al. 2020)"),
        fix=("Pre-LN: h = h + f(N(h)) per sublayer with a final norm; Post-LN: h = N(h + f(h)); "
             "never h = f(...)"),
        source=SOURCE_DEPTH, details={"configured": configured, "sublayers": rows})]


# ------------------------------------------------------------------ icl.induction
def induction_measurements(engine: Engine, ids: Tensor, half: int) -> dict[str, Any]:
    """On ``ids`` = [x, x] (B, 2 half): per layer and head the previous-token and induction
    scores (``diagnostics.icl_scores``), and the next-token loss per token on the first copy
    (targets 1 .. half - 1) and on the second (targets half + 1 .. 2 half - 1, each a repeat)."""
    records = engine.attention(ids)
    prev = [previous_token_score(r.weights).tolist() for r in records]
    ind = [induction_score(r.weights, half).tolist() for r in records]
    cpu_ids = ids.cpu()  # the same scores on TransformerLens's head-detector scale (every row)
    prev_tl = [transformer_lens_previous_token_score(r.weights).tolist() for r in records]
    ind_tl = [transformer_lens_induction_score(r.weights, cpu_ids).tolist() for r in records]
    logits = engine.logits(ids).float()
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    nll = -logp.gather(-1, ids[:, 1:, None].to(logp.device))[..., 0]  # (B, 2 half - 1)
    first = float(nll[:, :half - 1].mean())
    second = float(nll[:, half:].mean())
    return {"previous_token": prev, "induction": ind, "previous_token_transformer_lens": prev_tl,
            "induction_transformer_lens": ind_tl, "loss_first": first,
            "loss_second": second, "loss_drop": first - second}


def _argmax2(table: list[list[float]]) -> tuple[int, int, float]:
    best = (0, 0, -math.inf)
    for i, row in enumerate(table):
        for j, v in enumerate(row):
            if v > best[2]:
                best = (i, j, v)
    return best


@register_check("icl.induction", kind="dynamic", manual_rows=(4,), families=("icl",),
                source=SOURCE_ICL)
def icl_induction(subject: Subject) -> list[Finding]:
    """Induction heads on repeated random tokens [x, x]: scores per head and the loss drop.

    Probe: x uniform random tokens of length n = min(probe_len, trained length) // 2 (batch
    ``options.batch``), the sequence [x, x]. Per head: previous-token score mean_t A[t, t-1] and
    induction score mean_{t in [n, 2n)} A[t, t-n+1] (Olsson et al. 2022), both also on
    TransformerLens's head-detector scale (``diagnostics.head_detector``: every row counts, so a
    perfect induction head scores 0.5 and a perfect previous-token head (2n - 1) / 2n there; the
    threshold below is on the project's scale); the in-context loss drop = mean next-token loss on
    the first copy minus on the second (nats / token). An induction circuit is present when the best
    head's induction score is >= 0.3 AND the loss drop >= 0.5 nats: OK. Otherwise INFO, never a
    warning: the absence of an induction head is a fact about what the model has learned (a
    random-init model has none), not a bug, and the doctor has no option that states a few-shot use.
    A one-layer model cannot form one (induction needs a previous-token head composed with a later
    head: two layers): INFO for the same reason (a capacity fact the user should know before
    expecting few-shot copying). With ``--context`` beyond the trained length, an INFO says the
    probe and any circuit were measured inside the trained length only (manual row 4, step 3).

    Sweep (docs/doctor_sweeps.md (H5), probe_len 32): random init project models (36) best
    induction score max 0.049 (uniform attention gives ~1/t), loss drop in [-0.04, 0.01];
    briefly trained project models max 0.084; transformers checkpoints trained 150 steps on
    repeated 2..6-token blocks max 0.028 (no induction head yet: INFO); planted positive, the
    project's hand-built 2-layer induction circuit (``experiments.induction_heads``, V = 64,
    n = 16): induction 0.854, previous-token 1.000, loss drop 2.29 nats (OK), and with
    attention.causal-blocks-previous planted 0.044 / 0.000 / -2.05 (INFO). Thresholds 0.3 and
    0.5 nats.
    """
    engine = subject.need_engine()
    if engine.vocab_size is None:
        raise NotApplicable("the probe needs token ids (a vector-input model)")
    length = min(subject.probe_len, subject.trained_length or subject.probe_len)
    if engine.max_positions is not None:
        length = min(length, engine.max_positions)
    half = length // 2
    if half < 3:
        raise NotApplicable(f"the probe needs at least 6 positions, the model allows {length}")
    x = subject.random_ids("icl.induction", length=half)
    ids = torch.cat([x, x], dim=1)
    m = induction_measurements(engine, ids, half)
    il, ih, ind = _argmax2(m["induction"])
    pl, ph, prev = _argmax2(m["previous_token"])
    drop = m["loss_drop"]
    present = ind >= INDUCTION_MIN and drop >= LOSS_DROP_MIN
    ind_tl = m["induction_transformer_lens"][il][ih]
    prev_tl = m["previous_token_transformer_lens"][pl][ph]
    numbers = (f"best induction score {ind:.3f} (layer {il} head {ih}; threshold "
               f"{INDUCTION_MIN} on this scale, the mean over the second copy; TransformerLens "
               f"head-detector scale {ind_tl:.3f}), best previous-token score {prev:.3f} (layer "
               f"{pl} head {ph}; TransformerLens scale {prev_tl:.3f}), in-context loss drop "
               f"{drop:.3f} "
               f"nats/token (first copy {m['loss_first']:.3f}, second {m['loss_second']:.3f}; "
               f"n = {half})")
    details = {**m, "half": half, "layers": engine.num_layers}
    findings = []
    if present:
        findings.append(Finding(
            "icl.induction", Severity.OK, f"induction circuit present: {numbers}", ind,
            INDUCTION_MIN, "below", subject=f"layer {il} head {ih}",
            meaning="the model copies from context: the second copy is predicted from the first",
            source=SOURCE_ICL, details=details))
    else:
        one_layer = engine.num_layers < 2
        findings.append(Finding(
            "icl.induction", Severity.INFO,
            f"no induction circuit: few-shot copying will not work ({numbers})", ind,
            INDUCTION_MIN, "below", subject=f"layer {il} head {ih}",
            meaning=("no head attends from a repeated token to the token that followed its "
                     "earlier occurrence, and the repeat is not predicted better: in-context "
                     "(few-shot) copying does not work yet (manual row 4)"
                     + ("; a one-layer model cannot form an induction head at all (it needs a "
                        "previous-token head composed with a later head: two layers, Olsson et "
                        "al. 2022)" if one_layer else "")),
            fix=("needs >= 2 layers and training with repeated structure (natural text has it; "
                 "induction heads form in a phase change early in training)"),
            source=SOURCE_ICL, details=details))
    trained, target = subject.trained_length, subject.options.context
    if target is not None and trained is not None and target > trained:
        findings.append(Finding(
            "icl.induction", Severity.INFO,
            f"the target context {target} is past the trained length {trained}: the induction "
            f"probe ran at {2 * half} tokens, inside what was trained; copying from beyond "
            f"{trained} tokens back was never trained", float(target), float(trained), "above",
            subject="context",
            meaning="an induction head learned inside the trained length need not attend to "
                    "matches further back than it saw (manual row 2 and row 4 together)",
            fix="check the position checks (rope.*, position.*) and fine-tune at the target "
                "length",
            source=SOURCE_ICL))
    return findings
