"""Doctor checks of rotary position embeddings: wavelengths, the base bound, the scaling
parameters (static) and the engine's cos/sin tables against closed forms (dynamic).

Manual row 2 of the seed (000:1666, "failure past the training length", §8.3.3): a RoPE pair
``i`` rotates by ``m theta_i`` at position ``m``; its wavelength is ``lambda_i = 2 pi / theta_i``.
A pair whose wavelength exceeds the training length never completed a rotation in training, so
past that length it shows phases the model never saw (the LOW-frequency pairs; Liu et al. 2023,
"Scaling laws of RoPE-based extrapolation", critical dimension; FACTS.md). Context-extension
methods (PI, NTK, YaRN, llama3, LongRoPE) change the frequencies so that the target length maps
back into trained phases, each with its own parameters and pitfalls.

=====================  =============================================================================
check                  what it judges
=====================  =============================================================================
rope.wavelengths       per-pair wavelengths (scaled as the config says) against the trained length
                       and the target context; pairs that see phases never seen in training
rope.base-bound        Men et al. 2024's condition B_m = sum_i cos(m theta_i) >= 0 for m <= L
                       (their lower bound on the base for a context length L)
rope.scaling-params    the rope_scaling / rope_parameters of config.json, type by type: what
                       transformers only warns about or silently accepts
rope.tables            (dynamic) the engine's cos/sin tables against this module's own closed forms
=====================  =============================================================================

The closed forms of every scaling type (:func:`reference_frequencies`) are written here from the
papers and the Hugging Face ``modeling_rope_utils`` conventions (FACTS.md), independently of
``functional/rope_scaling.py``: a bug planted in the library moves the engine's tables but not
the doctor's prediction.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from transformer_math.doctor.checks import DYNAMIC, STATIC, NotApplicable, Subject, register_check
from transformer_math.doctor.findings import Finding, Severity, judged

ROW2 = "000:1666 (manual row 2), §8.3.3"
MEN_2024 = ("Men et al. 2024, 'Base of RoPE Bounds Context Length' (arXiv 2405.14591, NeurIPS "
            "2024), B_{m,theta} = sum_i cos(m theta_i) >= 0")
HF_ROPE = "transformers modeling_rope_utils (rope_config_validation, _compute_*_parameters)"
TWO_PI = 2.0 * math.pi

# ----------------------------------------------------------------------------- reference math


def _default_inv(rotary_dim: int, base: float) -> Tensor:
    """theta_i = b^(-2i/d), i = 0 .. d/2 - 1 (RoFormer eq. 15), float64."""
    i = torch.arange(rotary_dim // 2, dtype=torch.float64)
    return torch.exp(-(2.0 * i / rotary_dim) * math.log(base))


def _num(params: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = params.get(key, default)
    if value is None:
        raise ValueError(f"missing {key}")
    return float(value)


def reference_frequencies(rope_type: str, rotary_dim: int, base: float,
                          params: Mapping[str, Any] | None, seq_len: int | None
                          ) -> tuple[Tensor, float]:
    """(theta' (d/2,) float64, attention factor on cos and sin) of ``rope_type`` at ``seq_len``.

    Parameters use the project's names (``config.rope_scaling``, the HF names of
    ``rope_parameters``). Notation: d rotary dim, b base, s factor, L0
    original_max_position_embeddings, theta_i = b^(-2i/d).

    - default: theta; linear (Chen et al. 2023, PI): theta / s; ntk: base b s^(d/(d-2)).
    - dynamic (HF): at L = seq_len > L0, base b (s L / L0 - (s - 1))^(d/(d-2)); theta otherwise.
    - yarn (Peng et al. 2023; HF): r(beta) = d ln(L0 / (2 pi beta)) / (2 ln b); low =
      floor r(beta_fast), high = ceil r(beta_slow) (unrounded with truncate=False), clamped to
      [0, d - 1], high + 0.001 if equal; gamma_j = clamp((j - low) / (high - low), 0, 1);
      theta'_j = theta_j (1 - gamma_j) + (theta_j / s) gamma_j; attention factor given, else
      0.1 ln s + 1 (s > 1), else 1.
    - llama3 (Meta Llama 3.1; HF): lambda = 2 pi / theta; lambda > L0 / low_freq_factor: theta / s;
      lambda < L0 / high_freq_factor: theta; between, with w = (L0 / lambda - lff) / (hff - lff):
      (1 - w) theta / s + w theta.
    - longrope (Ding et al. 2024; HF Phi-3): theta_i / ext_i, ext = long_factor when
      seq_len > L0, else short_factor; attention factor given, else sqrt(1 + ln s / ln L0) for
      s > 1, else 1.
    """
    p = dict(params or {})
    theta = _default_inv(rotary_dim, base)
    d = rotary_dim
    if rope_type == "default":
        return theta, 1.0
    if rope_type == "linear":
        return theta / _num(p, "factor"), 1.0
    if rope_type == "ntk":
        return _default_inv(d, base * _num(p, "factor") ** (d / (d - 2))), 1.0
    if rope_type == "dynamic":
        s, l0 = _num(p, "factor"), _num(p, "original_max_position_embeddings")
        if seq_len is None or seq_len <= l0:
            return theta, 1.0
        return _default_inv(d, base * (s * seq_len / l0 - (s - 1.0)) ** (d / (d - 2))), 1.0
    if rope_type == "yarn":
        s, l0 = _num(p, "factor"), _num(p, "original_max_position_embeddings")
        fast, slow = _num(p, "beta_fast", 32.0), _num(p, "beta_slow", 1.0)

        def pair_of(rotations: float) -> float:
            return d * math.log(l0 / (TWO_PI * rotations)) / (2.0 * math.log(base))

        low, high = pair_of(fast), pair_of(slow)
        if p.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        j = torch.arange(d // 2, dtype=torch.float64)
        gamma = ((j - low) / (high - low)).clamp(0.0, 1.0)
        inv = theta * (1.0 - gamma) + (theta / s) * gamma
        factor = p.get("attention_factor")
        if factor is None:
            factor = 0.1 * math.log(s) + 1.0 if s > 1.0 else 1.0
        return inv, float(factor)
    if rope_type == "llama3":
        s, l0 = _num(p, "factor"), _num(p, "original_max_position_embeddings")
        lff, hff = _num(p, "low_freq_factor"), _num(p, "high_freq_factor")
        wavelength = TWO_PI / theta
        w = ((l0 / wavelength - lff) / (hff - lff)).clamp(0.0, 1.0)
        inv = (1.0 - w) * theta / s + w * theta
        inv = torch.where(wavelength > l0 / lff, theta / s, inv)
        inv = torch.where(wavelength < l0 / hff, theta, inv)
        return inv, 1.0
    if rope_type == "longrope":
        l0 = _num(p, "original_max_position_embeddings")
        s = _num(p, "factor", 1.0)
        key = "long_factor" if seq_len is not None and seq_len > l0 else "short_factor"
        ext = torch.tensor([float(v) for v in p[key]], dtype=torch.float64)
        factor = p.get("attention_factor")
        if factor is None:
            factor = math.sqrt(1.0 + math.log(s) / math.log(l0)) if s > 1.0 else 1.0
        return theta / ext, float(factor)
    raise NotApplicable(f"rope_type {rope_type!r} has no reference formula in the doctor")


def reference_tables(inv_freq: Tensor, attention_factor: float, seq_len: int, layout: str
                     ) -> tuple[Tensor, Tensor]:
    """(angles (seq_len, d) float64 in ``layout``, amplitude): angle of channel c at position m
    is m theta_{pair(c)}; pair(c) = c mod d/2 ("half") or c // 2 ("interleaved")."""
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq.double()[None, :]
    if layout == "half":
        full = torch.cat([angles, angles], dim=-1)
    elif layout == "interleaved":
        full = angles.repeat_interleave(2, dim=-1)
    else:
        raise ValueError(f"unknown rotary layout {layout!r}")
    return full, torch.full((), float(attention_factor), dtype=torch.float64)


