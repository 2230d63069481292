"""Action decoders side by side (000 §8.3.8 decoding table, 000:1305-1316; issue 20): diffusion
(DDIM), flow matching (Euler) and 256-bin autoregressive heads on the bimodal obstacle task and
on point-mass tracking, and the cost and quality of K sampler steps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    claim,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE, preset
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import memo, robotics_decoders
from transformer_math.experiments.robotics_decoders import (
    BimodalOutcome,
    DecoderResult,
    DecoderStudyConfig,
)
from transformer_math.i18n.message import msg

TABLE = ("000", 1304, 1314)
MIN_Z = 3.0
MIN_MINORITY = 0.2
MIN_SUCCESS = 0.5
MAX_TRACKING_RATIO = 2.0
MAX_COLLISION_AT_K = 0.15
MIN_COLLISION_ONE_STEP = 0.3


def collision_z(baseline: BimodalOutcome, other: BimodalOutcome, n: int) -> float:
    """Two-proportion z of (baseline - other) collision rates over n rollouts each."""
    a, b = baseline.collision_rate, other.collision_rate
    se = math.sqrt((a * (1 - a) + b * (1 - b)) / n)
    return (a - b) / se if se > 0 else (math.inf if a > b else 0.0)


def minority(outcome: BimodalOutcome) -> float:
    """The rarer side's share among the rollouts that passed the obstacle (0 if none passed)."""
    left = outcome.left_fraction
    return 0.0 if outcome.passed == 0 or not math.isfinite(left) else min(left, 1.0 - left)


def _study(ctx: Context, **overrides: Any) -> DecoderResult:
    cfg = preset(DecoderStudyConfig, ctx, **overrides)
    return memo.memoized(robotics_decoders.run, cfg)


def _paths_figure(res: DecoderResult, names: tuple[str, ...]) -> Figure:
    series = []
    styles = {"mse": "r-", "diffusion": "b-", "flow_matching": "b-", "ar_bins": "b-",
              "ar_greedy": "g:"}
    for name in names:
        for j, path in enumerate(res.bimodal[name].paths):
            arr = np.asarray(path)
            series.append(Series(robotics_decoders.LABELS[name] if j == 0 else "",
                                 arr[:, 0].tolist(), arr[:, 1].tolist(),
                                 style=styles.get(name, "k-")))
    return Figure(msg("Bimodal obstacle task: rollouts (obstacle at (0, 1), goal (0, 2))"),
                  "x", "y", series)


def _decoder_values(ctx: Context, name: str) -> tuple[dict[str, float], DecoderResult]:
    res = _study(ctx, decoders=("mse", name))
    mse, dec = res.bimodal["mse"], res.bimodal[name]
    n = res.config.num_test
    values = {"mse_collision": mse.collision_rate, "collision": dec.collision_rate,
              "success": dec.success_rate, "collision_z": collision_z(mse, dec, n),
              "left_fraction": dec.left_fraction, "minority_side": minority(dec),
              "tracking_error": res.tracking[name], "expert_tracking_error":
              res.tracking["expert"],
              "tracking_ratio": res.tracking[name] / res.tracking["expert"],
              "ms_per_chunk": 1e3 * res.seconds_per_chunk[name][0],
              "flops_per_chunk": float(res.flops_per_chunk[name][0])}
    return values, res


def _measured(sweep) -> dict[str, dict[str, float]]:
    return {n: {"mean": round(sweep.mean(n), 4), "spread": round(sweep.spread(n), 4),
                "min": round(sweep.lo(n), 4), "max": round(sweep.hi(n), 4)}
            for n in sweep.values}


def _common_margins(sweep, what: str) -> list:
    return [
        sweep.at_least("collision_z", MIN_Z, f"z of (MSE - {what}) collision rates"),
        sweep.at_least("minority_side", MIN_MINORITY, f"{what}: share of the rarer side"),
        sweep.at_least("success", MIN_SUCCESS, f"{what}: share of rollouts reaching the goal"),
    ]


