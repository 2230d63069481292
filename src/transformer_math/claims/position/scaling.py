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
    Correction,
    Evidence,
    Figure,
    Margin,
    Refutation,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.functional.rope import (
    unseen_phase_fraction,
)
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.i18n.message import msg
from transformer_math.nn.position import RotaryEmbedding
from transformer_math.theory.positions import (
    aliased_fraction,
    closed_form_rope_frequencies,
    roformer_frequencies,
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
    training are exactly those whose wavelength 2π 10000^(2i/d) exceeds it (LOW frequencies), not
    the high ones; and position interpolation costs adjacent-position resolution in the HIGH-
    frequency pairs, not the low ones. Kept: high-frequency phases alone alias far distances
    onto trained near ones (the seed's 'unseen combinations' has this real counterpart). This
    is the conclusion of a phase-coverage model computed from the implementation's cos/sin
    tables, not a measurement of a trained model's behaviour.""",
    statement_zh="""审计。超出训练长度后，见到训练中从未出现的相位的维度对，恰是波长
    2π 10000^(2i/d) 超过训练长度的那些（低频），而不是高频；位置内插损失的是高频维度对的相邻位置
    分辨率，而不是低频。保留的部分：高频相位单独会把远距离混叠到训练见过的近距离上（主文'未见
    的相位组合'有这一真实对应）。这是相位覆盖模型（由实现的 cos/sin 表计算）的结论，
    不是对训练模型行为的测量。""",
    falsifier="rope.inv-freq-exponent",
    expected="refuted",
    version=3,
    kind="model",
    seed_refs=[("000", 649, 666), ("000", 678, 678), ("000", 688, 688), ("000", 1391, 1391),
               ("000", 1476, 1477), ("000", 1541, 1541), ("000", 1564, 1564),
               ("000", 1666, 1666)],
    refutes=[
        Refutation(
            seed="000", line=653, quote='退化的根源：高频分量在远位置进入"未见相位区"',
            says="the root of the degradation: the high-frequency pairs enter an 'unseen phase "
                 "region' at far positions",
            reading="beyond L_train the pairs whose phases leave the range seen in training are "
                    "the high-frequency ones (wavelength <= L_train)",
            correct="only pairs whose wavelength exceeds L_train (the low-frequency ones) never "
                    "completed a turn in training and see unseen phases; the high-frequency "
                    "pairs have turned many times and every far phase lies within one step of "
                    "a trained one",
            also=(656, 658, 660, 663, 666, 678, 688, 1391, 1477, 1541, 1564, 1666)),
        Refutation(
            seed="000", line=655,
            quote=("相位变化缓慢，外推时落在训练见过的相位范围内附近"
                   "——低频外推基本无害"),
            says="low-frequency phases change slowly and stay near the trained range: "
                 "low-frequency extrapolation is essentially harmless",
            reading="no low-frequency pair (wavelength > L_train) sees a phase outside the "
                    "trained range at L_test",
            correct="the low-frequency pairs are exactly the out-of-distribution ones: their "
                    "phases at L_test lie beyond the arc (L_train - 1) θ_i swept in training"),
        Refutation(
            seed="000", line=662,
            quote=("稳妥但有代价：低频分辨率被压缩"
                   "（本来不需要修的低频也被压了，损失近距离的位置区分度）"),
            says="PI is safe but costs low-frequency resolution (the low frequencies are "
                 "compressed too, losing near-distance position resolution)",
            reading="most of the adjacent-position resolution PI removes falls on the "
                    "low-frequency pairs (share >= 1/2)",
            correct="PI divides every θ_i by s; the adjacent-position chord lost is "
                    "~θ_i (1 - 1/s), almost all of it (> 90 %) in the high-frequency pairs",
            also=(1476,)),
    ],
    audit="""Issue 31 review (P; a, f). (f) one error booked 14 times: fixed, three records
    (653 high frequencies are the OOD ones, with its 12 restatements 656, 658, 660, 663, 666,
    678, 688, 1391, 1477, 1541, 1564 and the fault table 1666 as also=; 655 'low-frequency
    extrapolation harmless'; 662 'PI costs low-frequency resolution', also 1476). (a) the
    'measured OOD' is circle coverage of the phases read off RotaryEmbedding's tables, which is
    the same geometry as the prediction 'wavelength > L': agreed, reclassified as kind model
    (the phase-coverage model's conclusion, counted apart from measured errors); its falsifier
    (a wrong θ exponent in the library) only checks that the tables feed the model the right
    frequencies. The behavioural test the review proposes is now run, but not claimed: the
    extrapolation experiment (position.extrapolation-experiment, full tier) evaluates its
    trained RoPE model with only the low pairs (wavelength > L) brought into their trained
    phase range ('low-in-range') and with only the high pairs ('high-in-range'), shown by
    position. Tiny, seed 0, loss in [2L, end) / ln V: plain 1.48, low-in-range 0.80,
    high-in-range 1.02, the seed's literal high-interp 0.86 (window 0.41); in [0, L):
    0.35, 0.37, 0.79, 0.55. Default size, seed 0: [2L, 8L) plain 1.45, low-in-range 0.87,
    high-in-range 1.53, high-interp 1.35 (window 0.47); [0, L): 0.43, 0.53, 0.69, 0.63. It
    leans the literature's way (bringing the low pairs into range helps, the high pairs does
    not), but high-in-range also costs the in-range copy (local resolution), and one seed is
    not a decision: no margin yet (a margin needs thresholds derived from a seed sweep at
    default size), and the verdict stays the model's.""",
)
def check_rope_extrapolation_mechanism(ctx: Context) -> Evidence:
    """Issue 14 (version 2). Prediction: the pairs with closed-form wavelength 2π/θ_i > L
    (θ_i = 10000^(-2i/d) from ``theory/positions.py``). Measurement, independent of it: the
    phases the implementation actually reaches, read off ``RotaryEmbedding``'s cos/sin tables
    (atan2) at positions 0 .. L_test - 1. A pair is measured out of distribution when the
    largest arc of the circle that the trained positions 0 .. L-1 leave empty is wider than 1.5
    of its measured position step (a pair that turned fully leaves gaps of one step; one that
    did not leaves 2π - (L-1)θ) AND some test position's phase lies more than one step from
    every trained phase. The falsifier is a wrong frequency exponent planted in the library: the
    tables then reach other phases and the closed-form prediction no longer matches. The
    seed's version (high-frequency pairs are the OOD ones; PI compresses low-frequency
    resolution) is evaluated on the same measurement as seed margins.

    Issue 31 (version 3): kind model. The 'measurement' above is the phase-coverage geometry
    of the tables, mathematically the prediction 'wavelength > L' again: the verdict is the
    model's conclusion about which pairs a model meets out of distribution, not a measured
    model behaviour; the 14 records are merged into the three distinct errors."""
    d, base = 128, 10000.0
    L, L_test = (512, 4096) if ctx.size is not Size.TINY else (256, 2048)
    closed = torch.tensor(roformer_frequencies(d, base), dtype=torch.float64)
    wavelength = TWO_PI / closed  # the prediction's wavelengths, closed form
    predicted_ood = wavelength > L
    gap, step, unseen = _measured_phase_coverage(RotaryEmbedding(d, base=base), L, L_test)
    measured_ood = (gap > 1.5 * step) & (unseen > 0)
    # Pairs whose wavelength is within one position of L are boundary cases either side takes.
    boundary = (wavelength - L).abs() <= 1.0
    mismatches = torch.nonzero((measured_ood != predicted_ood) & ~boundary).flatten().tolist()
    s = L_test / L
    loss_pi, loss_ntk = _resolution_loss(d, base, s)
    high = ~predicted_ood
    pi_share_high = float(loss_pi[high].sum() / loss_pi.sum())
    ntk_high_change = float(loss_ntk[high].abs().max())
    high_ood = int((measured_ood & high).sum())
    low_ood = int((measured_ood & predicted_ood).sum())
    margins = [
        at_most("pairs whose measured OOD status contradicts wavelength > L", len(mismatches), 0),
        at_least("PI resolution loss share on high-frequency pairs", pi_share_high, 0.9),
    ]
    seed_margins = [
        at_least("seed: high-frequency pairs (wavelength <= L) measured OOD", high_ood, 1),
        at_most("seed: low-frequency pairs measured OOD ('基本无害')", low_ood, 0),
        at_least("seed: PI resolution loss share on low-frequency pairs",
                 1.0 - pi_share_high, 0.5),
    ]
    first_ood = next((i for i, v in enumerate(measured_ood.tolist()) if v), None)
    return Evidence(
        predicted={"OOD pairs": f"wavelength > L = {L} (low frequencies)",
                   "PI resolution loss on high-frequency pairs": "> 90 %"},
        measured={"OOD pairs (from the tables)": f"i >= {first_ood}" if first_ood is not None
                  else "none", "mismatched pairs": mismatches,
                  "high-frequency pairs OOD": high_ood, "low-frequency pairs OOD": low_ood,
                  "PI loss share on high pairs": pi_share_high},
        tolerance=("a pair is OOD when its trained phases leave an arc wider than 1.5 measured "
                   "steps and a test phase lies farther than one step from every trained one; "
                   "pairs with |wavelength - L| <= 1 are boundary cases"),
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            msg("d = {d}, base {base:g}, L_train = {L}, L_test = {L_test}; the seed says the "
                "high-frequency pairs are OOD and PI compresses low-frequency resolution; the "
                "measurement says the opposite on both counts", d=d, base=base, L=L, L_test=L_test),
            msg("NTK-aware (s = {s:g}) changes adjacent-position resolution of high pairs by at "
                "most {ntk_high_change:.2e}", s=s, ntk_high_change=ntk_high_change),
            _aliasing_note(base),
        ],
        details={"unseen_fraction": unseen.tolist(), "wavelength": wavelength.tolist(),
                 "largest_trained_gap": gap.tolist(), "measured_step": step.tolist(),
                 "pi_resolution_loss": loss_pi.tolist(), "ntk_resolution_loss": loss_ntk.tolist()},
        figures=[_unseen_figure(unseen, L, L_test, first_ood)],
    )