# ----------------------------------------------------------------------------- the subject's RoPE


@dataclass(frozen=True)
class RopeSpec:
    """The RoPE of a config: rotary dim d, base b, scaling type and parameters (project names),
    the trained length L0 and the declared maximum length."""

    rotary_dim: int
    base: float
    rope_type: str
    params: Mapping[str, Any]
    trained_length: int
    max_seq_len: int

    @property
    def pairs(self) -> int:
        return self.rotary_dim // 2

    @property
    def factor(self) -> float:
        return float(self.params.get("factor", 1.0) or 1.0)

    def frequencies(self, seq_len: int | None) -> tuple[Tensor, float]:
        return reference_frequencies(self.rope_type, self.rotary_dim, self.base, self.params,
                                     seq_len)


def rope_spec(subject: Subject) -> RopeSpec:
    """The subject's :class:`RopeSpec`; NotApplicable without RoPE or without a config."""
    config = subject.need_config()
    if config.position != "rope":
        raise NotApplicable(f"position {config.position!r} has no rotary embedding")
    scaling = dict(config.rope_scaling or {"rope_type": "default"})
    rope_type = str(scaling.pop("rope_type", "default"))
    rotary = int(config.dim_per_head * config.partial_rotary_factor)
    return RopeSpec(rotary, float(config.rope_theta), rope_type, scaling,
                    int(subject.trained_length or config.max_seq_len), int(config.max_seq_len))


def _target(subject: Subject) -> int:
    target = subject.target_context
    if target is None:
        raise NotApplicable("no target context")
    return int(target)


# ----------------------------------------------------------------------------- rope.wavelengths


def unseen_phase_pairs(spec: RopeSpec, context: int) -> Tensor:
    """Boolean (d/2,): pairs that at positions < ``context`` (frequencies in effect there) reach
    a phase beyond every phase of pretraining.

    Pretraining used the unscaled theta_i at positions 0 .. L0 - 1, so pair i saw the arc
    [0, (L0 - 1) theta_i]; when that arc is shorter than 2 pi (lambda_i > L0 - 1: the pair never
    completed a rotation), a phase (context - 1) theta'_i beyond its end by more than one position
    step theta_i was never seen. Pairs that completed a rotation have seen every phase.
    """
    trained = _default_inv(spec.rotary_dim, spec.base)
    effective, _ = spec.frequencies(context)
    arc = (spec.trained_length - 1) * trained
    reach = (context - 1) * effective
    return (arc < TWO_PI) & (reach > arc + trained)


@register_check("rope.wavelengths", kind=STATIC, manual_rows=(2,),
                families=("rope.context-extension",), source=ROW2)
def wavelengths(subject: Subject) -> list[Finding]:
    """Per-pair wavelengths 2 pi / theta_i against the trained length L0 and the target context L.

    Info: the pairs with lambda_i > L0 (unscaled theta) never completed a rotation in training.
    Extrapolation (FACTS.md; Liu et al. 2023): past L0 those low-frequency pairs show phases never
    seen (:func:`unseen_phase_pairs`). Without scaling, L > L0 is a warning. With scaling factor
    s the extension is designed for L <= s L0: L > s L0 is a warning when L also exceeds the
    config's declared max_position_embeddings, info when the config itself declares it (Llama 3.1
    declares 131072 = 2 x 8 x 8192 and relies on long-context training). No threshold is fitted:
    L0, s L0 and max_position_embeddings come from the config.
    """
    spec = rope_spec(subject)
    context = _target(subject)
    l0 = spec.trained_length
    base_theta = _default_inv(spec.rotary_dim, spec.base)
    effective, _ = spec.frequencies(context)
    lam = (TWO_PI / effective).tolist()
    subject.figure("rope.wavelengths", {"wavelengths": lam, "trained_length": l0,
                                        "context": context})
    never = (TWO_PI / base_theta) > l0
    n_never = int(never.sum())
    findings = [Finding(
        "rope.wavelengths", Severity.INFO if n_never else Severity.OK,
        f"{n_never} of {spec.pairs} rotary pairs have wavelength > trained length {l0} "
        f"(base {spec.base:g}, rotary dim {spec.rotary_dim}): they never completed a rotation "
        "in training", measured=float(n_never), subject="trained length",
        meaning="these low-frequency pairs carry position only as a partial arc; past the trained "
                "length they show phases never seen (the critical dimension of Liu et al. 2023)",
        fix="none needed within the trained length; extend with PI / YaRN / llama3 scaling or "
            "a larger base plus fine-tuning before using longer contexts",
        source=ROW2, details={"first_never_completed_pair": int(never.nonzero()[0])
                              if n_never else None,
                              "longest_wavelength": float(TWO_PI / base_theta[-1])})]
    unseen = unseen_phase_pairs(spec, context)
    n_unseen = int(unseen.sum())
    details = {"unseen_pairs": unseen.nonzero().flatten().tolist()[:16], "context": context,
               "trained_length": l0, "rope_type": spec.rope_type}
    if n_unseen:
        i = int(unseen.nonzero()[0])
        details.update(critical_pair=i, trained_max_phase=float((l0 - 1) * base_theta[i]),
                       target_phase=float((context - 1) * effective[i]))
    if spec.rope_type == "default":
        bad = context > l0
        phase = (f"; pair {details['critical_pair']} reached {details['trained_max_phase']:.3g} "
                 f"rad in training and {details['target_phase']:.3g} rad at position "
                 f"{context - 1}" if n_unseen else "")
        findings.append(Finding(
            "rope.wavelengths", Severity.WARNING if bad else Severity.OK,
            (f"target context {context} > trained length {l0} without RoPE scaling: {n_unseen} "
             f"of {spec.pairs} pairs see phases never seen in training{phase}") if bad else
            f"target context {context} <= trained length {l0}: every phase was seen in training",
            measured=float(context), threshold=float(l0), comparison="above",
            subject="extrapolation",
            meaning="the low-frequency pairs rotate past their trained arc: attention at long "
                    "distances becomes out of distribution (perplexity blows up past L0)",
            fix="keep the context <= the trained length, or add rope_scaling (YaRN, llama3, "
                "linear with factor >= L / L0) and fine-tune briefly",
            source=f"{ROW2}; Liu et al. 2023 (critical dimension); Peng et al. 2023 (YaRN)",
            details=details))
        return findings
    limit = spec.factor * l0
    over = context > limit
    severity = Severity.OK
    if over:
        severity = Severity.WARNING if context > spec.max_seq_len else Severity.INFO
    findings.append(Finding(
        "rope.wavelengths", severity,
        (f"target context {context} > factor {spec.factor:g} x original {l0} = {limit:g} "
         f"({spec.rope_type}): {n_unseen} of {spec.pairs} pairs see phases outside the "
         "pretraining range" + ("" if severity == Severity.WARNING else
                                f" (the config declares max_position_embeddings "
                                f"{spec.max_seq_len})")) if over else
        (f"target context {context} <= factor {spec.factor:g} x original {l0} = {limit:g} "
         f"({spec.rope_type}); {n_unseen} pairs see unseen phases"),
        measured=float(context), threshold=float(limit), comparison="above",
        subject="extrapolation",
        meaning="the scaling maps at most factor x original positions back into trained phases; "
                "beyond that the interpolated low-frequency pairs extrapolate again",
        fix="raise the scaling factor to >= L / original_max_position_embeddings, or shorten "
            "the context",
        source=f"{ROW2}; Peng et al. 2023 (YaRN); Chen et al. 2023 (PI)", details=details))
    return findings