def _tolerance(n: int) -> str:
    return (f"bimodal: {n} rollouts per policy, two-proportion z >= {MIN_Z:g} against the MSE "
            f"chunk MLP (sampling error: one-sided p < 0.0014), rarer side >= {MIN_MINORITY:g} "
            "of the rollouts that pass (the demonstrations: ~1/2; a collapsed decoder: ~0), "
            f"goal reached in >= {MIN_SUCCESS:g}; point mass: mean tracking error <= "
            f"{MAX_TRACKING_RATIO:g} x the noisy expert's on the same paths; worst seed. The "
            "z threshold is a sampling-error bound; the 0.2, 0.5 and 2x were set in issue 20 "
            "with the default-size run of seed 0 in view (version 1) and are stated "
            "tolerances, not derived from a null model (see audit).")


#: Issue 31 review (diffusion/flow-matching: 'thresholds from one default-size seed'): the
#: provenance of each threshold, written once for the decoder claims
THRESHOLD_AUDIT = """Thresholds: z >= 3 is a sampling-error bound (two-proportion test of
    the collision rates over the config's test rollouts, one-sided p < 0.0014), derived. The
    rarer-side share >= 0.2 (demonstrations ~0.5, a collapsed decoder ~0; with ~100 passing
    rollouts the binomial standard error near 0.5 is 0.05, so 0.2 is 6 standard errors below
    the demonstrations and a decoder that takes the rarer side in one rollout of ten fails it),
    the goal reached in >= 50 % (a majority) and tracking within 2x the noisy expert are stated
    tolerances chosen in issue 20 with the default-size run of seed 0 in view, not derived from
    a null model before looking; this is said here rather than re-tuned (they were not moved
    after a failure). Tiny runs one seed in CI; the verdict is decided on the worst of the
    seeds run."""


def _decoder_evidence(sweep, name: str, what: str, note: str) -> Evidence:
    """The verdict of a continuous decoder's claim from its seed sweep (:func:`_decoder_values`);
    the check itself calls ``over_seeds`` so that executors run its seeds as separate tasks."""
    res = sweep.runs[0]
    margins = [*_common_margins(sweep, what),
               sweep.at_most("tracking_ratio", MAX_TRACKING_RATIO,
                             f"{what} / expert tracking error (point mass)")]
    return Evidence(
        predicted={"multimodality": f"{what} samples one mode per rollout: far fewer "
                   "collisions than the MSE mean, both sides used",
                   "tracking": f"within {MAX_TRACKING_RATIO:g}x the demonstrator's error"},
        measured=_measured(sweep),
        tolerance=_tolerance(res.config.num_test),
        verdict=decide(margins),
        notes=[note, f"first seed: training {res.train_seconds}, run {res.seconds:.1f} s"],
        margins=margins,
        per_seed=sweep.to_json(),
        figures=[_paths_figure(res, ("mse", name))],
    )


@claim(
    "robotics.diffusion-decoder",
    source=f"{SOURCE} decoding table (Diffusion/DDPM: 多峰能力 强); Ho et al. 2020; Song et "
    "al. 2021; Chi et al. 2023",
    statement="A diffusion action head (DDPM training with 100 steps, DDIM sampling with K = "
    "10, a DiT-style adaLN-Zero Transformer over the chunk) keeps both modes of the bimodal "
    "obstacle task: it collides far less than an MSE chunk regressor (z >= 3), passes on each "
    "side in >= 20 % of the rollouts and reaches the goal in >= 50 %; on point-mass tracking its "
    "error is within 2x the noisy expert's. On every seed.",
    statement_zh="扩散动作头（DDPM 训练 100 步，DDIM 以 K = 10 步采样，动作块上的 DiT 式 "
    "adaLN-Zero Transformer）在双峰避障任务上保留两个峰：碰撞远少于 MSE 动作块回归器（z >= 3），"
    "两侧各占通过障碍的轨迹 >= 20 %，且 >= 50 % 的轨迹到达目标；在点质量跟踪任务上误差不超过带噪"
    "专家的 2 倍。在每个种子上都成立。",
    tier="full",
    falsifier="nn.adaln-condition-ignored",
    expected="verified",
    version=1,
    kind="measurement",
    audit="Issue 31 review (m, b): " + THRESHOLD_AUDIT,
    seed_refs=[TABLE, ("000", 1313, 1313)],
)
def check_diffusion_decoder(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, lambda c: _decoder_values(c, "diffusion"))
    return _decoder_evidence(sweep, "diffusion", "diffusion (DDIM)",
                          "The network predicts A0 (Diffusion Policy's prediction_type='sample'): "
                          "with the epsilon target the point-mass tracking error was 0.196 "
                          "(seed 0, default size) against 0.061 with A0 and 0.064 for the "
                          "expert; the bimodal task works with either.")