def _measured_phase_coverage(module: RotaryEmbedding, train_len: int, test_len: int
                             ) -> tuple[Tensor, Tensor, Tensor]:
    """Per pair, from the module's cos/sin tables at positions 0 .. test_len - 1 (float64 after
    atan2): the widest arc the trained phases (positions < train_len) leave empty, the measured
    step (phase of position 1), and the fraction of test positions whose phase lies farther
    than one step (at least 1e-3 rad) from every trained phase."""
    cos, sin = module(torch.arange(test_len))
    half = module.rotary_dim // 2
    phase = torch.atan2(sin[:, :half].double(), cos[:, :half].double()).remainder(TWO_PI)
    step = phase[1].clone()  # (P,) the angle one position turns, as the tables have it
    train = phase[:train_len].T.sort(dim=-1).values  # (P, L)
    gaps = torch.cat([train.diff(dim=-1), (train[:, :1] + TWO_PI - train[:, -1:])], dim=-1)
    gap = gaps.max(dim=-1).values
    test = phase[train_len:].T.contiguous()  # (P, N)
    idx = torch.searchsorted(train.contiguous(), test)
    n = train.shape[-1]
    above = torch.where(idx < n, train.gather(-1, idx.clamp(max=n - 1)) - test,
                        train[:, :1] + TWO_PI - test)
    below = torch.where(idx > 0, test - train.gather(-1, (idx - 1).clamp(min=0)),
                        test - (train[:, -1:] - TWO_PI))
    nearest = torch.minimum(above, below)
    unseen = (nearest > step.clamp_min(1e-3).unsqueeze(-1)).double().mean(-1)
    return gap, step, unseen


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
    return msg("aliasing (head_dim 16, L = 64): on the {pairs} pairs with wavelength < L, "
               "{aliased_high:.1%} of far distances in [64, 512) match some trained distance "
               "within 0.3 rad on every pair; on all 8 pairs {aliased_all:.1%}: only the "
               "low-frequency pairs tell those distances apart, and those are the OOD ones",
               pairs=len(hp16), aliased_high=aliased_high, aliased_all=aliased_all)


