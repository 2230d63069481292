"""Doctor checks of the attention layers: saturation, an independent recomputation, causality,
mask coverage, padding invariance and fully masked rows.

Every check probes the model with uniform random token ids from ``subject.generator`` (no
global RNG) and judges what comes out against what softmax attention must give (000 §8.3.1,
boxed definition; Vaswani et al. 2017, eq. 1):

    A = softmax(Q K^T / sqrt(d_k) + M),   out = A V,

with M = 0 on the allowed keys (j <= i for a causal model; additionally i - W < j for a sliding
window W; real tokens only under padding) and -inf elsewhere, so that A is row-stochastic, zero
off the allowed set, and the output at position i is a function of the tokens at allowed
positions only.

The reference quantities of this module (the masks, the grouped-query head map h -> h // (H /
H_kv), the scale, the softmax, the ALiBi slopes) are written here from the papers, never
imported from the library code the model runs: a planted bug there (``transformer_math.bugs``)
must not move the reference too.

Checks (name: what is measured; severity when beyond the threshold):

- ``attention.saturation`` (manual row 1, 000:1665; §8.3.1 "为什么除以 sqrt(d_k)"): per layer
  and head the row-wise logit spread, max weight, normalised entropy and softmax Jacobian norm
  ||diag(p) - p p^T||_2; WARNING when most heads are saturated (near one-hot rows: the softmax
  Jacobian, hence the gradient through attention, vanishes).
- ``attention.recompute`` (project engine): softmax(q k^T * scale + M) v from the hooked q, k,
  v against the model's ``hook_z`` (the output the user gets) and ``hook_pattern`` (the weights
  it reports); ERROR beyond rounding.
- ``attention.causal-leakage``: changing token j must not change outputs at positions < j in
  a causal model (ERROR), and must change them in a bidirectional one (ERROR: an implicit
  causal mask).
- ``attention.mask-coverage``: weights zero on forbidden keys, nonzero on every allowed
  (query, key) cell in at least one head, rows summing to 1 (ERROR).
- ``attention.padding``: left- and right-padded rows give the logits of the unpadded sequence
  on their real tokens (ERROR).
- ``attention.masked-rows``: query rows with no allowed key (left padding, a fully padded row)
  give finite outputs and leave the other rows unchanged (ERROR for NaN/inf); on the project
  engine also a large-but-finite-logit probe (softmax overflow).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from transformer_math.diagnostics.attention_stats import attention_entropy
from transformer_math.doctor.checks import DYNAMIC, NotApplicable, Subject, register_check
from transformer_math.doctor.engines import (
    AttentionRecord,
    Engine,
    ProjectEngine,
    logits_from_weights,
)
from transformer_math.doctor.findings import Finding, Severity, judged

SOURCE_SOFTMAX = "000 §8.3.1 (softmax attention, scaling by sqrt(d_k)); Vaswani et al. 2017 eq. 1"
SOURCE_SATURATION = ("000:1665 (manual row 1: loss stuck, softmax saturated), 000 §8.3.1 "
                     "(Var(q.k / sqrt(d_k)) = sigma_q^2 sigma_k^2; softmax Jacobian "
                     "diag(p) - p p^T); Zhai et al. 2023 (attention entropy collapse)")
SOURCE_CAUSAL = "000 §8.3.1 因果掩码 (M_ij = -inf for j > i, added before the softmax)"
SOURCE_PADDING = ("000 §8.3.1 因果掩码 and padding masks; HF attention_mask convention (1 = token),"
                  " positions cumsum(mask) - 1 (transformers generate)")

PROBE_MAX = 64
"""Longest probe used by these checks (speed on a 100M model: a few forward passes of 2 x 64)."""

TILED_PROBE = 160
"""Probe length for the ``tiled`` backend: longer than its 128-key tile, so that the online
softmax merges two key tiles (with one tile the rescaling rule is never exercised)."""

# ---------------------------------------------------------------------------- thresholds
# Each threshold was set once from the sweep recorded in docs/doctor_sweeps.md, H3 (summarised in
# each check's docstring).
SATURATED_MAX_WEIGHT = 0.9
"""A head is saturated when the mean over its rows (>= 4 allowed keys) of the largest weight
exceeds this."""
POSITIONAL_HEAD = 0.5
"""A sharp head whose argmax key is at one offset or one position in more than this fraction of
rows is positional (a learned previous-token head or sink), not saturated."""
SATURATED_JACOBIAN = 0.03
"""A sharp content head is saturated (not merely sharp) when the mean softmax-Jacobian norm of
its rows is below this: the gradient through its softmax is then a few percent of what a
two-key row passes (1/2). Set by the lead's sweep (probe 2 x 32): W_Q, W_K x30 at init
0.005-0.017 (llama-like and GPT-2-like, seeds 0, 1); x10 at init 0.053-0.097; a Llama trained
600 steps at lr 1e-2 on copying (loss 2.90) 0.087; GPT-2 trained alike 0.18. Sharp heads are
what a trained model is made of (a copy head on its task), so sharpness alone is INFO."""
SATURATED_HEAD_FRACTION = 0.5
"""attention.saturation warns when more than this fraction of all heads is saturated."""
RECOMPUTE_TOL = 1e-4
"""attention.recompute: max |out - ref| / max |ref| (and max |pattern - ref|) in float32."""
RECOMPUTE_TOL_LOW = 3e-2
"""The same in float16 / bfloat16 (rounding of the output to the model's dtype)."""
LEAK_TOL = 1e-5
"""attention.causal-leakage: max |logit change| / max |logit| at positions before the change."""
BIDIRECTIONAL_MIN = 1e-4
"""attention.causal-leakage (bidirectional): earlier outputs must change by more than this."""
FORBIDDEN_TOL = 1e-6
"""attention.mask-coverage: largest weight on a forbidden key."""
BLOCKED_LOGIT = -1e4
"""attention.mask-coverage: a pre-softmax logit at or below this is the mask's blocking value
(-inf; HF's finfo.min, -65504 in float16), not a logit of the model."""
ROW_SUM_TOL = 1e-4
"""attention.mask-coverage: max |row sum - 1| over rows with an allowed key."""
ROW_SUM_TOL_LOW = 2e-2
"""The same for float16 / bfloat16 models (healthy: 2.4e-4 / 2.0e-3)."""
PADDING_TOL = 1e-4
"""attention.padding: max |padded - unpadded| / max |unpadded| on the real tokens."""
PADDING_TOL_LOW = 5e-2
"""The same for float16 / bfloat16 models (healthy: 1.1e-3 / 7.8e-3: other sequence lengths
round differently)."""
LARGE_LOGIT = 1000.0
"""attention.masked-rows: the largest logit of the overflow probe (finite; exp overflows past
~88 in float32 without the max shift)."""


# ---------------------------------------------------------------------------- shared helpers
def allowed_keys(t: int, s: int, *, causal: bool, window: int | None = None) -> Tensor:
    """Boolean (t, s): query i (absolute position s - t + i) may attend to key j.

    Causal: j <= s - t + i (queries are the last t positions); sliding window W additionally
    s - t + i - W < j (the W most recent keys, the query's own included; Mistral's convention).
    Written independently of ``functional.masks``."""
    rows = torch.arange(t).unsqueeze(1) + (s - t)
    cols = torch.arange(s).unsqueeze(0)
    allowed = torch.ones(t, s, dtype=torch.bool)
    if causal:
        allowed = allowed & (cols <= rows)
        if window is not None:
            allowed = allowed & (cols > rows - window)
    return allowed


def _window(subject: Subject) -> int | None:
    config = subject.config
    return None if config is None else getattr(config, "sliding_window", None)


def _probe_len(subject: Subject, engine: Engine, longest: int = PROBE_MAX) -> int:
    t = min(subject.probe_len, longest)
    if engine.max_positions is not None:
        t = min(t, engine.max_positions)
    if t < 4:
        raise NotApplicable(f"probe length {t} is too short for the attention probes (>= 4)")
    return t


def _records(subject: Subject, t: int) -> tuple[Tensor, list[AttentionRecord]]:
    """The standard random probe and the engine's attention records on it (shared)."""
    engine = subject.need_engine()
    if isinstance(engine, ProjectEngine) and any(
            layer.attn is None for layer in engine.model.layers):
        raise NotApplicable("a layer without self-attention (sublayers "
                            f"{engine.config.sublayers!r})")
    ids = subject.random_ids("attention:random", length=t)

    def compute() -> tuple[Tensor, list[AttentionRecord]]:
        return ids, engine.attention(ids)

    return subject.cached(f"attention:random:{id(engine)}:{t}:{ids.shape[0]}", compute)


def _other_tokens(ids: Tensor, vocab: int, g: torch.Generator) -> Tensor:
    """Token ids different from ``ids`` element-wise (uniform over the other vocab - 1)."""
    shift = torch.randint(1, vocab, ids.shape, generator=g)
    return (ids + shift) % vocab


def _rel_diff(a: Tensor, b: Tensor) -> float:
    """max |a - b| / max |b| (NaN or inf in either: inf)."""
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return math.inf
    scale = float(b.abs().max()) if b.numel() else 0.0
    return float((a - b).abs().max()) / max(scale, 1e-12) if b.numel() else 0.0


def _row_std(x: Tensor, allowed: Tensor) -> Tensor:
    """Population std of x over the allowed entries of each row (last axis)."""
    a = allowed.to(x.dtype)
    n = a.sum(-1).clamp_min(1.0)
    x = torch.where(allowed, x, torch.zeros_like(x))
    mean = x.sum(-1) / n
    var = (((x - mean.unsqueeze(-1)) * a) ** 2).sum(-1) / n
    return var.sqrt()


def _low_precision(engine: Engine) -> bool:
    """Whether the engine's model computes in float16 / bfloat16 (its first parameter's dtype;
    False when the engine has no torch model)."""
    model = getattr(engine, "model", None)
    if not isinstance(model, torch.nn.Module):
        return False
    first = next(iter(model.parameters()), None)
    return first is not None and first.dtype in (torch.float16, torch.bfloat16)


def _project_model(subject: Subject, why: str) -> Any:
    engine = subject.need_engine()
    if not isinstance(engine, ProjectEngine):
        raise NotApplicable(f"{why} (needs the project engine's hook points; engine "
                            f"{engine.name!r})")
    return engine.model


def _project_passes(subject: Subject, engine: ProjectEngine, t: int) -> dict[str, Any]:
    """Two hooked passes of the project model, shared by the saturation, recompute and
    mask-coverage checks: the standard random probe (the ids of :func:`_records`) plus one
    copy of its first row left-padded by a quarter of its length (HF mask 0 at the pads), with
    (1) listeners on ``hook_q/k/v/z`` only (the backend computes the output, as for a user) and
    (2) listeners on ``hook_pattern`` (the weights the backend reports) and on that pass's own
    ``hook_q``/``hook_k``."""
    from transformer_math.nn.hooks import run_with_cache

    model = engine.model
    layers = [i for i, layer in enumerate(model.layers) if layer.attn is not None]
    ids = subject.random_ids("attention:random", length=t)

    def compute() -> dict[str, Any]:
        both = torch.cat([ids, ids[:1]])
        mask = torch.ones(both.shape, dtype=torch.long)
        mask[-1, : t // 4] = 0
        dev = engine._device
        qkvz = [f"layers.{i}.attn.hook_{x}" for i in layers for x in ("q", "k", "v", "z")]
        # the weights pass records its own q and k: in bfloat16 the two passes' q and k part
        # by rounding after the first layer (the backends round their outputs differently),
        # enough to move a peaked weight by 0.12 at 8B, head_dim 128 (2026-12-03)
        pattern = [f"layers.{i}.attn.hook_{x}" for i in layers for x in ("pattern", "q", "k")]
        with torch.no_grad():
            _, user = run_with_cache(model, both.to(dev), attention_mask=mask.to(dev),
                                     names=qkvz)
            _, reported = run_with_cache(model, both.to(dev), attention_mask=mask.to(dev),
                                         names=pattern)
        return {"ids": both, "mask": mask, "layers": layers, "batch": ids.shape[0],
                "user": {k: v.cpu() for k, v in user.items()},
                "reported": {k: v.cpu() for k, v in reported.items()}}

    # keyed by the model too: a check of precision.NEEDS_FLOAT32 runs on a float32 copy of a
    # low-precision model and must not read the passes an earlier check made on the original
    return subject.cached(f"attention:project:{id(model)}:{t}:{ids.shape[0]}", compute)


# ---------------------------------------------------------------------------- saturation
def _softmax_jacobian_norm(p: Tensor, steps: int = 40) -> Tensor:
    """||diag(p) - p p^T||_2 per row of p (..., n): the largest eigenvalue of the symmetric
    positive semi-definite softmax Jacobian (000 §8.3.1). Uniform over n keys: 1/n; one-hot: 0
    (the vanishing gradient of a saturated softmax); at most 1/2 (two keys at 1/2 each).

    A rank-one downdate of D = diag(p): the eigenvalues interlace the sorted p (Golub 1973), so
    the largest one lies in [p_(2), p_(1)] and is the root there of the secular equation
    1 - sum_i p_i^2 / (p_i - lambda) = 0, decreasing in lambda on that interval: ``steps``
    bisections in float64 (agrees with ``torch.linalg.eigvalsh`` to 2e-8 on random, peaked and
    tied rows, at 2.5 times less CPU)."""
    p = p.double()
    top2 = p.topk(2, dim=-1).values if p.shape[-1] > 1 else torch.cat(
        [p, torch.zeros_like(p)], dim=-1)
    lo, hi = top2[..., 1:2].clone(), top2[..., 0:1].clone()
    for _ in range(steps):
        mid = (lo + hi) / 2
        f = 1 - (p * p / (p - mid)).sum(-1, keepdim=True)
        above = f > 0  # the root is above mid
        lo = torch.where(above, mid, lo)
        hi = torch.where(above, hi, mid)
    return ((lo + hi) / 2).squeeze(-1).float()


def _positional_concentration(w: Tensor, rows: Tensor) -> list[float]:
    """Per head: the fraction of rows (those selected by ``rows``, every batch element) whose
    most attended key sits at the head's most common offset i - j, or at its most common
    absolute key position, whichever is larger: ~1 for a previous-token head or an attention
    sink, small for a head whose choice depends on the (random) token content."""
    h, t, s = w.shape[1:]
    idx = torch.arange(t)[rows]
    top = w[:, :, rows].argmax(-1)  # (B, H, R)
    offset = idx.view(1, 1, -1) + (s - t) - top
    out = []
    for head in range(h):
        n = top[:, head].numel()
        by_offset = torch.bincount(offset[:, head].reshape(-1).clamp_min(0)).max()
        by_position = torch.bincount(top[:, head].reshape(-1)).max()
        out.append(float(max(by_offset, by_position)) / n)
    return out


def _qk_prediction(subject: Subject, t: int) -> list[list[float]] | None:
    """Per layer and head sigma_q sigma_k sqrt(d_k) * scale (project engine; scale 1/sqrt(d_k)):
    the predicted logit std if q and k were independent with those component stds (000 §8.3.1:
    Var(q.k / sqrt(d_k)) = sigma_q^2 sigma_k^2). sigma_q: RMS of q's components; sigma_k: std
    of k's components over positions (a key offset common to all keys does not spread the
    logits of a row). From the unpadded rows of the shared hooked pass."""
    engine = subject.engine
    if not isinstance(engine, ProjectEngine):
        return None
    run = _project_passes(subject, engine, t)
    b = run["batch"]
    out = []
    for i in run["layers"]:
        q = run["user"][f"layers.{i}.attn.hook_q"][:b].double()
        k = run["user"][f"layers.{i}.attn.hook_k"][:b].double()
        h, h_kv, d_k = q.shape[1], k.shape[1], q.shape[-1]
        group = torch.arange(h) // (h // h_kv)
        sigma_q = q.pow(2).mean(dim=(0, 2, 3)).sqrt()  # (H,)
        sigma_k = k.var(dim=2, unbiased=False).mean(dim=(0, 2)).sqrt()[group]  # (H,)
        scale = 1.0 / math.sqrt(d_k)
        out.append((sigma_q * sigma_k * math.sqrt(d_k) * scale).tolist())
    return out


@register_check("attention.saturation", kind=DYNAMIC, manual_rows=(1,),
                families=("attention.scale-dropped", "attention.scale-as-temperature"),
                source=SOURCE_SATURATION)
def check_saturation(subject: Subject) -> list[Finding]:
    """Softmax saturation per layer and head on a random-token probe (manual row 1).

    Per row i with n_i >= 4 allowed keys: the logit spread (std over the allowed keys of the
    pre-softmax logits: ``record.scores`` when the engine gives them, else log(weights), equal
    up to a per-row constant), the largest weight, the normalised entropy H(a_i) / log n_i and
    the softmax Jacobian norm ||diag(p) - p p^T||_2 (000 §8.3.1, why the logits are divided by
    sqrt(d_k): a one-hot row has Jacobian ~0 and passes no gradient; note the norm is not
    monotone in saturation: a uniform row over n keys has 1/n, two keys at 1/2 have 1/2). A
    head is sharp when its mean max weight exceeds 0.9; a sharp head whose argmax key sits at
    one offset i - j or one position in more than half of the rows is positional (a learned
    previous-token head or attention sink) and is not counted; the other sharp heads are
    sharp content heads, their choice driven by large content logits; a sharp content head is
    saturated when its mean softmax-Jacobian norm is below :data:`SATURATED_JACOBIAN` (0.03).
    INFO when more than half of the heads are sharp content heads; WARNING when more than half
    of all heads are saturated: at initialisation a wrong scale or init (manual row 1: the loss
    stays stuck), in a trained model attention-entropy collapse, which accompanies training
    instability (Zhai et al. 2023). On the project engine the details also give the predicted
    logit std sigma_q sigma_k (Var(q.k / sqrt(d_k)) = sigma_q^2 sigma_k^2 for independent q, k)
    next to the measured spread.

    Sweep (probe 2 x 32, docs/doctor_sweeps.md, H3). Healthy, fraction 0 everywhere: project
    models seeds 0-2 (rope/swiglu and GPT-2-like; largest head mean max weight 0.14), W_Q, W_K
    x3 (0.62) and x5 (0.88), HF Llama / GPT-2 with HF init, with an N(0, 0.15^2) redraw
    (0.64) and briefly trained (tests/doctor/conftest.py, 150 steps: 0.39; 300 steps at lr
    1e-2: fraction 0.125 / 0.25; GPT-2 600 steps: 3 sharp heads, all positional, fraction 0).
    Sharp-head fractions: W_Q, W_K x10: 0.625-1.0 over 3 seeds and both shapes;
    attention.scale-dropped with W_Q, W_K x5: 1.0 / 0.75 (x3: 0, mean max weight 0.87: the
    missing sqrt(d_k) = 2.8 alone does not saturate a model whose logits are O(0.3)). A Llama
    trained 600 steps at lr 1e-2 (loss 4.16 -> 2.90, logit spread 62) gives 0.875 sharp: its
    mean Jacobian norm 0.087 is that of W_Q, W_K x10 (0.053-0.097), so sharpness cannot tell
    a trained model from a mis-scaled one, and the warning needs the Jacobian below 0.03
    (x30: 0.005-0.017, all heads saturated). Threshold: saturated fraction > 0.5.
    """
    engine = subject.need_engine()
    t = _probe_len(subject, engine)
    ids, records = _records(subject, t)
    window = _window(subject)
    spreads: list[list[float]] = []
    entropies: list[list[float]] = []
    max_weights: list[list[float]] = []
    jac_norms: list[list[float]] = []
    positional: list[list[float]] = []
    uses_scores = all(r.scores is not None for r in records)
    for rec in records:
        w = rec.weights.float()
        tt, s = w.shape[-2:]
        allowed = allowed_keys(tt, s, causal=engine.causal, window=window)
        n = allowed.sum(-1)  # (T,)
        rows = n >= 4
        if not bool(rows.any()):
            raise NotApplicable("no query row with 4 or more allowed keys")
        logits = rec.scores.float() if rec.scores is not None else logits_from_weights(w)
        # a key the model blocks although it is allowed (attention.mask-coverage's finding)
        # has no finite logit: it does not enter the spread
        spread = _row_std(logits, allowed.expand_as(w) & torch.isfinite(logits))
        ent = attention_entropy(w, dim=-1) / torch.log(n.clamp_min(2).float())
        mx = w.amax(-1)
        jac = _softmax_jacobian_norm(w[:, :, rows])  # (B, H, rows)

        spreads.append(spread[:, :, rows].mean(dim=(0, 2)).tolist())
        entropies.append(ent[:, :, rows].mean(dim=(0, 2)).tolist())
        max_weights.append(mx[:, :, rows].mean(dim=(0, 2)).tolist())
        jac_norms.append(jac.mean(dim=(0, 2)).tolist())
        positional.append(_positional_concentration(w, rows))
    layers, heads = len(records), len(spreads[0])
    sharp = [(layer, head) for layer in range(layers) for head in range(heads)
             if max_weights[layer][head] > SATURATED_MAX_WEIGHT]
    # a sharp head whose choice is positional (previous token, a sink) is a learned circuit,
    # not a saturated softmax: only content-random sharp heads count
    content = [(layer, head) for layer, head in sharp
               if positional[layer][head] <= POSITIONAL_HEAD]
    learned = [lh for lh in sharp if lh not in content]
    # sharp content heads whose softmax passes almost no gradient: saturated
    saturated = [(layer, head) for layer, head in content
                 if jac_norms[layer][head] < SATURATED_JACOBIAN]
    fraction = len(saturated) / (layers * heads)
    sharp_fraction = len(content) / (layers * heads)
    subject.figure("attention.logit_spread", {"values": spreads, "layers": layers,
                                              "heads": heads})
    subject.figure("attention.entropy", {"values": entropies, "layers": layers, "heads": heads})
    predicted = _qk_prediction(subject, t)
    details: dict[str, Any] = {
        "logit_spread": spreads, "normalised_entropy": entropies, "max_weight": max_weights,
        "jacobian_norm": jac_norms, "saturated_heads": saturated,
        "positional_concentration": positional, "sharp_positional_heads": learned,
        "spread_from": "scores" if uses_scores else "log weights", "probe": list(ids.shape),
        "uniform_jacobian_norm_at_last_row": 1.0 / float(
            allowed_keys(t, t, causal=engine.causal, window=window)[-1].sum()),
    }
    if predicted is not None:
        details["predicted_logit_std"] = predicted
        ratios = [m / p for lm, lp in zip(spreads, predicted, strict=True)
                  for m, p in zip(lm, lp, strict=True) if p > 0]
        details["measured_over_predicted"] = (
            [min(ratios), max(ratios)] if ratios else None)
    all_spread = [x for row in spreads for x in row]
    all_max = [x for row in max_weights for x in row]
    all_jac = [x for row in jac_norms for x in row]
    details["sharp_content_heads"] = content
    finding = judged(
        "attention.saturation", fraction, SATURATED_HEAD_FRACTION, "above",
        bad=Severity.WARNING,
        summary=(f"{len(saturated)} of {layers * heads} heads saturated (mean max weight > "
                 f"{SATURATED_MAX_WEIGHT}, not positional, softmax Jacobian < "
                 f"{SATURATED_JACOBIAN}); {len(content)} sharp content heads, "
                 f"{len(learned)} sharp positional; "
                 f"logit spread {min(all_spread):.3g}.."
                 f"{max(all_spread):.3g}, mean max weight up to {max(all_max):.3g}, softmax "
                 f"Jacobian norm {min(all_jac):.3g}..{max(all_jac):.3g}"),
        meaning=("saturated heads put ~all weight on one key chosen by large content logits: "
                 "the softmax Jacobian diag(p) - p p^T is ~0, so almost no gradient flows "
                 "through them; at the start the loss stays stuck (manual row 1), later it is "
                 "attention-entropy collapse, a sign of unstable training"),
        fix=("check the logit scale (1/sqrt(d_k)), the initialisation of W_Q and W_K and the "
             "embedding scale; QK-norm or a lower init std keeps the logits O(1)"),
        source=SOURCE_SATURATION, details=details)
    if finding.severity is Severity.OK and sharp_fraction > SATURATED_HEAD_FRACTION:
        finding = replace(finding, severity=Severity.INFO, meaning=(
            "most heads are sharp (one key takes most of the weight) but still pass gradient: "
            "normal in a trained model; in a model at initialisation it means the logits are "
            "too large (manual row 1)"))
    return [finding]


# ---------------------------------------------------------------------------- ALiBi (independent)
def alibi_reference_slopes(num_heads: int) -> Tensor:
    """ALiBi slopes (Press et al. 2022, §3): for H a power of two, m_h = 2^(-8 h / H),
    h = 1..H; otherwise the 2^floor(log2 H) slopes of the nearest power of two, followed by the
    odd-indexed slopes of twice that power (m of 2n at h = 1, 3, 5, ...) for the rest."""
    def powers(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    n = 2 ** math.floor(math.log2(num_heads))
    slopes = powers(n)
    if n < num_heads:
        slopes += powers(2 * n)[0::2][: num_heads - n]
    return torch.tensor(slopes, dtype=torch.float64)


# ---------------------------------------------------------------------------- recompute
def reference_attention(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor, scale: float,
                        bias: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(output (B, H, T, D), weights (B, H, T, S), live rows (B, 1|H, T)) of
    softmax(q k_g^T * scale + bias + M) v_g in float64, query head h reading key/value head
    h // (H / H_kv) (grouped-query attention, Ainslie et al. 2023); ``allowed`` broadcastable to
    (B, H, T, S). Rows without an allowed key get zero weights (they are reported apart)."""
    q, k, v = q.double(), k.double(), v.double()
    h, h_kv = q.shape[1], k.shape[1]
    if h % h_kv:
        raise ValueError(f"{h} query heads are not a multiple of {h_kv} key/value heads")
    group = torch.arange(h, device=q.device) // (h // h_kv)
    kk, vv = k[:, group], v[:, group]
    logits = torch.matmul(q, kk.transpose(-1, -2)) * scale
    if bias is not None:
        logits = logits + bias.double()
    allowed = allowed.expand_as(logits)
    live = allowed.any(-1, keepdim=True)
    logits = torch.where(allowed, logits, torch.full_like(logits, -math.inf))
    logits = torch.where(live, logits, torch.zeros_like(logits))
    weights = torch.where(live, torch.softmax(logits, dim=-1), torch.zeros_like(logits))
    return torch.matmul(weights, vv), weights, live.squeeze(-1)


def _weights_against_output(subject: Subject, engine: ProjectEngine, backend: str
                            ) -> list[Finding]:
    """For a backend that is not softmax attention (``linear``: phi(q) phi(k)^T normalised by
    phi(q)^T sum_j phi(k_j), Katharopoulos et al. 2020) there is no softmax to recompute, but
    the weights it reports must still be the ones its output uses: z_h = A_h v_g(h), A from a
    ``hook_pattern``-only pass, z from a pass without a weight listener (the user's path), both
    on the mask-free random probe (the linear backend takes no finite mask). Threshold as the
    softmax recomputation's (1e-4 relative): the zoo's linear model (GPT-2-like, seed 0) gives
    8.6e-8 healthy and 954 with linear-attention.no-normaliser (the output left
    unnormalised)."""
    from transformer_math.nn.hooks import run_with_cache

    model = engine.model
    layers = [i for i, layer in enumerate(model.layers) if layer.attn is not None]
    if not layers:
        raise NotApplicable("the model has no self-attention layers")
    ids = subject.random_ids("attention:random", length=_probe_len(subject, engine))
    dev = engine._device
    with torch.no_grad():
        _, user = run_with_cache(model, ids.to(dev), names=[
            f"layers.{i}.attn.hook_{x}" for i in layers for x in ("v", "z")])
        _, reported = run_with_cache(model, ids.to(dev), names=[
            f"layers.{i}.attn.hook_pattern" for i in layers])
    worst, where = 0.0, ""
    for i in layers:
        v = user[f"layers.{i}.attn.hook_v"].cpu().double()
        z = user[f"layers.{i}.attn.hook_z"].cpu().double()
        a = reported[f"layers.{i}.attn.hook_pattern"].cpu().double()
        group = a.shape[1] // v.shape[1]
        ref = torch.matmul(a, v.repeat_interleave(group, dim=1))  # query head h reads h // g
        err = float((z - ref).abs().max()) / max(float(ref.abs().max()), 1e-30)
        if err > worst or not where:
            worst, where = err, f"layer {i}"
    tol = RECOMPUTE_TOL_LOW if _low_precision(engine) else RECOMPUTE_TOL
    return [judged(
        "attention.recompute", worst, tol, "above", bad=Severity.ERROR, subject=where,
        summary=(f"backend {backend!r} is not softmax attention: its output against its own "
                 f"reported weights times the values is off by {worst:.3g} (relative)"),
        meaning=("the output does not use the weights the backend reports: a normaliser or "
                 "a weight is lost between the two"),
        fix=f"compare the {backend!r} backend's output path with its weight path",
        source="Katharopoulos et al. 2020 (linear attention, eq. 5)")]


@register_check("attention.recompute", kind=DYNAMIC,
                families=("attention.gqa-tiled", "attention.scale-by-dk",
                          "attention.scale-dropped", "attention.scale-by-model-width",
                          "attention.mask-after-softmax", "attention.softmax-wrong-axis",
                          "attention.causal-blocks-previous", "flash.online-softmax-no-rescale",
                          "attention.gqa-kv-heads-ignored", "alibi.odd-head-slopes"),
                source=SOURCE_SOFTMAX)
def check_recompute(subject: Subject) -> list[Finding]:
    """Every layer's attention recomputed from its hooked q, k, v and compared with the model.

    From ``hook_q`` (B, H, T, d_k), ``hook_k``/``hook_v`` (B, H_kv, T, d_k), taken after RoPE
    (the project puts RoPE attention factors such as YaRN's on cos and sin, so they are inside
    q and k already): out_ref = softmax(q k_g^T / sqrt(d_k) + bias + M) v_g in float64, with
    g(h) = h // (H / H_kv), M written here (causal, sliding window, key padding), bias the ALiBi
    -m_h |i - j| with slopes from Press et al. 2022. Compared with ``hook_z`` of a pass with no
    weight listener (the backend's own output: what the user gets; the ``tiled`` backend is
    probed with 160 tokens so that two key tiles merge) and with ``hook_pattern`` of a second
    pass (the reported weights), against softmax of that pass's own hooked q and k. Rows with
    no allowed key (left padding's pad queries) are compared apart: the project's contract
    gives them zero output; finite values there are reported as info only (HF's convention:
    uniform weights). Also: the key heads of the model
    must be the configured H_kv.

    The probe (2 random rows + 1 left-padded copy) passes an attention_mask, so the output path
    is the backend's masked one (the mask-free fast path is covered by the causal and padding
    checks).

    Sweep (docs/doctor_sweeps.md, H3): healthy float32 models (rope/swiglu and GPT-2-like, seeds
    0-2; sdpa / reference / tiled backends; MHA, MQA; ALiBi with 3 and 4 heads; sliding
    window; HF Llama, GPT-2, Qwen2, Mistral, Gemma, Phi-3 checkpoints loaded by the project,
    random and trained): largest error 4.1e-7; float16 / bfloat16 models: <= 2.9e-3.
    Planted (both shapes): flash.online-softmax-no-rescale 0.017, attention.scale-by-model-
    width 0.12, scale-by-dk 0.16, alibi.odd-head-slopes 0.49, scale-dropped 0.45,
    causal-blocks-previous 0.64, scale-as-temperature 0.88, mask-after-softmax and
    softmax-wrong-axis 0.98, padding-mask-inverted 1.0, gqa-tiled 1.45 (bfloat16: >= 0.18).
    Threshold 1e-4 (3e-2 for float16 / bfloat16).
    """
    model = _project_model(subject, "recomputation from hooked q, k, v")
    engine = subject.engine
    assert isinstance(engine, ProjectEngine)
    from transformer_math.functional.attention import ATTENTION_BACKENDS

    config = engine.config
    backend = config.attention_backend
    meta = ATTENTION_BACKENDS.metadata(backend)
    if not meta["exact"]:
        return _weights_against_output(subject, engine, backend)
    if config.position not in ("rope", "learned", "sinusoidal", "none", "alibi"):
        raise NotApplicable(f"position {config.position!r} adds a learned bias to the logits "
                            "that is not recomputed here")
    layers = [i for i, layer in enumerate(model.layers) if layer.attn is not None]
    if not layers:
        raise NotApplicable("the model has no self-attention layers")
    t = _probe_len(subject, engine)
    if backend == "tiled":  # two key tiles, whatever the probe length asked for
        t = TILED_PROBE if engine.max_positions is None else min(TILED_PROBE,
                                                                 engine.max_positions)
    run = _project_passes(subject, engine, t)
    ids, mask, user, reported = run["ids"], run["mask"], run["user"], run["reported"]
    allowed = (allowed_keys(t, t, causal=engine.causal, window=config.sliding_window)
               .view(1, 1, t, t) & mask.bool().view(-1, 1, 1, t))
    tol = RECOMPUTE_TOL_LOW if _low_precision(engine) else RECOMPUTE_TOL
    per_layer: list[dict[str, Any]] = []
    structural: list[str] = []
    dead_diff = 0.0
    for i in layers:
        attn = model.layers[i].attn
        q = user[f"layers.{i}.attn.hook_q"].cpu()
        k = user[f"layers.{i}.attn.hook_k"].cpu()
        v = user[f"layers.{i}.attn.hook_v"].cpu()
        z = user[f"layers.{i}.attn.hook_z"].cpu().double()
        pattern = reported[f"layers.{i}.attn.hook_pattern"].cpu().double()
        if k.shape[1] != config.kv_heads:
            structural.append(f"layer {i}: {k.shape[1]} key/value heads, config says "
                              f"{config.kv_heads}")
        d_k = q.shape[-1]
        scale = 1.0 / math.sqrt(d_k)
        if attn.scale_fn is not None:  # a length-dependent scale set on the module itself
            scale = float(attn.scale_fn(d_k, k.shape[-2]))
        bias = None
        if config.position == "alibi":
            pos = torch.arange(t, dtype=torch.float64)
            bias = (-alibi_reference_slopes(q.shape[1]).view(1, -1, 1, 1)
                    * (pos.view(-1, 1) - pos.view(1, -1)).abs())
        ref, _, live = reference_attention(q, k, v, allowed, scale, bias)
        _, weights, _ = reference_attention(reported[f"layers.{i}.attn.hook_q"].cpu(),
                                            reported[f"layers.{i}.attn.hook_k"].cpu(), v,
                                            allowed, scale, bias)
        live4 = live.unsqueeze(-1).expand_as(ref)
        out_err = _rel_diff(z[live4].view(-1), ref[live4].view(-1))
        livew = live.unsqueeze(-1).expand_as(weights)
        pat_err = (math.inf if not torch.isfinite(pattern[livew]).all()
                   else float((pattern[livew] - weights[livew]).abs().max()))
        dead = ~live4
        if bool(dead.any()):
            dz = z[dead]
            dead_diff = max(dead_diff, math.inf if not torch.isfinite(dz).all()
                            else float(dz.abs().max()))
        per_layer.append({"layer": i, "output_rel_err": out_err, "pattern_abs_err": pat_err})
    worst = max(max(p["output_rel_err"], p["pattern_abs_err"]) for p in per_layer)
    worst_out = max(p["output_rel_err"] for p in per_layer)
    worst_pat = max(p["pattern_abs_err"] for p in per_layer)
    details = {"layers": per_layer, "backend": backend, "probe": [int(ids.shape[0]), t],
               "left_padded_rows": 1, "tolerance": tol, "scale": "1/sqrt(d_k)",
               "dead_rows_max_abs_output": dead_diff}
    findings = [judged(
        "attention.recompute", worst, tol, "above", bad=Severity.ERROR,
        summary=(f"attention recomputed from hooked q, k, v: output rel. error {worst_out:.3g},"
                 f" pattern error {worst_pat:.3g} (backend {backend!r})"),
        meaning=("the model does not compute softmax(q k^T / sqrt(d_k) + M) v with grouped "
                 "key/value heads: a wrong scale, head pairing, mask or normalisation (the "
                 "per-layer errors say whether the output, the reported weights, or both)"),
        fix=("compare the layer's code with Vaswani et al. eq. 1: scale 1/sqrt(d_k), mask "
             "added before a softmax over the keys, kv head h // (H / H_kv) (repeat_interleave"
             ", not repeat), the online-softmax rescale exp(m - m') in tiled kernels"),
        source=SOURCE_SOFTMAX, details=details)]
    if structural:
        findings.append(Finding(
            "attention.recompute", Severity.ERROR,
            f"key/value projections do not match the configured GQA: {structural[0]}",
            float(len(structural)), 0.0, "above", meaning="num_kv_heads was ignored when the "
            "model was built: the key/value projections are sized for the query heads",
            fix="size k_proj / v_proj with num_kv_heads * head_dim", source=SOURCE_SOFTMAX,
            details={"layers": structural}))
    if dead_diff > 0:
        findings.append(Finding(
            "attention.recompute", Severity.INFO,
            f"query rows with no allowed key (pad queries) give outputs up to {dead_diff:.3g} "
            "instead of the project's zero (e.g. uniform weights over the masked keys, HF's "
            "finfo.min convention)", dead_diff, 0.0, "above",
            meaning="harmless for the real tokens (checked by attention.padding and "
                    "attention.masked-rows); differs from functional/attention.py's contract",
            fix="block with -inf and give all-masked rows zero weights",
            source="functional/attention.py contract point 1", details={}))
    return findings


# ---------------------------------------------------------------------------- causal leakage
@register_check("attention.causal-leakage", kind=DYNAMIC,
                families=("attention.implicit-causal", "attention.mask-after-softmax"),
                source=SOURCE_CAUSAL)
def check_causal_leakage(subject: Subject) -> list[Finding]:
    """Changing the token at position j must leave every output before j unchanged (causal).

    Two perturbations of the random probe: position j = T/2 and j = 1 (a leak from the next
    token only). Measured: max |logits' - logits| over positions < j, relative to max |logits|.
    For a bidirectional model (engine.causal False) the opposite: the earlier outputs must
    change (else an implicit causal mask, bug family attention.implicit-causal).

    Sweep (docs/doctor_sweeps.md, H3): healthy causal models (project and HF, both engines, float32,
    float16, bfloat16): 0.0 exactly in every run (the earlier rows compute the same numbers);
    a causal model run with is_causal=False: leak of order 1e-2; bidirectional healthy:
    change 0.012 (GPT-2-like); attention.implicit-causal (reached by a causal=False model
    without ALiBi or window masks): 0.0. Thresholds: leak > 1e-5, bidirectional change < 1e-4.
    """
    engine = subject.need_engine()
    t = _probe_len(subject, engine)
    ids = subject.random_ids("attention:leakage", length=t)
    assert engine.vocab_size is not None
    g = subject.generator("attention:leakage:swap")
    b = ids.shape[0]
    positions = [t // 2, 1]
    batch = [ids]
    for j in positions:
        changed = ids.clone()
        changed[:, j] = _other_tokens(ids[:, j], engine.vocab_size, g)
        batch.append(changed)
    logits = engine.logits(torch.cat(batch))
    base = logits[:b]
    scale = max(float(base.abs().max()), 1e-12)
    diffs, at_j = [], []
    for n, j in enumerate(positions, start=1):
        other = logits[n * b:(n + 1) * b]
        before = (other[:, :j] - base[:, :j]).abs()
        diffs.append(float(before.max()) / scale if torch.isfinite(before).all() else math.inf)
        at_j.append(float((other[:, j:] - base[:, j:]).abs().max()) / scale)
    details = {"positions": positions, "relative_change_before": diffs,
               "relative_change_at_and_after": at_j, "causal": engine.causal,
               "probe": list(ids.shape)}
    if engine.causal:
        worst = max(diffs)
        return [judged(
            "attention.causal-leakage", worst, LEAK_TOL, "above", bad=Severity.ERROR,
            summary=(f"changing token j moves the outputs before j by {worst:.3g} (relative; "
                     f"j = {positions})"),
            meaning="future tokens leak into earlier positions: the causal mask is missing, "
                    "misaligned or applied after the softmax; training on such a model learns "
                    "to copy the answer",
            fix="add the causal mask (-inf for j > i) to the logits before the softmax",
            source=SOURCE_CAUSAL, details=details)]
    least = min(diffs)
    return [judged(
        "attention.causal-leakage", least, BIDIRECTIONAL_MIN, "below", bad=Severity.ERROR,
        summary=(f"bidirectional model: changing token j moves the outputs before j by only "
                 f"{least:.3g} (relative; j = {positions})"),
        meaning="a model declared bidirectional (causal=False) behaves causally: an implicit "
                "causal mask (e.g. inferred from 'no mask and q_len > 1')",
        fix="pass is_causal=False explicitly to the attention kernel of encoder layers",
        source=SOURCE_CAUSAL, details=details)]


# ---------------------------------------------------------------------------- mask coverage
def _backend_weights(subject: Subject, engine: ProjectEngine, t: int) -> Tensor | None:
    """(L, B, H, T, S) weights as the attention backend returns them (a listener on
    ``hook_pattern`` alone: the module then asks its backend, where ``engine.attention``, which
    also listens to ``hook_scores``, gets the module's own softmax of the scores); None when a
    layer has no attention."""
    if any(layer.attn is None for layer in engine.model.layers):
        return None
    run = _project_passes(subject, engine, t)
    b = run["batch"]
    return torch.stack([run["reported"][f"layers.{i}.attn.hook_pattern"][:b].float()
                        for i in run["layers"]])


@register_check("attention.mask-coverage", kind=DYNAMIC,
                families=("attention.causal-blocks-previous", "attention.softmax-wrong-axis",
                          "attention.mask-after-softmax"),
                source=SOURCE_CAUSAL)
def check_mask_coverage(subject: Subject) -> list[Finding]:
    """The weights are zero on every forbidden key, reach every allowed key, and sum to 1.

    On the standard random probe, from the engine's weights: (a) the largest weight on a
    forbidden key (j > i, or outside the sliding window); (b) the allowed (query, key) cells
    whose weight is exactly zero in every layer, head and batch row (a cell blocked by the
    mask: no head can attend there; a saturated softmax underflows in some heads, never in
    all); (c) max |sum_j a_ij - 1|. Any of them beyond its threshold is an ERROR.

    On the project engine the weights are the backend's (a ``hook_pattern``-only pass):
    ``engine.attention`` also listens to ``hook_scores``, and the module then takes the softmax
    of the scores itself, which never reaches a bug in the backend's normalisation. Blocked
    cells are read from the scores when the engine gives them (the mask value, <= -1e4), so a
    very saturated softmax that underflows to 0 is not mistaken for a mask.

    Sweep (docs/doctor_sweeps.md, H3): healthy (all project and HF models of the other sweeps,
    both engines): forbidden weight 0 exactly, blocked cells 0, row-sum error <= 2.4e-7
    (float16 2.4e-4, bfloat16 2.0e-3); planted causal-blocks-previous: 31 blocked cells of a
    32-token probe (every (i, i - 1)); softmax-wrong-axis: row sums off by 3.6 / 3.8;
    mask-after-softmax: 0.98; padding-mask-inverted: 1.0 (every key masked); W_Q, W_K x10
    with scale-dropped: 3 cells underflow to 0 in every head (hence scores, not weights).
    Thresholds: forbidden 1e-6, blocked cells 0, row-sum error 1e-4 (2e-2 in float16 /
    bfloat16).
    """
    engine = subject.need_engine()
    t = _probe_len(subject, engine)
    ids, records = _records(subject, t)
    window = _window(subject)
    w = torch.stack([r.weights.float() for r in records])  # (L, B, H, T, S)
    weights_from = "engine.attention"
    if isinstance(engine, ProjectEngine):
        backend = _backend_weights(subject, engine, t)
        if backend is not None:
            w, weights_from = backend, f"backend {engine.config.attention_backend!r}"
    s = w.shape[-1]
    allowed = allowed_keys(w.shape[-2], s, causal=engine.causal, window=window)
    finite = bool(torch.isfinite(w).all())
    forbidden = float(w[..., ~allowed].abs().max()) if bool((~allowed).any()) else 0.0
    if all(r.scores is not None for r in records):
        # blocked: the logit is the mask's value (-inf, or a finfo.min stand-in), not an
        # underflow of a very saturated softmax
        scores = torch.stack([r.scores.float() for r in records])  # type: ignore[union-attr]
        zero = scores <= BLOCKED_LOGIT
    else:
        zero = w == 0
    zero_everywhere = zero.all(dim=(0, 1, 2)) & allowed  # (T, S)
    blocked = int(zero_everywhere.sum())
    row_err = float((w.sum(-1) - 1).abs().max())
    if not finite:
        forbidden = row_err = math.inf
    cells = [(int(i), int(j)) for i, j in zero_everywhere.nonzero()[:8]]
    offsets = sorted({i - j for i, j in (tuple(c) for c in zero_everywhere.nonzero().tolist())})
    details = {"forbidden_max_weight": forbidden, "blocked_allowed_cells": blocked,
               "blocked_examples": cells, "blocked_offsets_i_minus_j": offsets[:16],
               "row_sum_max_error": row_err, "window": window, "causal": engine.causal,
               "probe": list(ids.shape), "weights_from": weights_from}
    row_tol = ROW_SUM_TOL_LOW if _low_precision(engine) else ROW_SUM_TOL
    findings = [
        judged("attention.mask-coverage", forbidden, FORBIDDEN_TOL, "above", bad=Severity.ERROR,
               summary=f"largest weight on a forbidden key: {forbidden:.3g}",
               subject="forbidden keys",
               meaning="queries attend to keys the mask forbids (future tokens or keys outside "
                       "the window)",
               fix="add the mask to the logits before the softmax (-inf where forbidden)",
               source=SOURCE_CAUSAL, details=details),
        judged("attention.mask-coverage", float(blocked), 0.0, "above", bad=Severity.ERROR,
               summary=(f"{blocked} allowed (query, key) cells get zero weight in every head "
                        f"of every layer (offsets i - j: {offsets[:8]})"),
               subject="allowed keys",
               meaning="the mask blocks keys that must be visible (e.g. the previous token: "
                       "no previous-token or induction head can form)",
               fix="check the mask's comparison (j <= i, not j < i or j != i - 1) and the "
                   "window bound (i - W < j)",
               source=SOURCE_CAUSAL, details=details),
        judged("attention.mask-coverage", row_err, row_tol, "above", bad=Severity.ERROR,
               summary=f"attention rows sum to 1 within {row_err:.3g}",
               subject="row sums",
               meaning="the weights are not a softmax over the keys: normalised over the "
                       "queries, or masked after the softmax without renormalising",
               fix="softmax over the last (key) axis, after adding the mask",
               source=SOURCE_SOFTMAX, details=details),
    ]
    return findings


# ---------------------------------------------------------------------------- padding
def _pad_batch(ids: Tensor, pad: int, side: str, pad_id: int) -> tuple[Tensor, Tensor]:
    """ids (B, n) -> (B, n + pad) with ``pad`` pad tokens on ``side`` and the HF mask."""
    b, n = ids.shape
    pads = torch.full((b, pad), pad_id, dtype=ids.dtype)
    mask = torch.cat([torch.zeros(b, pad, dtype=torch.long), torch.ones(b, n, dtype=torch.long)],
                     dim=1)
    if side == "left":
        return torch.cat([pads, ids], dim=1), mask
    return torch.cat([ids, pads], dim=1), mask.flip(-1)


def padding_positions(mask: Tensor) -> Tensor:
    """Position ids from an HF attention mask as transformers' ``generate`` computes them:
    cumsum(mask) - 1, pads set to 1 (written here independently)."""
    return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)


def _padded_logits(engine: Engine, ids: Tensor, mask: Tensor) -> Tensor:
    position_ids = None if isinstance(engine, ProjectEngine) else padding_positions(mask)
    return engine.logits(ids, attention_mask=mask, position_ids=position_ids)


def _padding_run(subject: Subject) -> dict[str, Any]:
    engine = subject.need_engine()
    t = _probe_len(subject, engine)
    pad = max(1, t // 4)
    n = t - pad
    ids = subject.random_ids("attention:padding", length=n)
    b = ids.shape[0]

    def compute() -> dict[str, Any]:
        plain = engine.logits(ids)
        left, left_mask = _pad_batch(ids, pad, "left", pad_id=0)
        right, right_mask = _pad_batch(ids, pad, "right", pad_id=0)
        # one batch: the left-padded rows, the right-padded rows and one fully padded row
        # (every query of it has no allowed key)
        batch = torch.cat([left, right, left[:1]])
        mask = torch.cat([left_mask, right_mask, torch.zeros_like(left_mask[:1])])
        logits = _padded_logits(engine, batch, mask)
        out: dict[str, Any] = {"plain": plain, "n": n, "pad": pad, "batch": b,
                               "logits": logits, "mask": mask}
        for k, side in enumerate(("left", "right")):
            rows = slice(k * b, (k + 1) * b)
            out[side] = logits[rows][mask[rows].bool()].view(b, n, -1)
        return out

    return subject.cached(f"attention:padding:{id(engine)}:{t}:{b}", compute)


@register_check("attention.padding", kind=DYNAMIC,
                families=("transformer.padding-mask-inverted",), source=SOURCE_PADDING)
def check_padding(subject: Subject) -> list[Finding]:
    """Left and right padding (HF attention_mask, 1 = token) leave the real tokens' logits alone.

    A random probe of T - T/4 tokens, run unpadded and padded with T/4 pad tokens on the left
    (and on the right), mask 0 at the pads, in a batch that also holds one fully padded row.
    Position ids follow the engine's convention (the project computes cumsum(mask) - 1 itself;
    other engines get cumsum(mask) - 1 with pads at 1, as transformers' ``generate``). Measured:
    max |padded - unpadded| / max |unpadded| on the real tokens; ERROR beyond 1e-4.

    Sweep (docs/doctor_sweeps.md, H3): healthy project and HF models (Llama, GPT-2, Qwen2, Mistral
    with and without a window, Gemma, Phi-3; both engines): 0.0 exactly in float32, <= 1.1e-3
    in float16, <= 8.1e-3 in bfloat16. Planted: transformer.padding-mask-inverted 0.47 / 0.52,
    attention.causal-blocks-previous 0.25 / 0.18 (the masked path builds the causal mask),
    attention.implicit-causal 0.32 / 0.26. Threshold 1e-4 (5e-2 in float16 / bfloat16).
    """
    engine = subject.need_engine()
    run = _padding_run(subject)
    plain = run["plain"]
    errs = {side: _rel_diff(run[side], plain) for side in ("left", "right")}
    worst = max(errs.values())
    tol = PADDING_TOL_LOW if _low_precision(engine) else PADDING_TOL
    return [judged(
        "attention.padding", worst, tol, "above", bad=Severity.ERROR,
        summary=(f"padding changes the real tokens' logits by {errs['left']:.3g} (left) / "
                 f"{errs['right']:.3g} (right), relative"),
        meaning="padded batches give other answers than the same sequences alone: the padding "
                "mask is inverted or ignored, or positions count the pads",
        fix="block keys where attention_mask == 0 (HF 1 = token is the negation of PyTorch's "
            "key_padding_mask True = pad) and number positions cumsum(mask) - 1",
        source=SOURCE_PADDING,
        details={"left": errs["left"], "right": errs["right"], "pad": run["pad"],
                 "real_tokens": run["n"], "engine": engine.name})]


# ---------------------------------------------------------------------------- masked rows
def _overflow_probe(subject: Subject, engine: ProjectEngine, t: int
                    ) -> dict[str, Any]:
    """Scale q so that the largest pre-softmax logit is LARGE_LOGIT (finite), listening to the
    weights (the path of output_attentions) and to the output; both must stay finite."""
    from transformer_math.checkpoints.pretrained import logits_of
    from transformer_math.nn.hooks import hooks, run_with_cache

    model = engine.model
    layers = [i for i, layer in enumerate(model.layers) if layer.attn is not None]
    ids = subject.random_ids("attention:overflow", length=t, batch=1).to(engine._device)
    qk = [f"layers.{i}.attn.hook_{x}" for i in layers for x in ("q", "k")]
    with torch.no_grad():
        _, cache = run_with_cache(model, ids, names=qk)
    factors: dict[str, float] = {}
    for i in layers:
        q = cache[f"layers.{i}.attn.hook_q"].double()
        k = cache[f"layers.{i}.attn.hook_k"].double()
        group = torch.arange(q.shape[1], device=q.device) // (q.shape[1] // k.shape[1])
        largest = float((q @ k[:, group].transpose(-1, -2)).abs().max()) / math.sqrt(
            q.shape[-1])
        factors[f"layers.{i}.attn.hook_q"] = LARGE_LOGIT / max(largest, 1e-12)

    def scaled(name: str) -> Callable[[Tensor, Any], Tensor]:
        return lambda x, hook: x * factors[name]

    callbacks = {name: scaled(name) for name in factors}
    pattern_names = [f"layers.{i}.attn.hook_pattern" for i in layers]
    with torch.no_grad(), hooks(model, callbacks):
        out_plain = logits_of(model(ids))  # a loaded checkpoint returns a CausalLMOutput
        out_weights, cache = run_with_cache(model, ids, names=pattern_names)
        out_weights = logits_of(out_weights)
    bad_out = not bool(torch.isfinite(out_plain).all())
    bad_weights = not (bool(torch.isfinite(out_weights).all())
                       and all(bool(torch.isfinite(cache[n]).all()) for n in pattern_names))
    return {"logit": LARGE_LOGIT, "non_finite_output": bad_out,
            "non_finite_weights_path": bad_weights}


@register_check("attention.masked-rows", kind=DYNAMIC,
                families=("attention.mask-finfo-min", "attention.softmax-no-max-shift"),
                source=SOURCE_PADDING)
def check_masked_rows(subject: Subject) -> list[Finding]:
    """Query rows with no allowed key give finite outputs (and the real rows stay finite).

    The padding probe's batch (``attention.padding``) holds left-padded rows (their pad queries
    see only pad keys), right-padded rows and one fully padded row. Measured: the number of
    non-finite logits anywhere in it (ERROR if any: a NaN from 0/0 in a fully masked softmax
    row poisons every later layer and the loss). The project's contract gives such rows zero
    weights (functional/attention.py point 1); HF eager gives them uniform weights over the
    masked keys (finfo.min): both are finite and neither touches the real tokens (judged by
    ``attention.padding``), so which convention holds is not a fault (``attention.recompute``
    reports it as info on the project engine).

    On the project engine a second probe (1 x 16 tokens) scales the hooked q so that the
    largest logit is 1000 (finite: trained models without QK-norm grow attention logits,
    Dehghani et al. 2023): the output and the reported weights must stay finite (a softmax
    without the max shift overflows past ~88 in float32).

    Sweep (docs/doctor_sweeps.md, H3): healthy (every project and HF model, both engines): 0
    non-finite values, overflow probe finite; attention.softmax-no-max-shift: the weights path
    is NaN in the overflow probe (the sdpa output path has its own stable kernel);
    attention.mask-finfo-min: 0 (finite uniform rows, real tokens unchanged). Threshold: 0.
    """
    engine = subject.need_engine()
    run = _padding_run(subject)
    logits = run["logits"]
    non_finite = int((~torch.isfinite(logits)).sum())
    dead_row = logits[-1]
    # the real rows of that batch against the unpadded run (the dead row sits beside them)
    cross = max(_rel_diff(run[side], run["plain"]) for side in ("left", "right"))
    details: dict[str, Any] = {
        "non_finite_logits": non_finite, "real_rows_change": cross,
        "fully_padded_row_finite": bool(torch.isfinite(dead_row).all()),
        "engine": engine.name}
    measured = float(non_finite)
    findings = [judged(
        "attention.masked-rows", measured, 0.0, "above", bad=Severity.ERROR,
        summary=(f"padded batch with a fully padded row: {non_finite} non-finite logits "
                 f"(real rows move by {cross:.3g}: see attention.padding)"),
        meaning="a query with no allowed key produced NaN/inf (0/0 in the softmax), which "
                "spreads to every later layer and to the loss",
        fix="give rows whose keys are all masked zero weights (shift a -inf row max by 0), "
            "or mask with a finite minimum and ignore those positions",
        source=SOURCE_PADDING, details=details)]
    if isinstance(engine, ProjectEngine) and any(
            layer.attn is not None for layer in engine.model.layers):
        probe = _overflow_probe(subject, engine, _probe_len(subject, engine, 16))
        bad = float(probe["non_finite_output"]) + float(probe["non_finite_weights_path"])
        findings.append(judged(
            "attention.masked-rows", bad, 0.0, "above", bad=Severity.ERROR,
            summary=(f"logits scaled to {LARGE_LOGIT:g}: output finite "
                     f"{not probe['non_finite_output']}, reported weights finite "
                     f"{not probe['non_finite_weights_path']}"),
            subject="large logits",
            meaning="the softmax overflows for large finite logits (exp without subtracting "
                    "the row maximum): NaN for logits above ~88 in float32, ~11 in float16",
            fix="subtract the row maximum before exp (log-sum-exp)",
            source="004 Softmax数值稳定性; Dehghani et al. 2023 (attention logit growth)",
            details=probe))
    return findings