@claim(
    "robotics.flow-matching-decoder",
    source=f"{SOURCE} decoding table (Flow Matching: 多峰能力 强, K ~ 10); Lipman et al. 2023; "
    "Black et al. 2024 (pi0)",
    statement="A flow-matching action head (conditional flow matching on straight "
    "noise-to-data paths, K = 10 Euler steps, the same adaLN-Zero Transformer) keeps both modes "
    "of the bimodal obstacle task (collisions below the MSE chunk regressor's with z >= 3, each "
    "side >= 20 % of the passing rollouts, the goal reached in >= 50 %) and tracks the "
    "point-mass reference within 2x the noisy expert's error. On every seed.",
    statement_zh="流匹配动作头（在噪声到数据的直线路径上做条件流匹配，K = 10 个 Euler 步，同一"
    "个 adaLN-Zero Transformer）在双峰避障任务上保留两个峰（碰撞低于 MSE 动作块回归器，z >= 3；两"
    "侧各占通过轨迹 >= 20 %；>= 50 % 到达目标），并以不超过带噪专家 2 倍的误差跟踪点质量参考轨迹"
    "。在每个种子上都成立。",
    tier="full",
    falsifier="robotics.flow-target-reversed",
    expected="verified",
    version=1,
    kind="measurement",
    audit="Issue 31 review (m, b): " + THRESHOLD_AUDIT,
    seed_refs=[TABLE, ("000", 1313, 1313)],
)
def check_flow_matching_decoder(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, lambda c: _decoder_values(c, "flow_matching"))
    return _decoder_evidence(sweep, "flow_matching", "flow matching (Euler)",
                          "Time convention: A^tau = (1 - tau) eps + tau A, target A - eps, "
                          "Euler from tau = 0 (noise) to 1; pi0 writes the reverse convention.")


def _ar_values(ctx: Context) -> tuple[dict[str, float], DecoderResult]:
    values, res = _decoder_values(ctx, "ar_bins")
    greedy = res.bimodal["ar_greedy"]
    values.update({"greedy_collision": greedy.collision_rate,
                   "greedy_minority_side": minority(greedy),
                   "greedy_tracking_ratio": res.tracking["ar_greedy"] / res.tracking["expert"],
                   "greedy_tracking_error": res.tracking["ar_greedy"]})
    return values, res