# ----------------------------------------------------------------------------- rope.base-bound

EXACT_POSITIONS = 1 << 18
"""B_m is evaluated at every integer m <= L up to 2^18; past it at 2^18 integer positions
evenly spaced in (2^18, L] in addition (a sampled grid; the dips of B_m come from the
low-frequency pairs and are wide compared with the step)."""

_CHUNK = 1 << 15


def _positions(context: int) -> Tensor:
    exact = torch.arange(min(context, EXACT_POSITIONS) + 1, dtype=torch.float64)
    if context <= EXACT_POSITIONS:
        return exact
    extra = torch.linspace(EXACT_POSITIONS + 1, context, EXACT_POSITIONS,
                           dtype=torch.float64).round()
    return torch.cat([exact, extra])


def discrimination_sum(inv_freq: Tensor, context: int) -> tuple[float, int | None]:
    """(min_{0 <= m <= L} B_m, first m with B_m < 0 or None) with B_m = sum_i cos(m theta_i)
    (Men et al. 2024), float64, chunked over m (positions as :data:`EXACT_POSITIONS`)."""
    theta = inv_freq.double()
    positions = _positions(context)
    lowest, first = math.inf, None
    for start in range(0, positions.numel(), _CHUNK):
        m = positions[start:start + _CHUNK]
        b = torch.cos(m[:, None] * theta[None, :]).sum(-1)
        lowest = min(lowest, float(b.min()))
        if first is None:
            neg = (b < 0).nonzero()
            if neg.numel():
                first = int(m[int(neg[0])])
    return lowest, first


BOUND_GRID_PER_DECADE = 300
"""Resolution of :func:`base_lower_bound`: bases b_k = 10^(k / 300) (steps of 0.77%)."""

BOUND_MAX_CONTEXT = 2048
""":func:`base_lower_bound` is computed (when the condition fails) up to this context: the scan
costs 2.6 s at L = 1024 and 3.9 s at L = 2048 (d = 128) on the shared 2-core machine; past it the
doctor quotes Men et al.'s fit 0.0424 L^1.628 (their Fig. 1, d = 128 only)."""