def _unseen_figure(unseen: Tensor, L: int, L_test: int, first_ood: int | None) -> Figure:
    return Figure(
        msg("Phases unseen in training at L_test = {L_test} (L_train = {L})", L_test=L_test, L=L),
        msg("pair index i (0 = highest frequency)"), msg("fraction of test positions unseen"),
        [Series(msg("unseen phase fraction"), list(range(unseen.numel())), unseen.tolist(),
                kind="bar")],
        vlines=[(float(first_ood) if first_ood is not None else 0.0,
                 msg("first pair with wavelength > L"))],
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
    source=("000 §8.3.3 理论 C (PI, NTK-aware, YaRN); 004 ch. 9 variant table; Chen et al. 2023; "
            "bloc97 2023; Peng et al. 2023; Llama 3.1; Ding et al. 2024 (LongRoPE); HF "
            "modeling_rope_utils (FACTS.md)"),
    statement="""Default, linear/PI, NTK-aware, dynamic NTK (at two lengths), YaRN, llama3 and
    LongRoPE (short factors at L0, long beyond) give the frequencies and attention factors of
    their published formulas, and after scaling by s = L_test/L_train each keeps the phases it
    claims to keep inside the trained range (PI: every pair; YaRN and llama3: every pair with
    wavelength > L_train; NTK: the lowest pair) while leaving the highest-frequency pair
    unchanged (all but PI). The main seed's 'YaRN leaves the low frequencies almost unchanged'
    is refuted: YaRN divides them by s. The third seed's NTK-aware row (every θ_i times
    α^(d/(d-2))) and YaRN row (low frequencies NTK, high frequencies linear) are refuted: NTK
    multiplies θ_i by α^(-2i/(d-2)), and YaRN keeps the high frequencies and divides the low
    ones by s.""",
    statement_zh="""默认、线性/PI、NTK-aware、动态 NTK（两个长度）、YaRN、llama3 与
    LongRoPE（L0 内用短因子，超出用长因子）给出与其公开公式一致的频率与注意力因子；按 s =
    L_test/L_train缩放后，每种方法都把它声称保持的相位留在训练范围内（PI：所有维度对；YaRN 与
    llama3：波长 > L_train 的维度对；NTK：最低频的一对），且除 PI 外都不改变最高频的一对。
    主文'YaRN低频几乎不动'被驳斥：YaRN 把低频除以 s。第三份种子文档表中的 NTK-aware 行（每个
    θ_i 乘以α^(d/(d-2))）与 YaRN 行（低频 NTK、高频线性）被驳斥：NTK 把 θ_i 乘以 α^(-2i/(d-2))
    ，YaRN 保持高频不变并把低频除以 s。""",
    falsifier="rope.yarn-attention-factor-dropped",
    expected="refuted",
    version=3,
    kind="measurement",
    audit="""Issue 31 review: sound (S); the review reads 000:664, 004:497 and 004:498 as
    genuine errors. Kept as is: θ' and the attention factor are read from RotaryEmbedding's
    tables and compared with the published closed forms (theory/positions.py, no shared code);
    the falsifier (YaRN's attention factor dropped) and the other planted scaling bugs sit in
    functional/rope_scaling.py, which every scaled model runs. Only the declarations changed
    (kind, verbatim quotes, the readings the seed margins test), so the version stays 3.""",
    seed_refs=[("000", 660, 666), ("004", 491, 499)],
    refutes=[
        Refutation(
            seed="000", line=664, quote='高频"外推"、中频"内插"、低频几乎不动',
            reading="YaRN leaves the lowest-frequency pair's θ almost unchanged (θ'/θ within "
                    "0.1 of 1)",
            says="YaRN: 高频'外推'、中频'内插'、低频几乎不动 (low frequencies almost unchanged)",
            correct="YaRN keeps the high-frequency pairs and divides the low-frequency ones "
                    "(wavelength > L0 / beta_slow) by s, ramping in between (Peng et al. 2023)"),
        Refutation(
            seed="004", line=497, quote="$b^{-2i/d_k}\\cdot {\\alpha }^{d_k/(d_k-2)}$",
            reading="NTK-aware multiplies every θ_i by α^(d/(d-2)) (max rel. deviation 1e-3)",
            says="NTK-aware: θ_i = b^(-2i/d_k) · α^(d_k/(d_k-2))",
            correct="NTK-aware raises the base to b α^(d/(d-2)), so θ'_i = θ_i α^(-2i/(d-2)): "
                    "the highest pair unchanged, the lowest divided by α; the seed's factor "
                    "multiplies every frequency by α^(d/(d-2)) > 1"),
        Refutation(
            seed="004", line=498, quote="分段 ${\\theta }_i$（低频 NTK、高频线性）",
            reading="YaRN divides the highest pair by s (linear) and its low band follows "
                    "NTK-aware's θ' (within 1e-2)",
            says="YaRN: 分段 θ_i（低频 NTK、高频线性）",
            correct="YaRN (NTK-by-parts) leaves the high frequencies unchanged and interpolates "
                    "the low ones linearly (θ/s), with a linear ramp between; neither band "
                    "follows the NTK formula"),
    ],
    corrections=[Correction(
        seed="004", line=499,
        says="LongRoPE: θ_i 通过搜索优化 | 256K 上下文",
        correct="LongRoPE extends the context window to 2048K tokens; 256K is the intermediate "
                "fine-tuning length of its progressive extension (fine-tune at 256K, then a "
                "second search to 2048K)",
        source="Ding et al., 'LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens', "
               "ICML 2024, arXiv 2402.13753 (abstract)")],
)
def check_scaling_methods(ctx: Context) -> Evidence:
    """Issue 14 (version 2). θ'_i and the attention factor are read off each RotaryEmbedding's
    cos/sin (atan2 at position 1, cos at position 0) and compared with the closed forms of
    ``theory/positions.py`` (Python floats, no code shared with ``functional/rope_scaling.py``).
    The falsifier is YaRN's attention factor dropped in the library (the inverted-YaRN edit of
    the measurement is gone); the planted bugs of ``rope_scaling.py`` (wrong exponent, factor
    squared, dynamic NTK with a fixed factor, LongRoPE switch off by one, llama3 bands swapped)
    all fail one of these margins. The seed's YaRN statement is a seed margin on the measured
    θ'/θ of YaRN's lowest-frequency pair."""
    d, base, L0, s = 64, 10000.0, 256, 8.0
    L_test = int(L0 * s)
    ref = torch.tensor(roformer_frequencies(d, base), dtype=torch.float64)
    problems: list[str] = []
    margins: list[Margin] = []
    measured: dict[str, Any] = {}
    rel_of: dict[str, Tensor] = {}
    for name, rope_type, cfg, seq_len in _scaling_cases(d, L0, s):
        module = RotaryEmbedding(d, base=base, scaling={"rope_type": rope_type, **cfg},
                                 max_position_embeddings=4)
        theta, factor = _measured_inv_freq(module, seq_len)
        expect, exp_factor = closed_form_rope_frequencies(rope_type, d, base, cfg, seq_len)
        expect_t = torch.tensor(expect, dtype=torch.float64)
        closed_err = float(((theta - expect_t).abs() / expect_t).max())
        margins.append(at_most(f"{name} max rel. error of θ' vs closed form", closed_err,
                               _THETA_TOL))
        # float32 cos(0) * factor: the factor rounded to float32 (~1e-7 absolute)
        margins.append(close_to(f"{name} attention factor", factor, exp_factor, abs_=1e-6))
        rel = theta / ref
        rel_of[name] = rel
        if seq_len == L_test and rope_type != "default":  # phases kept in range at L_test
            unseen = unseen_phase_fraction(ref, L0, L_test, test_inv_freq=theta)
            must_cover = _pairs_kept_in_range(rope_type, TWO_PI / ref, L0)
            margins.append(at_most(f"{name} max unseen phase fraction on the pairs it keeps in "
                                   "range", float(unseen[must_cover].max()), 0.0))
            if bool((unseen[must_cover] > 0).any()):
                bad = torch.nonzero(must_cover & (unseen > 0)).flatten().tolist()
                problems.append(f"{name}: pairs {bad} see unseen phases at L_test")
            if rope_type != "linear":
                margins.append(close_to(f"{name} highest-frequency θ'/θ", float(rel[0]), 1.0,
                                        abs_=_THETA_TOL))
        measured[name] = {"theta0'/theta0": float(rel[0]), "theta_last'/theta_last":
                          float(rel[-1]), "attention_factor": factor,
                          "max rel. error vs closed form": closed_err}
    # The seed (000 line 664): YaRN leaves the low-frequency band almost unchanged (θ'/θ ~ 1;
    # 0.1 is generous: the measured ratio is 1/s).
    seed_margins = [close_to("seed: YaRN lowest-frequency θ'/θ ≈ 1 ('低频几乎不动')",
                             float(rel_of["yarn"][-1]), 1.0, abs_=0.1)]
    # The third seed's table (004:497-498) on the same measured ratios θ'/θ.
    ntk_seed = s ** (d / (d - 2))
    ntk_dev = float(((rel_of["ntk"] - ntk_seed).abs() / ntk_seed).max())
    interpolated = (rel_of["yarn"] - 1.0 / s).abs() <= _THETA_TOL  # pairs YaRN divides by s
    interpolated[-1] = False  # NTK also divides the lowest pair by s exactly
    yarn_vs_ntk = float(((rel_of["yarn"] - rel_of["ntk"]).abs() / rel_of["ntk"])
                        [interpolated].max()) if bool(interpolated.any()) else 0.0
    seed_margins += [
        at_most("seed (004:497): NTK θ'_i/θ_i = α^(d/(d-2)) on every pair, max rel. deviation",
                ntk_dev, 1e-3),
        close_to("seed (004:498): YaRN highest-frequency θ'/θ = 1/s ('高频线性')",
                 float(rel_of["yarn"][0]), 1.0 / s, abs_=1e-3),
        at_most("seed (004:498): YaRN's low band follows NTK, max rel. |θ'_yarn - θ'_ntk|",
                yarn_vs_ntk, 1e-2),
    ]
    measured["004 table"] = {"NTK θ'/θ (first, last)": [float(rel_of["ntk"][0]),
                                                         float(rel_of["ntk"][-1])],
                             "seed's NTK factor α^(d/(d-2))": ntk_seed,
                             "YaRN pairs divided by s": int(interpolated.sum()) + 1,
                             "max rel. YaRN vs NTK on them": yarn_vs_ntk}
    broken = [m.name for m in margins if not m.holds]
    return Evidence(
        predicted="published closed forms (theory/positions.py); coverage as stated",
        measured=measured,
        tolerance="θ' 1e-5 relative (float32 tables), attention factor 1e-6; a test phase is "
                  "covered when within one step θ_i of the arc swept in training",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[msg("d = {d}, base {base:g}, L0 = {L0}, s = {s:g}, L_test = {L_test}; θ measured "
                   "from each RotaryEmbedding's cos/sin at positions 0, 1", d=d, base=base, L0=L0,
                   s=s, L_test=L_test), *problems,
               *(f"does not hold: {b}" for b in broken)],
    )