@claim(
    "robotics.ar-bins-decoder",
    source=f"{SOURCE} decoding table (自回归 256-bin: 多峰能力 弱（易 mode collapse）); Brohan "
    "et al. 2023 (RT-2); Kim et al. 2024 (OpenVLA)",
    statement="A 256-bin autoregressive action head (one token per action dimension and step, "
    "bins between the 1st and 99th percentiles, a causal Transformer after the state token), "
    "sampled at temperature 1, keeps both modes of the 2-D bimodal obstacle task: collisions "
    "below the MSE chunk regressor's with z >= 3, each side >= 20 % of the passing rollouts, "
    "the goal reached in >= 50 %. On every seed. Its point-mass tracking error (sampled and "
    "greedy) is measured and reported, not decided. This toy does not decide the seed's "
    "'weak multimodality (prone to mode collapse)', a statement about training at VLA scale.",
    statement_zh="256 档自回归动作头（每个动作维度、每一步一个 token，分档区间取第 1 到第 99 "
    "百分位，状态 token 之后接因果 Transformer）以温度 1 "
    "采样时保留二维双峰避障任务的两个峰：碰撞低于 MSE 动作块回归器（z >= 3），两侧各占通过轨迹 "
    ">= 20 %，>= 50 % 到达目标。在每个种子上都成立。它在点质量任务上的跟踪误差（采样与贪心解码）"
    "只测量并报告，不参与判定。这个玩具任务不能判定种子文本所说的“多峰能力弱（易 mode "
    "collapse）”，那是关于 VLA 规模训练的陈述。",
    tier="full",
    falsifier="robotics.ar-labels-unshifted",
    expected="verified",
    version=2,
    kind="measurement",
    seed_refs=[TABLE, ("000", 1312, 1312)],
    audit="""Issue 31 review (P, c, b): agreed, the refutation of 000:1305/1312 is dropped. The
    seed says that in practice, at VLA scale (RT-2, OpenVLA), the binned autoregressive
    factorisation is prone to collapse onto one mode in its early dimensions; one 2-D bimodal
    toy sampled at temperature 1 cannot refute a statement about that regime (and the seed
    itself concedes that the discrete distribution can represent several modes). Version 2 is
    verified of what it measures (both modes kept on the toy). """ + THRESHOLD_AUDIT,
)
def check_ar_bins_decoder(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _ar_values)
    res = sweep.runs[0]
    margins = _common_margins(sweep, "binned AR (sampled)")
    return Evidence(
        predicted={"sampled at temperature 1": "both modes kept (not a test of 000:1305 at "
                   "VLA scale)"},
        measured=_measured(sweep),
        tolerance=_tolerance(res.config.num_test),
        verdict=decide(margins),
        notes=["Point-mass tracking is reported, not decided (tracking_ratio sampled, "
               "greedy_tracking_ratio argmax, both / the expert's error): issue 20 measured at "
               "seed 0 greedy 1.7x and sampled 6.8x the expert at the default size (100 "
               "demonstrations of 200 steps), greedy 6.2x at tiny even with 2000 steps and "
               "d = 64 (50 of 100 steps): the 256-way token distributions need more data than "
               "the continuous heads, which track within 1x at both sizes.",
               f"first seed: training {res.train_seconds}, run {res.seconds:.1f} s"],
        margins=margins,
        per_seed=sweep.to_json(),
        figures=[_paths_figure(res, ("mse", "ar_bins", "ar_greedy"))],
    )


def _steps_values(ctx: Context) -> tuple[dict[str, float], DecoderResult]:
    res = _study(ctx, decoders=("diffusion", "flow_matching"), tasks=("bimodal",))
    k0 = res.config.inference_steps
    values: dict[str, float] = {}
    for name, short in (("diffusion", "diffusion"), ("flow_matching", "flow")):
        sweep, flops = res.step_sweep[name], res.flops_per_chunk[name]
        one = flops[1]
        values[f"{short}_flops_nonlinearity"] = max(abs(flops[k] / (k * one) - 1.0)
                                                    for k in sweep)
        for k in sweep:
            values[f"{short}_collision_k{k}"] = sweep[k].collision_rate
            values[f"{short}_ms_k{k}"] = 1e3 * res.seconds_per_chunk[name][k]
    n = res.config.num_test
    values["diffusion_z_k10_vs_k50"] = -collision_z(res.step_sweep["diffusion"][50],
                                                    res.step_sweep["diffusion"][k0], n)
    return values, res


def _steps_figure(res: DecoderResult) -> list[Figure]:
    out = []
    for metric, label in (("collision", "collision rate"), ("ms", "ms per chunk (batch 1)")):
        series = []
        for name in ("diffusion", "flow_matching"):
            ks = sorted(res.step_sweep[name])
            ys = ([res.step_sweep[name][k].collision_rate for k in ks] if metric == "collision"
                  else [1e3 * res.seconds_per_chunk[name][k] for k in ks])
            series.append(Series(robotics_decoders.LABELS[name], [float(k) for k in ks], ys,
                                 style="o-"))
        out.append(Figure(f"Bimodal task: {label} vs sampler steps K", "K", label, series,
                          logx=True))
    return out