def _survivors(bases: Tensor, rotary_dim: int, context: int) -> Tensor:
    """Mask of ``bases`` whose B_m >= 0 for every integer 0 <= m <= context (elimination over
    chunks of m: a base leaves at its first negative B_m)."""
    i = torch.arange(rotary_dim // 2, dtype=torch.float64)
    theta = torch.exp(-(2.0 * i / rotary_dim)[None, :] * torch.log(bases)[:, None])  # (n, d/2)
    alive = torch.ones(bases.numel(), dtype=torch.bool)
    chunk = 1024
    for start in range(0, context + 1, chunk):
        idx = alive.nonzero().flatten()
        if idx.numel() == 0:
            break
        m = torch.arange(start, min(start + chunk, context + 1), dtype=torch.float64)
        b = torch.cos(m[None, :, None] * theta[idx][:, None, :]).sum(-1)  # (n_alive, chunk)
        alive[idx[(b < 0).any(-1)]] = False
        chunk = min(chunk * 2, 2048)
    return alive


@functools.lru_cache(maxsize=64)
def base_lower_bound(context: int, rotary_dim: int = 128) -> float:
    """Men et al. 2024's lower bound b_min(L): the smallest base b (on the grid
    10^(k/300)) for which B_m = sum_{i<d/2} cos(m b^(-2i/d)) >= 0 at every integer m <= L.

    The condition is not monotone in b (narrow windows of valid bases lie below the first base
    after which every base is valid), so the search is a scan, not a bisection: a coarse grid
    (10^(k/20)) finds the first valid base b_c, then the fine grid is scanned upward from b_c / 4
    and the first valid base is returned (b_c if none). For d = 128 this gives 4.30e3 at 1K,
    2.69e4 at 4000 and 8.38e4 at 8K, in line with the points of the paper's Fig. 1 as far as a
    log-log plot can be read (about 4e3, 3e4 and 8e4) and within a factor 1.5 of its fit
    0.0424 L^1.628 (tests/doctor/test_rope_checks.py).
    """
    if context < 1:
        raise ValueError(f"context must be >= 1, got {context}")
    coarse = None
    k = 0
    while coarse is None:
        batch = torch.tensor([10.0 ** ((k + j) / 20) for j in range(1, 9)], dtype=torch.float64)
        ok = _survivors(batch, rotary_dim, context)
        if ok.any():
            coarse = float(batch[int(ok.nonzero()[0])])
        k += 8
        if k > 20 * 12:
            raise ValueError(f"no base up to 1e12 satisfies the bound at context {context}")
    lo = math.floor(BOUND_GRID_PER_DECADE * math.log10(coarse / 4.0))
    hi = math.ceil(BOUND_GRID_PER_DECADE * math.log10(coarse))
    for start in range(lo, hi + 1, 16):
        batch = torch.tensor([10.0 ** (j / BOUND_GRID_PER_DECADE)
                              for j in range(start, min(start + 16, hi + 1))], dtype=torch.float64)
        ok = _survivors(batch, rotary_dim, context)
        if ok.any():
            return float(batch[int(ok.nonzero()[0])])
    return coarse


def men_fit(context: int) -> float:
    """Men et al. 2024, Fig. 1: b_min ~ 0.0424 L^1.628 (fitted for d = 128)."""
    return 0.0424 * context ** 1.628


@register_check("rope.base-bound", kind=STATIC, manual_rows=(2,),
                families=("rope.context-extension",), source=MEN_2024)
def base_bound(subject: Subject) -> list[Finding]:
    """Men et al. 2024's long-term decay of token discrimination: the expected excess attention
    of a similar token over a random one at distance m is proportional to
    B_{m,theta} = sum_{i=0}^{d/2-1} cos(m theta_i), which must stay >= 0 for every m <= L, else
    the model cannot prefer the similar token at that distance ("superficial long-context
    ability": low perplexity, failed retrieval). Their lower bound b_min(L) on the base is the
    smallest base meeting it (:func:`base_lower_bound`).

    Measured: min_{m <= L} B_m with the frequencies in effect at L (scaled RoPE: the effective
    theta'_i of the config's type, so PI with factor s reads B at m / s); threshold 0. Below it:
    a warning when the user stated the context (``--context``), info when L is only the model's
    own max_position_embeddings (Llama 2: base 1e4 at 4096 is below the 4K bound, about 2.7e4
    here and in the paper's Fig. 1, a design fact, not a fault of the checkpoint). No threshold
    is fitted.
    """
    spec = rope_spec(subject)
    context = _target(subject)
    effective, _ = spec.frequencies(context)
    lowest, first = discrimination_sum(effective, context)
    bound, bound_text = None, "b_min not needed"
    if lowest < 0:  # the bound only for the message: the scan costs seconds at L = 2048
        if context <= BOUND_MAX_CONTEXT:
            bound = base_lower_bound(context, spec.rotary_dim)
            bound_text = f"b_min({context}) = {bound:.3g} for d = {spec.rotary_dim}"
        elif spec.rotary_dim == 128:
            bound = men_fit(context)
            bound_text = f"b_min({context}) ~ {bound:.3g} (Men et al.'s fit, d = 128)"
        else:
            bound_text = f"b_min not computed past L = {BOUND_MAX_CONTEXT} for d != 128"
    stated = subject.options.context is not None
    bad = lowest < 0
    severity = (Severity.WARNING if stated else Severity.INFO) if bad else Severity.OK
    scaled = "" if spec.rope_type == "default" else f" ({spec.rope_type} frequencies at L)"
    summary = (f"B_m = sum_i cos(m theta_i) first < 0 at m = {first} <= L = {context}: base "
               f"{spec.base:g}{scaled} is below Men et al.'s bound ({bound_text}); min B_m = "
               f"{lowest:.3g}" if bad else
               f"B_m >= 0 for every m <= L = {context} (min {lowest:.3g} of {spec.pairs}); base "
               f"{spec.base:g}{scaled} meets Men et al.'s bound")
    return [Finding(
        "rope.base-bound", severity, summary, measured=lowest, threshold=0.0,
        comparison="below", subject=f"context {context}",
        meaning="past the first m with B_m < 0 RoPE no longer lets attention prefer a token "
                "similar to the query over a random one: long-range retrieval fails even when "
                "perplexity stays low",
        fix=f"raise rope_theta to at least b_min(L) ({bound_text}) and continue training at "
            "length L, or keep the context below the first negative m",
        source=MEN_2024,
        details={"first_negative_m": first, "b_min": bound, "base": spec.base,
                 "rotary_dim": spec.rotary_dim, "context": context, "stated_context": stated,
                 "positions": "every m <= 2^18, then 2^18 evenly spaced"})]


# ----------------------------------------------------------------------------- rope.scaling-params

ATTENTION_FACTOR_TOLERANCE = 0.01
"""A given attention_factor more than 1% away from its formula is inconsistent (the planted
families put it at 1 or squared: 12-40% off at s = 4 .. 32)."""

_KNOWN = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")


def _raw_rope(subject: Subject) -> tuple[str, dict[str, Any], Mapping[str, Any]] | None:
    """(rope_type, parameters, top-level config) from config.json (rope_parameters over the
    legacy rope_scaling, as transformers merges them), else from ``config.rope_scaling``."""
    raw = subject.raw_config
    if raw is not None:
        params: dict[str, Any] = {}
        for key in ("rope_scaling", "rope_parameters"):
            value = raw.get(key)
            if isinstance(value, Mapping):
                params.update(value)
            elif value is not None:
                return "invalid", {"value": value, "key": key}, raw
        rope_type = params.pop("rope_type", None) or params.pop("type", None) or "default"
        params.pop("type", None)
        for key in ("rope_theta", "partial_rotary_factor"):
            params.pop(key, None)
        params = {k: v for k, v in params.items() if v is not None}
        return str(rope_type), params, raw
    if subject.config is None or subject.config.position != "rope":
        return None
    scaling = dict(subject.config.rope_scaling or {"rope_type": "default"})
    rope_type = str(scaling.pop("rope_type"))
    top = {"max_position_embeddings": subject.config.max_seq_len}
    return rope_type, scaling, top


def _raw_theta(top: Mapping[str, Any]) -> float:
    """rope_theta of a raw config: inside rope_parameters / rope_scaling, else top level."""
    for key in ("rope_parameters", "rope_scaling"):
        value = top.get(key)
        if isinstance(value, Mapping) and _is_number(value.get("rope_theta")):
            return float(value["rope_theta"])
    theta = top.get("rope_theta")
    return float(theta) if _is_number(theta) and theta > 1 else 10000.0


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def _rotary_dim_raw(subject: Subject, top: Mapping[str, Any]) -> int | None:
    if subject.config is not None:
        return int(subject.config.dim_per_head * subject.config.partial_rotary_factor)
    heads, hidden = top.get("num_attention_heads"), top.get("hidden_size")
    head_dim = top.get("head_dim") or (hidden // heads if _is_number(hidden) and _is_number(
        heads) and heads else None)
    if not _is_number(head_dim):
        return None
    partial = top.get("partial_rotary_factor", 1.0)
    return int(head_dim * (partial if _is_number(partial) else 1.0))


