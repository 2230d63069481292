"""Where RoPE extrapolation breaks (which pairs see unseen phases) and what each context-
extension method keeps (000 §8.3.3 理论 C corrected; FACTS.md "RoPE and context extension")."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from transformer_math.claims.position._common import SEED_000
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Margin,
    Series,
    Size,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
    close_to,
)
from transformer_math.functional.rope import (
    unseen_phase_fraction,
)
from transformer_math.functional.rope_scaling import compute_rope_frequencies, default_inv_freq
from transformer_math.nn.position import RotaryEmbedding
from transformer_math.theory.positions import (
    aliased_fraction,
)

TWO_PI = 2 * math.pi


@claim(
    "position.rope-extrapolation-mechanism",
    source=(
        f"{SEED_000} 理论 C: '退化的根源：高频分量在远位置进入\"未见相位区\"' (low-frequency "
        "extrapolation '基本无害'), and '位置内插……代价：低频分辨率被压缩'; also 练习 8.3.3-4, "
        "误区表 #25. Correct mechanism: Liu et al. 2023 (critical dimension), Peng et al. 2023 "
        "(YaRN), FACTS.md"
    ),
    statement="""Audit. Beyond the training length the pairs that see phases never seen in
    training are exactly those whose wavelength exceeds it (LOW frequencies), not the high ones;
    and position interpolation costs adjacent-position resolution in the HIGH-frequency pairs,
    not the low ones. Kept: high-frequency phases alone alias far distances onto trained near
    ones (the seed's 'unseen combinations' has this real counterpart).""",
    falsifier=Falsifier(
        "seed-high-frequency-culprit", {"culprit": "high"},
        "predict the seed's way (unseen phases in the short-wavelength pairs): contradicts the "
        "measured coverage",
    ),
)
def check_rope_extrapolation_mechanism(ctx: Context, culprit: str = "low") -> Evidence:
    d, base = 128, 10000.0
    L, L_test = (512, 4096) if ctx.size is not Size.TINY else (256, 2048)
    inv, _ = compute_rope_frequencies("default", d, base)
    unseen = unseen_phase_fraction(inv, L, L_test)
    wavelength = TWO_PI / inv
    measured_ood = (unseen > 0).tolist()
    if culprit == "low":
        predicted_ood = (wavelength > L).tolist()
    elif culprit == "high":
        predicted_ood = (wavelength <= L).tolist()
    else:
        raise ValueError(f"culprit must be 'low' or 'high', got {culprit!r}")
    # A pair whose wavelength is just above L leaves an unswept arc 2π - (L-1)θ_i shorter than
    # two steps θ_i: a boundary case that either classification may take.
    gap = TWO_PI - (L - 1) * inv
    boundary = ((gap > 0) & (gap <= 2 * inv + 2e-3)).tolist()
    mismatches = [i for i in range(d // 2)
                  if measured_ood[i] != predicted_ood[i] and not boundary[i]]
    s = L_test / L
    loss_pi, loss_ntk = _resolution_loss(d, base, s)
    high = wavelength <= L
    pi_share_high = float(loss_pi[high].sum() / loss_pi.sum())
    ntk_high_change = float(loss_ntk[high].abs().max())
    margins = [
        at_most("pairs whose OOD status contradicts the prediction", len(mismatches), 0),
        at_least("PI resolution loss share on high-frequency pairs", pi_share_high, 0.9),
    ]
    first_ood = next((i for i, v in enumerate(measured_ood) if v), None)
    return Evidence(
        predicted={"OOD pairs": f"wavelength > L = {L} ({culprit} frequencies)",
                   "PI resolution loss on high-frequency pairs": "> 90 %"},
        measured={"OOD pairs (unseen > 0)": f"i >= {first_ood}" if first_ood is not None
                  else "none", "mismatched pairs": mismatches,
                  "PI loss share on high pairs": pi_share_high},
        tolerance=("a phase is 'seen' if within one position step θ_i (>= 1e-3 rad) of a "
                   "trained phase, i.e. inside the arc swept in training; pairs whose unswept "
                   "arc is shorter than two steps are boundary cases"),
        verdict=agreement(all_hold(margins), refutes_seed=True),
        margins=margins,
        notes=[
            f"d = {d}, base {base:g}, L_train = {L}, L_test = {L_test}; the seed says the "
            "high-frequency pairs are OOD and PI compresses low-frequency resolution; the "
            "measurement says the opposite on both counts",
            f"NTK-aware (s = {s:g}) changes adjacent-position resolution of high pairs by at "
            f"most {ntk_high_change:.2e}",
            _aliasing_note(base),
        ],
        details={"unseen_fraction": unseen.tolist(), "wavelength": wavelength.tolist(),
                 "pi_resolution_loss": loss_pi.tolist(), "ntk_resolution_loss": loss_ntk.tolist()},
        figures=[_unseen_figure(unseen, L, L_test, first_ood)],
    )


def _resolution_loss(d: int, base: float, s: float) -> tuple[Tensor, Tensor]:
    """Adjacent-position resolution lost per pair by PI and by NTK-aware scaling (factor s):
    chord |e^{iθ} - 1| of the plain module minus the scaled one's, from the modules' cos/sin
    tables at positions 0 and 1 (float64, (d/2,) each)."""
    plain = RotaryEmbedding(d, base=base)
    pi = RotaryEmbedding(d, base=base, scaling={"rope_type": "linear", "factor": s})
    ntk = RotaryEmbedding(d, base=base, scaling={"rope_type": "ntk", "factor": s})

    def chord(mod: RotaryEmbedding) -> Tensor:
        cos, sin = mod(torch.arange(2))
        return ((cos[1] - cos[0]) ** 2 + (sin[1] - sin[0]) ** 2).sqrt()[: d // 2].double()

    return chord(plain) - chord(pi), chord(plain) - chord(ntk)


def _aliasing_note(base: float) -> str:
    """Aliasing of the high-frequency pairs at far distances (the kept part of the seed's
    intuition), in the geometry of the extrapolation experiment: head_dim 16, L = 64, to 512."""
    inv16 = default_inv_freq(16, base)
    hp16 = torch.nonzero(TWO_PI / inv16 < 64).flatten()
    aliased_high = aliased_fraction(inv16, hp16, 64, 512, 0.3, 1)
    aliased_all = aliased_fraction(inv16, torch.arange(8), 64, 512, 0.3, 1)
    return (f"aliasing (head_dim 16, L = 64): on the {len(hp16)} pairs with wavelength < L, "
            f"{aliased_high:.1%} of far distances in [64, 512) match some trained distance "
            f"within 0.3 rad on every pair; on all 8 pairs {aliased_all:.1%}: only the "
            "low-frequency pairs tell those distances apart, and those are the OOD ones")


def _unseen_figure(unseen: Tensor, L: int, L_test: int, first_ood: int | None) -> Figure:
    return Figure(
        f"Phases unseen in training at L_test = {L_test} (L_train = {L})",
        "pair index i (0 = highest frequency)", "fraction of test positions unseen",
        [Series("unseen phase fraction", list(range(unseen.numel())), unseen.tolist(),
                kind="bar")],
        vlines=[(float(first_ood) if first_ood is not None else 0.0,
                 "first pair with wavelength > L")],
    )


def _measured_inv_freq(module: RotaryEmbedding, seq_len: int) -> tuple[Tensor, float]:
    """Recover (θ_i, attention factor) from the module's cos/sin at positions 0 and 1."""
    cos, sin = module(torch.tensor([0, 1]), seq_len=seq_len)
    factor = float(cos[0, 0])
    half = module.rotary_dim // 2
    angle = torch.atan2(sin[1, :half].double(), cos[1, :half].double())
    return angle, factor


@claim(
    "position.scaling-methods",
    source=("000 §8.3.3 理论 C (PI, NTK-aware, YaRN); Chen et al. 2023; bloc97 2023; Peng et al. "
            "2023; Llama 3.1; Ding et al. 2024 (LongRoPE); HF modeling_rope_utils (FACTS.md)"),
    statement="""Linear/PI, NTK-aware, dynamic NTK, YaRN, llama3 and LongRoPE give the
    frequencies and attention factors of FACTS.md, and after scaling by s = L_test/L_train each
    keeps the phases it claims to keep inside the trained range (PI: every pair; YaRN and
    llama3: every pair with wavelength > L_train; NTK: the lowest pair) while leaving the
    highest-frequency pair unchanged (all but PI).""",
    falsifier=Falsifier(
        "inverted-yarn", {"invert_yarn": True},
        "YaRN with its ramp reversed (interpolate high frequencies, keep low ones), the main "
        "seed's prescription: low pairs stay out of range",
    ),
)
def check_scaling_methods(ctx: Context, invert_yarn: bool = False) -> Evidence:
    d, base, L0, s = 64, 10000.0, 256, 8.0
    L_test = int(L0 * s)
    ref = default_inv_freq(d, base)
    problems: list[str] = []
    margins: list[Margin] = []
    measured: dict[str, Any] = {}
    for name, cfg in _scaling_configs(d, L0, s).items():
        module = RotaryEmbedding(d, base=base, scaling=cfg, max_position_embeddings=4)
        theta, factor = _measured_inv_freq(module, L_test)
        if name == "yarn" and invert_yarn:
            theta = ref * ref / theta / s  # reversed ramp: kept <-> interpolated
        rel = theta / ref
        margins += _frequency_margins(name, cfg, rel, factor, TWO_PI / ref, L0, s)
        # Phases kept inside the trained range at L_test.
        unseen = unseen_phase_fraction(ref, L0, L_test, test_inv_freq=theta)
        must_cover = _pairs_kept_in_range(name, TWO_PI / ref, L0)
        margins.append(at_most(f"{name} max unseen phase fraction on the pairs it keeps in range",
                               float(unseen[must_cover].max()), 0.0))
        if bool((unseen[must_cover] > 0).any()):
            bad = torch.nonzero(must_cover & (unseen > 0)).flatten().tolist()
            problems.append(f"{name}: pairs {bad} see unseen phases at L_test")
        if name != "linear":
            margins.append(close_to(f"{name} highest-frequency θ'/θ", float(rel[0]), 1.0,
                                    abs_=_THETA_TOL))
        measured[name] = {"theta0'/theta0": float(rel[0]), "theta_last'/theta_last":
                          float(rel[-1]), "attention_factor": factor,
                          "pairs with unseen phases": int((unseen > 0).sum())}
    plain_unseen = int((unseen_phase_fraction(ref, L0, L_test) > 0).sum())
    measured["default"] = {"pairs with unseen phases": plain_unseen}
    broken = [m.name for m in margins if not m.holds]
    return Evidence(
        predicted="FACTS.md formulas; coverage as stated",
        measured=measured,
        tolerance="θ ratios 1e-5 relative (float32 tables), attention factor 1e-6; a test "
                  "phase is covered when within one step θ_i of the arc swept in training",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[f"d = {d}, base {base:g}, L0 = {L0}, s = {s:g}, L_test = {L_test}; θ measured "
               "from each RotaryEmbedding's cos/sin at positions 0, 1", *problems,
               *(f"does not hold: {b}" for b in broken)],
    )


_THETA_TOL = 1e-5  # float32 atan2 of cos/sin at position 1: ~1e-7 absolute; 1e-5 relative margin


def _scaling_configs(d: int, L0: int, s: float) -> dict[str, dict[str, Any]]:
    """Each method's ``rope_scaling`` at factor s over L0 (dynamic: factor 1, its base grows
    with the evaluated length; LongRoPE: long factors rising linearly from 1 to s)."""
    return {
        "linear": {"rope_type": "linear", "factor": s},
        "ntk": {"rope_type": "ntk", "factor": s},
        "dynamic": {"rope_type": "dynamic", "factor": 1.0, "original_max_position_embeddings": L0},
        "yarn": {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L0},
        "llama3": {"rope_type": "llama3", "factor": s, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": L0},
        "longrope": {"rope_type": "longrope", "original_max_position_embeddings": L0,
                     "factor": s, "short_factor": [1.0] * (d // 2),
                     "long_factor": [float(1 + (s - 1) * i / (d // 2 - 1)) for i in range(d // 2)]},
    }


def _frequency_margins(name: str, cfg: dict[str, Any], rel: Tensor, factor: float,
                       wavelength: Tensor, L0: int, s: float) -> list[Margin]:
    """θ'/θ against FACTS.md's closed form (or, for YaRN and llama3, 1 on the pairs they keep)
    and the attention factor against its formula."""
    half = rel.numel()
    one = torch.ones(1, dtype=torch.float64)
    margins: list[Margin] = []
    expect: Tensor | None = None
    if name == "linear":
        expect, exp_factor = torch.full_like(rel, 1 / s), 1.0
    elif name in ("ntk", "dynamic"):
        # geometric in i from 1 (i = 0) to 1/s (i = d/2 - 1): b' = b s^(d/(d-2))
        expect = s ** (-torch.arange(half, dtype=torch.float64) / (half - 1))
        exp_factor = 1.0
    elif name == "yarn":  # pairs with wavelength < L0 / beta_fast (32) are kept
        exp_factor = 0.1 * math.log(s) + 1
        kept_err = float((rel[wavelength < L0 / 32] - one).abs().max())
        margins.append(at_most("yarn max |θ'/θ - 1| on wavelength < L0/32", kept_err,
                               _THETA_TOL))
    elif name == "llama3":  # pairs with wavelength < L0 / high_freq_factor (4) are kept
        exp_factor = 1.0
        kept_err = float((rel[wavelength < L0 / 4] - one).abs().max())
        margins.append(at_most("llama3 max |θ'/θ - 1| on wavelength < L0/4", kept_err,
                               _THETA_TOL))
    else:  # longrope at L_test > L0 uses long factors
        expect = 1.0 / torch.tensor(cfg["long_factor"], dtype=torch.float64)
        exp_factor = math.sqrt(1 + math.log(s) / math.log(L0))
    if expect is not None:
        closed_err = float(((rel - expect).abs() / expect.abs()).max())
        margins.append(at_most(f"{name} max rel. error of θ'/θ vs closed form", closed_err,
                               _THETA_TOL))
    margins.append(close_to(f"{name} attention factor", factor, exp_factor, abs_=1e-6))
    return margins


def _pairs_kept_in_range(name: str, wavelength: Tensor, L0: int) -> Tensor:
    """The pairs each method claims to keep inside the trained phase range: PI every pair,
    YaRN and llama3 those with wavelength > L0, NTK / dynamic / LongRoPE the lowest one."""
    long_pairs = wavelength > L0
    lowest = torch.arange(wavelength.numel()) == wavelength.numel() - 1
    return {"linear": torch.ones_like(long_pairs), "yarn": long_pairs, "llama3": long_pairs,
            "ntk": lowest, "dynamic": lowest, "longrope": lowest}[name]