@claim(
    "robotics.decoder-steps",
    source=f"{SOURCE} decoding table (推理延迟 O(K T_head), diffusion K ~ 50, flow K ~ 10)",
    statement="The cost of an iterative decoder is K forwards of its head (the seed's "
    "O(K T_head)): the matrix-product FLOPs counted per chunk equal K times those of K = 1 "
    "(both decoders, every K). Quality needs the iteration: with K = 1 diffusion and flow "
    "matching each collide in >= 30 % of the bimodal rollouts, with K = 10 in <= 15 %; on this "
    "toy DDIM at K = 10 collides no more than at K = 50 (not higher by 3 standard errors). On "
    "every seed.",
    statement_zh="迭代解码器的代价是其头部的 K 次前向（种子文本中的 O(K T_head)）：每个动作块"
    "统计到的矩阵乘 FLOPs 恰为 K = 1 时的 K 倍（两种解码器、每个 K）。质量需要迭代：K = 1 时扩散"
    "与流匹配在双峰任务中各有 >= 30 % 的轨迹碰撞，K = 10 时 <= 15 %；在这个玩具任务上，DDIM 在 "
    "K = 10 时的碰撞率不高于 K = 50 时（不高出 3 个标准误）。在每个种子上都成立。",
    tier="full",
    falsifier="robotics.ddim-timesteps-truncated",
    expected="verified",
    version=2,
    kind="measurement",
    seed_refs=[TABLE, ("000", 1313, 1313)],
    audit="""Issue 31 review (P, c; section 4 item 1: 'typical K read as a requirement'): agreed,
    the refutation of 000:1306 is dropped. 'K ~ 50' in the seed's table is a typical value
    (Diffusion Policy's DDPM setting), not a claim that fewer steps fail; 'K = 10 suffices on
    this toy' does not contradict it. The K = 10 vs K = 50 comparison stays as a measured margin
    (z <= 3, a sampling-error bound), no longer a seed margin. The FLOP count (exact) is the
    seed's O(K T_head). The collision thresholds at K = 1 (>= 0.3) and K = 10 (<= 0.15) were set
    in issue 20 with the default-size run of seed 0 in view: stated, not derived from a null
    model; not moved since. Version 2.""",
)
def check_decoder_steps(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _steps_values)
    res = sweep.runs[0]
    k0 = res.config.inference_steps
    margins = []
    for short, what in (("diffusion", "diffusion (DDIM)"), ("flow", "flow matching")):
        margins += [
            sweep.at_most(f"{short}_flops_nonlinearity", 1e-9,
                          f"{what}: max_K |FLOPs(K) / (K FLOPs(1)) - 1|"),
            sweep.at_least(f"{short}_collision_k1", MIN_COLLISION_ONE_STEP,
                           f"{what}: collision rate at K = 1"),
            sweep.at_most(f"{short}_collision_k{k0}", MAX_COLLISION_AT_K,
                          f"{what}: collision rate at K = {k0}"),
        ]
    margins.append(sweep.at_most("diffusion_z_k10_vs_k50", MIN_Z,
                                 f"DDIM: z of (collisions at K = {k0} - at K = 50)"))
    return Evidence(
        predicted={"cost": "FLOPs(K) = K FLOPs(1) (O(K T_head))",
                   "quality": f"K = 1 not enough (>= {MIN_COLLISION_ONE_STEP:g} collide), "
                   f"K = {k0} enough (<= {MAX_COLLISION_AT_K:g})",
                   f"DDIM K = {k0} vs K = 50": "not worse by 3 standard errors"},
        measured=_measured(sweep),
        tolerance="FLOPs: exact up to 1e-9 (the same forward K times); collisions: "
        f"{res.config.num_test} rollouts per K, K = 10 vs 50 within z <= 3; worst seed. "
        "Wall-clock per chunk (batch 1, this CPU) is reported, not decided on. The collision "
        "thresholds were set in issue 20 with the default-size run of seed 0 in view (v1).",
        verdict=decide(margins),
        notes=[f"first seed: run {res.seconds:.1f} s"],
        margins=margins,
        per_seed=sweep.to_json(),
        figures=_steps_figure(res),
    )