class _Judge:
    """Collects one finding per problem of one rope config."""

    def __init__(self, rope_type: str) -> None:
        self.rope_type = rope_type
        self.findings: list[Finding] = []

    def add(self, severity: Severity, key: str, summary: str, fix: str, *,
            measured: float | None = None, threshold: float | None = None,
            comparison: str = "", source: str = HF_ROPE, meaning: str = "") -> None:
        self.findings.append(Finding(
            "rope.scaling-params", severity, f"{self.rope_type}: {summary}", measured=measured,
            threshold=threshold, comparison=comparison, subject=key, fix=fix, source=source,
            meaning=meaning or ("transformers loads this config (at most with a log warning) "
                                "and computes frequencies the config's author did not intend")))

    def error(self, key: str, summary: str, fix: str, **kw: Any) -> None:
        self.add(Severity.ERROR, key, summary, fix, **kw)

    def warn(self, key: str, summary: str, fix: str, **kw: Any) -> None:
        self.add(Severity.WARNING, key, summary, fix, **kw)

    def info(self, key: str, summary: str, fix: str = "", **kw: Any) -> None:
        self.add(Severity.INFO, key, summary, fix, **kw)


def _factor(j: _Judge, p: Mapping[str, Any], *, required: bool) -> float | None:
    if "factor" not in p:
        if required:
            j.error("factor", "factor is missing (required)",
                    "set rope_scaling.factor = target length / original length")
        return None
    f = p["factor"]
    if not _is_number(f):
        j.error("factor", f"factor {f!r} is not a finite number", "set a number >= 1")
        return None
    if f < 1.0:
        j.error("factor", f"factor {f} < 1 shrinks the context instead of extending it "
                f"(transformers only warns)", "set factor = target length / original >= 1",
                measured=float(f), threshold=1.0, comparison="below")
        return None
    if f == 1.0:
        j.info("factor", "factor 1: the scaling changes nothing")
    return float(f)


def _original(j: _Judge, p: Mapping[str, Any], n_max: Any, *, required: bool) -> float | None:
    l0 = p.get("original_max_position_embeddings")
    if l0 is None:
        if required:
            j.warn("original_max_position_embeddings",
                   f"original_max_position_embeddings missing: transformers substitutes "
                   f"max_position_embeddings ({n_max}), so the scaling is computed for the "
                   "extended length, not the pretraining one",
                   "set original_max_position_embeddings to the pretraining context")
        return None
    if not _is_number(l0) or l0 < 1:
        j.error("original_max_position_embeddings",
                f"original_max_position_embeddings {l0!r} is not a positive number",
                "set the pretraining context length")
        return None
    return float(l0)


def _attention_factor(j: _Judge, p: Mapping[str, Any], expected: float, formula: str,
                      source: str) -> None:
    given = p.get("attention_factor")
    if given is None:
        return
    if not _is_number(given) or given <= 0:
        j.error("attention_factor", f"attention_factor {given!r} is not a number > 0",
                f"remove it (default {formula} = {expected:.4g})", source=source)
        return
    rel = abs(float(given) - expected) / expected
    if rel > ATTENTION_FACTOR_TOLERANCE:
        hint = (" (= 1: the factor is dropped)" if abs(given - 1.0) < 1e-9 else
                " (= the formula squared)" if abs(given - expected ** 2) < 1e-3 * expected ** 2
                else "")
        j.warn("attention_factor",
               f"attention_factor {given:.4g} differs from {formula} = {expected:.4g} by "
               f"{100 * rel:.1f}%{hint}",
               f"remove attention_factor (transformers then uses {formula}) unless the model "
               "was trained with this value", measured=rel,
               threshold=ATTENTION_FACTOR_TOLERANCE, comparison="above", source=source,
               meaning="cos and sin carry the attention factor, so every logit is scaled by "
                       "its square: a wrong factor changes the attention temperature at every "
                       "position")


def _judge_yarn(j: _Judge, p: Mapping[str, Any], n_max: Any) -> None:
    src = "Peng et al. 2023 (YaRN) eq. for sqrt(1/t) = 0.1 ln s + 1; " + HF_ROPE
    s = _factor(j, p, required=False)
    l0 = _original(j, p, n_max, required=True)
    if s is None and "factor" not in p:
        if l0 and _is_number(n_max):
            s = n_max / l0
            j.info("factor", f"factor missing: transformers uses max_position_embeddings / "
                   f"original = {s:g}")
        else:
            j.error("factor", "factor is missing and cannot be inferred", "set factor")
    if s is not None and l0 is not None and _is_number(n_max):
        implicit = n_max / l0
        if l0 > n_max:
            j.warn("original_max_position_embeddings",
                   f"original_max_position_embeddings {l0:g} > max_position_embeddings {n_max}",
                   "max_position_embeddings should be the extended length factor x original")
        elif implicit != 1 and abs(implicit - s) > 1e-9:
            j.warn("factor", f"factor {s:g} != max_position_embeddings / original = "
                   f"{implicit:g} (transformers warns once and uses the factor)",
                   "make factor = max_position_embeddings / original_max_position_embeddings",
                   measured=s, threshold=implicit)
        elif implicit == 1 and s > 1:
            j.info("max_position_embeddings",
                   f"max_position_embeddings = original = {l0:g}: the declared context does not "
                   f"include the x{s:g} extension (pass --context up to {s * l0:g})")
    fast, slow = p.get("beta_fast", 32.0), p.get("beta_slow", 1.0)
    if not (_is_number(fast) and _is_number(slow)) or fast <= 0 or slow <= 0:
        j.error("beta_fast", f"beta_fast {fast!r} / beta_slow {slow!r} must be numbers > 0 "
                "(they are rotation counts; ln of them is taken)", "use 32 and 1 (the paper)")
    elif fast <= slow:
        j.error("beta_fast", f"beta_fast {fast} <= beta_slow {slow}: the ramp between kept and "
                "interpolated pairs is empty or inverted (transformers warns only when <)",
                "use beta_fast 32 > beta_slow 1 (the paper)", measured=float(fast),
                threshold=float(slow), comparison="below")
    if "truncate" in p and not isinstance(p["truncate"], bool):
        j.error("truncate", f"truncate {p['truncate']!r} is not a boolean", "true or false")
    mscale, mscale_all = p.get("mscale"), p.get("mscale_all_dim")
    if s is None:
        return
    expected = 0.1 * math.log(s) + 1.0 if s > 1 else 1.0
    formula = "0.1 ln s + 1"
    if mscale and mscale_all and _is_number(mscale) and _is_number(mscale_all):
        def m(x: float) -> float:
            return 0.1 * x * math.log(s) + 1.0 if s > 1 else 1.0
        expected = m(float(mscale)) / m(float(mscale_all))
        formula = "mscale(s, mscale) / mscale(s, mscale_all_dim)"
        j.info("mscale", f"attention factor from mscale {mscale} / mscale_all_dim {mscale_all}"
               f" = {expected:.4g} (DeepSeek convention; 0.1 ln s + 1 would be "
               f"{0.1 * math.log(s) + 1:.4g})")
    elif (mscale is None) != (mscale_all is None):
        j.warn("mscale", "only one of mscale / mscale_all_dim is given: transformers ignores it "
               f"and uses 0.1 ln s + 1 = {expected:.4g}", "give both or neither")
    _attention_factor(j, p, expected, formula, src)