_THETA_TOL = 1e-5  # float32 atan2 of cos/sin at position 1: ~1e-7 relative; 1e-5 margin


def _scaling_cases(d: int, L0: int, s: float) -> list[tuple[str, str, dict[str, Any], int]]:
    """(name, rope type, params, evaluated length): each method at factor s over L0 at L_test;
    dynamic (factor 1: its base grows with the length) also at 2 L0, LongRoPE (long factors
    rising linearly from 1 to s) also at exactly L0, where the short factors still apply."""
    L_test = int(L0 * s)
    longrope = {"original_max_position_embeddings": L0, "factor": s,
                "short_factor": [1.0 + 0.5 * i / (d // 2 - 1) for i in range(d // 2)],
                "long_factor": [float(1 + (s - 1) * i / (d // 2 - 1)) for i in range(d // 2)]}
    dynamic = {"factor": 1.0, "original_max_position_embeddings": L0}
    return [
        ("default", "default", {}, L_test),
        ("linear", "linear", {"factor": s}, L_test),
        ("ntk", "ntk", {"factor": s}, L_test),
        ("dynamic", "dynamic", dynamic, L_test),
        ("dynamic@2L0", "dynamic", dynamic, 2 * L0),
        ("yarn", "yarn", {"factor": s, "original_max_position_embeddings": L0}, L_test),
        ("llama3", "llama3", {"factor": s, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": L0}, L_test),
        ("longrope", "longrope", longrope, L_test),
        ("longrope@L0", "longrope", longrope, L0),
    ]


def _pairs_kept_in_range(rope_type: str, wavelength: Tensor, L0: int) -> Tensor:
    """The pairs each method claims to keep inside the trained phase range: PI every pair,
    YaRN and llama3 those with wavelength > L0, NTK / dynamic / LongRoPE the lowest one."""
    long_pairs = wavelength > L0
    lowest = torch.arange(wavelength.numel()) == wavelength.numel() - 1
    return {"linear": torch.ones_like(long_pairs), "yarn": long_pairs,
            "llama3": long_pairs, "ntk": lowest, "dynamic": lowest, "longrope": lowest}[rope_type]