def _judge_llama3(j: _Judge, p: Mapping[str, Any], n_max: Any, rotary: int | None,
                  base: float) -> None:
    src = "Meta Llama 3.1 rope scaling; " + HF_ROPE
    for key in ("factor", "low_freq_factor", "high_freq_factor",
                "original_max_position_embeddings"):
        if key not in p:
            j.error(key, f"{key} is missing (required: transformers raises KeyError)",
                    f"set {key} (Llama 3.1: factor 8, low 1, high 4, original 8192)",
                    source=src)
    s = _factor(j, p, required=False)
    low, high = p.get("low_freq_factor"), p.get("high_freq_factor")
    if "low_freq_factor" in p and "high_freq_factor" in p:
        if not (_is_number(low) and _is_number(high)) or low <= 0 or high <= 0:
            j.error("low_freq_factor", f"low_freq_factor {low!r} / high_freq_factor {high!r} "
                    "must be numbers > 0 (the band edges are original / factor)",
                    "Llama 3.1: 1 and 4", source=src)
        elif low >= high:
            j.error("low_freq_factor", f"low_freq_factor {low} >= high_freq_factor {high}: the "
                    "wavelength bands are swapped or empty (transformers only warns)",
                    "low_freq_factor < high_freq_factor (Llama 3.1: 1 and 4)",
                    measured=float(low), threshold=float(high), comparison="above", source=src)
    l0 = _original(j, p, n_max, required=False)
    if l0 is None or not _is_number(n_max):
        return
    if l0 >= n_max:
        j.warn("original_max_position_embeddings",
               f"original_max_position_embeddings {l0:g} >= max_position_embeddings {n_max} "
               "(transformers warns): the config declares no extension",
               "set max_position_embeddings to the extended length", source=src)
    elif s is not None and n_max > s * l0:
        j.info("max_position_embeddings",
               f"max_position_embeddings {n_max} > factor x original = {s * l0:g}: positions "
               "past it rely on long-context training (Llama 3.1 declares 2x)", source=src)
    if rotary and _is_number(low) and _is_number(high) and 0 < low < high:
        lam = TWO_PI / _default_inv(rotary, base)
        n_low = int((lam > l0 / low).sum())
        n_high = int((lam < l0 / high).sum())
        if n_low == 0:
            j.info("low_freq_factor", f"no pair has wavelength > original / low_freq_factor = "
                   f"{l0 / low:g}: the factor {s} divides no frequency", source=src)
        j.findings.append(Finding(
            "rope.scaling-params", Severity.OK,
            f"llama3 bands: {n_low} pairs divided by {s}, {n_high} kept, "
            f"{rotary // 2 - n_low - n_high} blended", subject="bands", source=src,
            details={"interpolated": n_low, "kept": n_high}))


def _judge_longrope(j: _Judge, p: Mapping[str, Any], n_max: Any, rotary: int | None) -> None:
    src = "Ding et al. 2024 (LongRoPE); HF Phi-3 (long factors when seq_len > original); " + HF_ROPE
    l0 = p.get("original_max_position_embeddings")
    if l0 is None:
        j.error("original_max_position_embeddings", "original_max_position_embeddings is "
                "missing (required: the short/long switch is at seq_len > original)",
                "set the pretraining context", source=src)
        l0 = None
    elif not _is_number(l0) or l0 < 2:
        j.error("original_max_position_embeddings", f"original_max_position_embeddings {l0!r} "
                "must be a number >= 2 (ln of it is taken)", "set the pretraining context",
                source=src)
        l0 = None
    for key in ("short_factor", "long_factor"):
        value = p.get(key)
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            j.error(key, f"{key} is missing or not a list", "give rotary_dim / 2 numbers",
                    source=src)
            continue
        if rotary is not None and len(value) != rotary // 2:
            j.error(key, f"{key} has {len(value)} entries, rotary_dim / 2 = {rotary // 2} "
                    "(transformers warns, then fails to broadcast)",
                    f"give exactly {rotary // 2} factors", measured=float(len(value)),
                    threshold=float(rotary // 2), source=src)
        if not all(_is_number(v) and v > 0 for v in value):
            j.error(key, f"every entry of {key} must be a finite number > 0",
                    "fix the factor list", source=src)
    s = p.get("factor")
    if s is None:
        if l0 is not None and _is_number(n_max):
            s = max(1.0, n_max / l0)
            j.info("factor", f"factor missing: transformers uses max_position_embeddings / "
                   f"original = {n_max / l0:g} for the attention factor", source=src)
    else:
        s = _factor(j, p, required=False)
    if l0 is not None and _is_number(n_max) and l0 >= n_max:
        j.info("original_max_position_embeddings",
               f"original {l0:g} >= max_position_embeddings {n_max}: the long factors are "
               "never used within the declared context", source=src)
    if s is not None and l0 is not None:
        expected = math.sqrt(1 + math.log(s) / math.log(l0)) if s > 1 else 1.0
        _attention_factor(j, p, expected, "sqrt(1 + ln s / ln L0)", src)


def _judge_dynamic(j: _Judge, p: Mapping[str, Any], n_max: Any, raw: bool) -> None:
    _factor(j, p, required=True)
    l0 = p.get("original_max_position_embeddings")
    # the project's own dynamic NTK honours original_max_position_embeddings; transformers not
    if raw and l0 is not None and _is_number(n_max) and l0 != n_max:
        j.warn("original_max_position_embeddings",
               f"original_max_position_embeddings {l0} != max_position_embeddings {n_max}: "
               "transformers' dynamic NTK ignores it and starts scaling at "
               "max_position_embeddings", "set max_position_embeddings to the pretraining "
               "context (dynamic NTK grows the base past it)")


def _judge_linear(j: _Judge, p: Mapping[str, Any], n_max: Any) -> None:
    s = _factor(j, p, required=True)
    l0 = p.get("original_max_position_embeddings")
    if (s is not None and _is_number(l0) and _is_number(n_max) and l0 < n_max
            and abs(n_max / l0 - s) > 1e-9):
        j.warn("factor", f"factor {s:g} != max_position_embeddings / original = "
               f"{n_max / l0:g} (transformers' linear scaling ignores the original)",
               "make factor = extended / original length")


@register_check("rope.scaling-params", kind=STATIC, manual_rows=(2,),
                families=("rope.context-extension", "rope.yarn-attention-factor"),
                source=HF_ROPE)
def scaling_params(subject: Subject) -> list[Finding]:
    """The RoPE scaling parameters of config.json (``rope_parameters`` over the legacy
    ``rope_scaling``; a project model: ``config.rope_scaling``), judged type by type where
    transformers only logs a warning or silently accepts (the project's loader may refuse the
    config; this check still judges the raw keys):

    - every type: factor missing where required, not a number, < 1 (error);
    - linear / dynamic: original_max_position_embeddings inconsistent with the factor / ignored
      by dynamic NTK (warning);
    - yarn: beta_fast <= beta_slow or <= 0 (error); original missing or > max (warning); factor
      != max / original (warning, transformers' own check); attention_factor != 0.1 ln s + 1
      (Peng et al. 2023; with mscale and mscale_all_dim, HF's get_mscale ratio) by > 1%
      (warning); one of mscale / mscale_all_dim alone (warning: ignored);
    - llama3: required keys (error); low_freq_factor >= high_freq_factor (error); original >=
      max (warning); the wavelength bands (ok finding with the counts);
    - longrope: short/long factor lengths != rotary_dim / 2 (error); attention_factor !=
      sqrt(1 + ln s / ln L0) (warning); long factors apply when seq_len > original (the switch
      is probed by rope.tables).
    """
    found = _raw_rope(subject)
    if found is None:
        raise NotApplicable("no rotary embedding")
    rope_type, p, top = found
    if subject.config is not None and subject.config.position != "rope":
        raise NotApplicable(f"position {subject.config.position!r} has no rotary embedding")
    if rope_type == "invalid":
        return [Finding("rope.scaling-params", Severity.ERROR,
                        f"{p['key']} is not a JSON object: {p['value']!r}"[:200],
                        subject=p["key"], fix="use an object {rope_type: ..., ...} or null",
                        source=HF_ROPE)]
    if subject.raw_config is not None and subject.family == "gpt2":
        raise NotApplicable("GPT-2 has learned positions")
    if rope_type == "default":
        raise NotApplicable("rope_type default has no scaling parameters")
    j = _Judge(rope_type)
    n_max = top.get("max_position_embeddings")
    rotary = _rotary_dim_raw(subject, top)
    base = subject.config.rope_theta if subject.config is not None else _raw_theta(top)
    if rope_type == "linear":
        _judge_linear(j, p, n_max)
    elif rope_type == "dynamic":
        _judge_dynamic(j, p, n_max, subject.raw_config is not None)
    elif rope_type == "yarn":
        _judge_yarn(j, p, n_max)
    elif rope_type == "llama3":
        _judge_llama3(j, p, n_max, rotary, float(base))
    elif rope_type == "longrope":
        _judge_longrope(j, p, n_max, rotary)
    else:
        return [Finding("rope.scaling-params", Severity.INFO,
                        f"rope_type {rope_type!r} is not judged by the doctor "
                        f"(known: {', '.join(_KNOWN)})", subject="rope_type", source=HF_ROPE)]
    if not any(f.flagged for f in j.findings):
        j.findings.append(Finding(
            "rope.scaling-params", Severity.OK,
            f"{rope_type}: parameters consistent ({', '.join(sorted(p))})", measured=0.0,
            subject="rope_scaling", source=HF_ROPE, details=dict(p) if rope_type != "longrope"
            else {k: v for k, v in p.items() if not isinstance(v, list)}))
    return j.findings


# ----------------------------------------------------------------------------- rope.tables

TABLE_CAP = 4096
"""The target context is probed at min(target, 4096); the original length L0 and L0 + 1 (the
LongRoPE switch, dynamic NTK past L0) are probed up to :data:`SWITCH_CAP`."""

SWITCH_CAP = 1 << 16

ANGLE_TOLERANCE = 64.0
"""Angle error threshold in float32 rounding units |phi_engine - phi_ref| / (2^-24 (1 + |phi_ref|)).

Sweep (docs/doctor_sweeps.md, H2): healthy tables of 6 types (default, linear, dynamic, yarn,
llama3, longrope), d = 8 / 16 / 64, lengths up to 4096: at most 1.86 units (project engine) and
2.75 (transformers engine, HF checkpoints); planted rope bugs (model built under the plant): at
least 3.8e4 (rope.angles-in-bf16), 7.5e6 (dynamic-fixed-factor), 2.6e7 (cos-sin-swapped),
3.6e7 (llama3-bands-swapped, inv-freq-exponent). 64 is 23x the healthy maximum and 600x below
the smallest planted value."""

AMPLITUDE_TOLERANCE = 1e-3
"""Relative error of the table's amplitude sqrt(cos^2 + sin^2) against the attention factor.
Sweep (same models): healthy at most 1.2e-7 (float32 rounding); planted
rope.yarn-attention-factor-dropped 0.122 and -squared 0.139 at s = 4 (0.1 ln 4 + 1 = 1.139)."""


def _probe_lengths(spec: RopeSpec, target: int, short: int) -> list[int]:
    l0 = spec.trained_length
    lengths = {max(2, min(short, l0 // 2)), min(target, TABLE_CAP)}
    if l0 + 1 <= SWITCH_CAP:
        lengths |= {l0, l0 + 1}
    return sorted(lengths)


def table_errors(cos: Tensor, sin: Tensor, layout: str, inv_freq: Tensor,
                 attention_factor: float) -> tuple[Tensor, Tensor, float]:
    """(angle error per channel in float32 rounding units (seq, d), relative amplitude error
    (seq, d), max |cos - cos_ref|, |sin - sin_ref|) of an engine's tables against the closed
    form."""
    seq_len = cos.shape[0]
    ref, amp = reference_tables(inv_freq, attention_factor, seq_len, layout)
    c, s = cos.double(), sin.double()
    phi = torch.atan2(s, c)
    delta = torch.remainder(phi - ref + math.pi, TWO_PI) - math.pi
    units = delta.abs() / (2.0 ** -24 * (1.0 + ref.abs()))
    amplitude = torch.sqrt(c * c + s * s)
    amp_err = (amplitude - amp).abs() / amp
    abs_err = max(float((c - amp * torch.cos(ref)).abs().max()),
                  float((s - amp * torch.sin(ref)).abs().max()))
    return units, amp_err, abs_err


def _pair_of(channels: Tensor, layout: str, pairs: int) -> list[int]:
    idx = channels % pairs if layout == "half" else channels // 2
    return sorted(set(idx.tolist()))


@register_check("rope.tables", kind=DYNAMIC, manual_rows=(2,),
                families=("rope.frequencies", "rope.yarn-attention-factor",
                          "rope.longrope-switch", "rope.dynamic-ntk", "rope.precision"),
                source=f"{ROW2}; RoFormer eq. 15; Peng et al. 2023; {HF_ROPE}")
def tables(subject: Subject) -> list[Finding]:
    """The engine's cos/sin tables (``Engine.rotary_tables(L)``, what its forward applies at
    positions 0 .. L - 1, attention factor included) against this module's closed forms
    (:func:`reference_frequencies`, float64) at several lengths: a short one, the original length
    L0, L0 + 1 (LongRoPE's short/long switch, dynamic NTK's first scaled length) and the target
    context capped at 4096 (ascending, as transformers' dynamic RoPE keeps the longest frequencies
    it has seen).

    Two numbers per table: the angle error atan2(sin, cos) - m theta'_i in float32 rounding units
    2^-24 (1 + |m theta'_i|) (scale free: float32 angles at position 4096 are off by ~2e-4 rad
    in healthy engines) and the relative amplitude error sqrt(cos^2 + sin^2) / attention factor - 1.
    Error beyond :data:`ANGLE_TOLERANCE` / :data:`AMPLITUDE_TOLERANCE` (see their sweeps); the
    finding names the lengths and the pairs that differ.
    """
    spec = rope_spec(subject)
    engine = subject.need_engine()
    target = _target(subject)
    lengths = _probe_lengths(spec, target, subject.probe_len)
    worst_units, worst_amp, worst_abs = 0.0, 0.0, 0.0
    bad_pairs: dict[int, list[int]] = {}
    amp_lengths: dict[int, float] = {}
    for length in lengths:
        got = engine.rotary_tables(length)
        if got is None:
            return [Finding("rope.tables", Severity.ERROR,
                            f"the config has RoPE ({spec.rope_type}) but the {engine.name} "
                            "engine applies no rotary embedding", subject=f"length {length}",
                            fix="check the engine's position handling", source=ROW2)]
        cos, sin, layout = got
        if cos.shape != (length, spec.rotary_dim) or sin.shape != cos.shape:
            return [Finding("rope.tables", Severity.ERROR,
                            f"the engine's cos/sin tables have shape {tuple(cos.shape)}, "
                            f"expected ({length}, rotary_dim {spec.rotary_dim})",
                            subject=f"length {length}",
                            fix="check partial_rotary_factor / head_dim", source=ROW2)]
        inv, factor = spec.frequencies(length)
        units, amp_err, abs_err = table_errors(cos, sin, layout, inv, factor)
        worst_abs = max(worst_abs, abs_err)
        u = float(units.max())
        a = float(amp_err.max())
        worst_units, worst_amp = max(worst_units, u), max(worst_amp, a)
        if u > ANGLE_TOLERANCE:
            channels = (units > ANGLE_TOLERANCE).any(0).nonzero().flatten()
            bad_pairs[length] = _pair_of(channels, layout, spec.pairs)
        if a > AMPLITUDE_TOLERANCE:
            amp_lengths[length] = a
    where = "; ".join(f"L={n}: pairs {p[:8]}{'...' if len(p) > 8 else ''}"
                      for n, p in bad_pairs.items())
    details = {"lengths": lengths, "max_abs_difference": worst_abs, "rope_type": spec.rope_type,
               "engine": engine.name, "angle_units": worst_units, "differing_pairs":
               {str(k): v for k, v in bad_pairs.items()}}
    angle = judged(
        "rope.tables", worst_units, ANGLE_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"{engine.name} rotary angles differ from the {spec.rope_type} closed form by "
                 f"{worst_units:.3g} float32 units (max |d cos|, |d sin| {worst_abs:.3g}) at "
                 f"{where}") if bad_pairs else
                (f"{engine.name} rotary angles match the {spec.rope_type} closed form within "
                 f"{worst_units:.3g} float32 units at lengths {lengths} (max |d cos|, |d sin| "
                 f"{worst_abs:.3g})"),
        subject="angles",
        meaning="the engine rotates q and k by other angles than the config specifies (wrong "
                "exponent, swapped cos/sin, swapped llama3 bands, a LongRoPE or dynamic-NTK "
                "switch at the wrong length, angles in low precision)",
        fix="compare the engine's inv_freq with b^(-2i/d) and the scaling type's formula "
            "(rope_static.reference_frequencies) at the listed lengths",
        source=f"RoFormer eq. 15; {HF_ROPE}", details=details)
    amp_where = ", ".join(f"L={n}: {v:.3g}" for n, v in amp_lengths.items())
    amplitude = judged(
        "rope.tables", worst_amp, AMPLITUDE_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"{engine.name} cos/sin amplitude is off the attention factor "
                 f"{spec.frequencies(lengths[-1])[1]:.4g} by a relative {worst_amp:.3g} "
                 f"({amp_where})") if amp_lengths else
                (f"{engine.name} cos/sin amplitude equals the attention factor "
                 f"{spec.frequencies(lengths[-1])[1]:.4g} within {worst_amp:.2g}"),
        subject="attention factor",
        meaning="the attention factor on cos and sin sets the logit temperature (squared); "
                "YaRN's 0.1 ln s + 1 dropped or applied twice changes every attention pattern",
        fix="apply the attention factor exactly once, to cos and sin (HF attention_scaling)",
        source="Peng et al. 2023 (YaRN); Ding et al. 2024 (LongRoPE); " + HF_ROPE,
        details={"lengths": lengths, "engine": engine.name})
    return [angle, amplitude]
