"""Behaviour cloning with action chunks: compounding error and the chunking trade-off under
disturbances (000 §8.3.8 理论 B; Ross & Bagnell 2010; Zhao et al. 2023)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Refutation,
    Series,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE, preset
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import (
    memo,
    robotics_chunking_tradeoff,
    robotics_compounding,
)
from transformer_math.i18n.message import msg
from transformer_math.robotics.envs.point_mass import NUM_WAYPOINTS
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)


def _compounding(cfg: robotics_compounding.ChunkSweepConfig
                 ) -> robotics_compounding.ChunkSweepResult:
    """Evaluate the trained chunk policies (``experiments.memo``: trained once per config, and
    reused under a planted bug whose site the training never passes, e.g. the executor's)."""
    trained = memo.memoized(robotics_compounding.train_chunk_policies, cfg)
    return robotics_compounding.evaluate_chunk_policies(cfg, trained)


def _compounding_figures(cfg: robotics_compounding.CompoundingConfig,
                         res: robotics_compounding.ChunkSweepResult,
                         chunked: dict[int, float]) -> list[Figure]:
    """Error curves over time for each k, and the mean error against k."""
    steps = list(range(1, len(res.get(1, "open_loop").error_curve) + 1))
    return [
        Figure(
            msg("Tracking error vs time step (open-loop chunks)"), msg("time step"),
            msg("mean |p - p_ref| (m)"),
            [Series(msg("expert"), steps, res.expert.error_curve, style="k--")]
            + [Series(f"k={k}", steps, res.get(k, "open_loop").error_curve)
               for k in cfg.chunk_sizes],
        ),
        Figure(
            msg("Mean tracking error vs chunk size"), msg("chunk size k"), msg("mean error (m)"),
            [Series(msg("open loop"), list(map(float, cfg.chunk_sizes)),
                    [chunked[k] for k in cfg.chunk_sizes], style="o-")]
            + ([Series(msg("replan every step"), [float(k) for k in cfg.chunk_sizes if k > 1],
                       [res.get(k, "replan").mean_error for k in cfg.chunk_sizes if k > 1],
                       style="s--")] if "replan" in cfg.modes else []),
            logx=True,
        ),
    ]


def lookahead_window(cfg: robotics_compounding.ChunkSweepConfig) -> tuple[int, list[int]]:
    """(L, the chunk sizes k with k - 1 <= L): L = (NUM_WAYPOINTS - 1) * waypoint_stride is the
    observation's reference look-ahead in steps (point_mass.observe). A chunk issued at t holds
    a_t, ..., a_{t+k-1}; the expert's a_{t+j} tracks p_ref((t + j) dt), which the observation
    contains for j <= L only. T^2 eps / k (Ross & Bagnell's argument per chunk) takes a chunk
    error eps that does not grow with k; that needs the chunk to be a function of what is
    observed, i.e. k - 1 <= L. Beyond it the last k - 1 - L actions track an unseen reference."""
    horizon = (NUM_WAYPOINTS - 1) * cfg.task.waypoint_stride
    return horizon, [k for k in sorted(cfg.chunk_sizes) if k - 1 <= horizon]


def _compounding_values(ctx: Context) -> tuple[dict[str, float], tuple]:
    """One seed: the k = 1 log-log slope of the cumulative deviation, error ratios vs k = 1
    inside the look-ahead window, and (measured only) the error ratio beyond it."""
    cfg = preset(robotics_compounding.CompoundingConfig, ctx)
    res = _compounding(cfg)
    curve = np.asarray(res.get(1, "open_loop").error_curve)
    h = len(curve)
    cumulative = np.cumsum(curve)
    # log-log slope of the cumulative deviation between T = H/4 and T = H
    slope = float(math.log(cumulative[-1] / cumulative[h // 4 - 1]) / math.log(4.0))
    chunked = {k: res.get(k, "open_loop").mean_error for k in cfg.chunk_sizes}
    ks = sorted(cfg.chunk_sizes)
    _, window = lookahead_window(cfg)
    if len(window) < 2 or window[0] != 1:
        raise ValueError(f"need k = 1 and another chunk size with k - 1 <= look-ahead, got {ks}")
    k_win = window[-1]
    best_k = min((k for k in ks if k > 1), key=lambda k: chunked[k])
    # "falls as k grows" inside the window: the largest ratio between consecutive chunk sizes
    step = max(chunked[b] / chunked[a] for a, b in itertools.pairwise(window))
    beyond = {f"ratio_k{k}_over_k{k_win}": chunked[k] / chunked[k_win] for k in ks
              if k > k_win}
    if beyond:  # the seed's 'the larger the chunk, the smaller the error', beyond L
        beyond["ratio_beyond_max"] = max(beyond.values())
    values = {"slope": slope, "ratio_step_max": step,
              "ratio_kmax": chunked[k_win] / chunked[1], "k_window_max": float(k_win),
              **beyond,
              "ratio_best": chunked[best_k] / chunked[1], "best_k": float(best_k),
              "early": float(curve[: h // 4].mean()), "late": float(curve[-h // 4:].mean()),
              **{f"error_k{k}": v for k, v in chunked.items()}}
    return values, (cfg, res, chunked)


#: The seed's 'the larger the chunk, the smaller the error' beyond the look-ahead is refuted when
#: error(k) / error(largest k <= L + 1) exceeds this for some k with k - 1 > L, on every seed: the
#: same 10 % noise allowance as the 0.9 of the in-window fall (a 100-500-path mean's spread)
RISE_BAND = 1.1


@claim(
    "robotics.compounding-error",
    source=f"{SOURCE} 理论 B (O(T^2 eps), O(T^2 eps / k), worked example T=400, eps=0.01); "
    "Ross & Bagnell 2010",
    statement="Behaviour cloning on a noisy-expert tracking task without disturbances, whose "
    "observation holds the reference L = 24 steps ahead: deviation grows superlinearly with "
    "horizon at k = 1 and the error falls at every step of the chunk size k while a chunk lies "
    "inside the look-ahead (k - 1 <= L), on every seed. The seed's unconditional 'the larger "
    "the chunk, the smaller the error' is tested beyond L: refuted when the error at a k with "
    "k - 1 > L exceeds the error at the largest k <= L + 1 by more than 10 % on every seed; a "
    "sweep that stops at k - 1 <= L (tiny: k up to 16) cannot decide it (inconclusive). Worked "
    "example T=400, eps=0.01: 1600 vs ~18 at k = 90 is T^2 eps vs T^2 eps / k.",
    statement_zh="在无扰动、观测包含前方 L = 24 步参考轨迹的带噪专家跟踪任务上做行为克隆："
    "k = 1 时偏差随时域超线性增长；当动作块位于前瞻窗口内（k - 1 <= L）时，误差随块大小 k 的每一"
    "步都下降，在每个种子上都成立。种子文本无条件的“块越大误差越小”在 L 之外检验：若在每个种子上，"
    "某个 k - 1 > L 的 k 的误差都比最大的 k <= L + 1 的误差高出 10 % 以上，则该说法被否定；扫描"
    "止于 k - 1 <= L 时（tiny：k 至多 16）无法判定（inconclusive）。算例 T=400、eps=0.01：1600 "
    "对 k = 90 时约 18，即 T^2 eps 对 T^2 eps / k。",
    tier="full",
    falsifier="robotics.chunk-index-frozen",
    expected="refuted",
    version=4,
    kind="measurement",
    seed_refs=[("000", 1253, 1265), ("000", 1324, 1324), ("000", 1332, 1332)],
    refutes=[Refutation(
        seed="000", line=1324,
        quote="块越大误差越小",
        also=(1265,),
        says="the larger the chunk, the smaller the (compounding) error (again at 000:1265: "
        "'k large: small compounding error, high open-loop precision', the price of large k "
        "being only the reaction to disturbances)",
        reading="on a task without disturbances, a larger chunk never gives a clearly larger "
        "error: error(k) <= 1.1 error(k') for k > k', tested at the chunk sizes beyond the "
        "observation's look-ahead (k - 1 > L) against the largest k <= L + 1; refuted only "
        "when that fails on every seed",
        correct="the error falls with k only while the chunk's actions are functions of what "
        "the observation holds (k - 1 <= L); the last k - 1 - L actions of a longer chunk track "
        "a reference the policy never saw and the error rises (issue 19, default size: "
        "error(32) / error(16) = 1.73-1.97 on seeds 0-2; ACT's own chunk ablation also tapers "
        "above k = 100, robotics.paper-reports)")],
    audit="""Issue 31 review (P, e; section 4 item 5): agreed. Version 3 restricted 'falls
    with k' to k - 1 <= L after the default run rose from k = 16 to k = 32 on every seed, and was
    'verified' while its notes called the seed's unconditional statement refuted. Version 4
    keeps the in-window fall (thresholds unchanged) and decides the beyond-L part as a seed
    margin on 000:1324 ('块越大误差越小', also 000:1265), with a decisive margin that the sweep
    reaches a k with k - 1 > L: refuted at the default size (k up to 32), inconclusive at tiny
    (k in 1, 4, 16, all inside L + 1 = 25), never narrowed away. The 10 % band (RISE_BAND) is
    the same noise allowance as the in-window 0.9 and was fixed before this version's run. The
    DP-vs-T^2 eps numbers of the worked example are formulas compared with formulas (the review
    notes it): they are reported in details, no longer margins; the seed's algebra is decided
    by robotics.chunked-error-bound. The task has one confound the reader should weigh: its
    preview horizon L is a property of this environment (the break follows L: stride 3, L = 36,
    falls through k = 32; stride 1, L = 12, rises from k = 16).""",
)
def check_compounding_error(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _compounding_values)
    cfg, res, chunked = sweep.runs[0]
    lookahead, window = lookahead_window(cfg)
    k_win = window[-1]
    beyond = [n for n in sweep.values if n.startswith("ratio_k") and "_over_k" in n]
    beyond_ks = [k for k in sorted(cfg.chunk_sizes) if k > k_win]
    example = {
        "T^2 eps (k=1)": bc_regret_bound(400, 0.01),
        "T^2 eps / k (k=90)": seed_chunked_bound(400, 0.01, 90),
        "(T/k)^2 eps (k=90, literal substitution)": substituted_bound(400, 0.01, 90),
        "worst-case expected cost k=1 (DP)": worst_case_expected_cost(400, 0.01, 1),
        "worst-case expected cost k=90, eps per chunk (DP)": worst_case_expected_cost(
            400, 0.01, 90),
        "worst-case expected cost k=90, eps per step (DP)": worst_case_expected_cost(
            400, 0.01, 90, per_step_error=True),
    }
    margins = [
        sweep.at_least("slope", 1.1, "cumulative deviation log-log slope at k=1"),
        sweep.at_most("ratio_step_max", 1.0, "max over consecutive k <= L + 1 of "
                      "error(k') / error(k)"),
        sweep.at_most("ratio_kmax", 0.9, f"error(k={k_win}, largest k <= L + 1) / error(k=1)"),
    ]
    decisive = [at_least(f"chunk sizes with k - 1 > L = {lookahead} in the sweep (the seed's "
                         "'larger chunk, smaller error' is tested there)", len(beyond_ks), 1)]
    seed_margins = []
    if beyond_ks:
        seed_margins.append(at_most(
            f"seed's 'larger chunk, smaller error' beyond L: max over k > {k_win} of error(k) / "
            f"error(k={k_win}), smallest of {len(sweep.seeds)} seeds", sweep.lo("ratio_beyond_max"),
            RISE_BAND))
    names = ("slope", "ratio_step_max", "ratio_kmax", *beyond,
             *(["ratio_beyond_max"] if beyond_ks else []))
    verdict = decide(margins, seed_margins, decisive)
    return Evidence(
        predicted={"cumulative deviation log-log slope": "in (1, 2] (T^2 eps is an upper bound)",
                   "error(k) vs error(1)": f"falls at every step of k for k - 1 <= L = "
                   f"{lookahead} (k in {window})",
                   "seed (000:1324, 1265)": f"error(k) <= {RISE_BAND:g} error(k={k_win}) for "
                   f"k > {k_win} too",
                   "worked example": [1600.0, round(seed_chunked_bound(400, 0.01, 90), 2)]},
        measured={**{n: {"mean": round(sweep.mean(n), 4), "spread": round(sweep.spread(n), 4),
                         "worst": round(sweep.lo(n) if n == "slope" else sweep.hi(n), 4),
                         "smallest": round(sweep.lo(n), 4)}
                     for n in names},
                  "look-ahead L (steps), k inside": {"L": lookahead, "k": window,
                                                    "k beyond": beyond_ks},
                  "error by k (first seed)": {str(k): round(v, 4) for k, v in chunked.items()}},
        tolerance="slope > 1.1 (a flat error curve gives 1.0; 0.1 margin for the noise of a "
        "100-path mean); error falls at every step of k <= L + 1 (ratio <= 1) and error(largest "
        f"such k) < 0.9 error(1) (10 % margin); each on the worst of {len(sweep.seeds)} seeds. "
        f"Beyond L: the seed's reading holds while error(k) <= {RISE_BAND:g} error(k_win) on "
        "some seed (refuted only when it fails on every seed).",
        verdict=verdict,
        notes=[
            *(["Inconclusive: this size's sweep has no chunk size beyond the look-ahead "
               f"(k - 1 > L = {lookahead}); --size default (k up to 32) decides the seed's "
               "'the larger the chunk, the smaller the error' there."]
              if not beyond_ks else []),
            "The seed's 1600 vs ~18 is T^2 eps vs T^2 eps / k; its derivation ('substitute T -> "
            "T/k') literally gives (T/k)^2 eps = 0.198 (robotics.chunked-error-bound, refuted: "
            "000:1257). The DP worst cases of the worked example are in details (formulas, not "
            "measurements).",
            msg("T^2 eps = 1600 exceeds the maximal cost T = 400: the bound is vacuous at "
                "T = 400."),
            "Issue 12: tiny trains 1500 steps on 50 demos, horizon 200, k in 1, 4, 16. Issue "
            "14 (version 2): on the worst of the seeds; 'error(second k) <= error(1)' and "
            "'min_k error(k) <= 0.9 error(1)' became 'error falls at every step of k' and "
            "'error(k_max) <= 0.9 error(1)'.",
            "Issue 19 (version 3): at --size default error rose from k = 16 to k = 32 on every "
            "seed (error(32) / error(16) = 1.73-1.97, seeds 0-2; seed 0: 0.0631, 0.0514, "
            "0.0365, 0.0264, 0.0201, 0.0349 at k = 1..32). Cause: the observation holds the "
            "reference only L = 24 steps ahead (13 waypoints, stride 2); a 32-chunk's last 7 "
            "actions track a reference the policy never sees. Not a training, capacity or "
            "executor bug (seed 0, k = 16, 24, 32: 0.0201, 0.0195, 0.0349; 4000 steps 0.0204, "
            "0.0213, 0.0367; hidden 128 0.0207, 0.0191, 0.0348); the break follows L: stride 3 "
            "(L = 36) 0.0262, 0.0218, 0.0207 (falls through 32), stride 1 (L = 12) 0.0279, "
            "0.0345, 0.0606 (rises from k = 16 on). Version 3 then narrowed 'falls' to k - 1 <= "
            "L and reported 'verified'; issue 31 (version 4) decides the part beyond L instead.",
            msg("expert noise tau {noise_tau} s; first seed: train {train_seconds:.1f} s, "
                "rollouts {rollout_seconds:.1f} s", noise_tau=cfg.noise_tau,
                train_seconds=res.train_seconds, rollout_seconds=res.rollout_seconds),
        ],
        figures=_compounding_figures(cfg, res, chunked),
        margins=margins,
        seed_margins=seed_margins,
        decisive=decisive,
        per_seed=sweep.to_json(),
        details={"worked example (formulas)": example,
                 "success by k (first seed)": {str(k): res.get(k, "open_loop").success
                                               for k in cfg.chunk_sizes},
                 "expert mean error": res.expert.mean_error,
                 "final losses": {str(k): v for k, v in res.final_losses.items()}},
    )


# ------------------------------------------------------------------------ chunking trade-off
def _tradeoff_figures(cfg: robotics_chunking_tradeoff.TradeoffConfig,
                      res: robotics_compounding.ChunkSweepResult) -> list[Figure]:
    """Success against k per execution mode, and the high-frequency share at the largest k."""
    ks, h = list(cfg.chunk_sizes), cfg.horizons[0]
    k_max = ks[-1]

    def succ(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).success[h]

    hf = {m: res.get(k_max, m).high_freq_fraction for m in cfg.modes}
    return [
        Figure(
            msg("Success (error < {success_radius} m for {h} steps) with pushes",
                success_radius=cfg.task.success_radius, h=h),
            msg("chunk size k"), msg("success rate"),
            [Series(m, list(map(float, ks)), [succ(k, m) for k in ks], style="o-")
             for m in cfg.modes],
            logx=True,
        ),
        Figure(
            msg("Share of action power above {high_freq_hz} Hz at k = {k_max}",
                high_freq_hz=cfg.high_freq_hz, k_max=k_max),
            msg("execution mode index"), msg("high-frequency power fraction"),
            [Series(m, [float(i)], [hf[m]], kind="bar") for i, m in enumerate(cfg.modes)],
        ),
    ]


def _tradeoff_values(ctx: Context) -> tuple[dict[str, float], tuple]:
    """One seed of the sweep with pushes: success, errors and high-frequency power at k_max."""
    cfg = preset(robotics_chunking_tradeoff.TradeoffConfig, ctx)
    res = _compounding(cfg)
    k_max, h = cfg.chunk_sizes[-1], cfg.horizons[0]

    def succ(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).success[h]

    def err(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).mean_error

    hf = {m: res.get(k_max, m).high_freq_fraction for m in cfg.modes}
    values = {
        "success_drop": succ(1, "open_loop") - succ(k_max, "open_loop"),
        "replan_over_open_loop": err(k_max, "replan") / err(k_max, "open_loop"),
        "replan_over_k1": err(k_max, "replan") / err(1, "open_loop"),
        "hf_act_over_open_loop": hf["act_ensemble"] / hf["open_loop"]
        if hf["open_loop"] > 0 else math.inf,
        **{f"success_{m}_kmax": succ(k_max, m) for m in cfg.modes},
        "success_k1": succ(1, "open_loop"),
    }
    return values, (cfg, res)


@claim(
    "robotics.chunking-tradeoff",
    source=f"{SOURCE} 'chunking 的两难', 'Temporal ensemble', ACT-MPC 字典; Zhao et al. 2023; "
    "Bidirectional Decoding (ICLR 2025)",
    statement="With disturbances, long open-loop chunks cannot react (success falls as k grows); "
    "replanning every step (MPC control horizon T_a = 1 < k) keeps reactivity; ACT's temporal "
    "ensembling (oldest-first exp(-0.01 i)) lowers high-frequency action power; whether it "
    "restores reactivity is measured beside newest-first ensembling. Every condition holds on "
    "every seed.",
    tier="full",
    falsifier="robotics.chunk-requery-every-step",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Trained chunk policies of the library run
    through its executors under pushes; thresholds argued from binomial errors (success drop
    0.1, about 3 standard errors) and a stated 25 % tolerance, unchanged since issue 12.""",
    seed_refs=[("000", 1265, 1265), ("000", 1267, 1271), ("000", 1273, 1284)],
)
def check_chunking_tradeoff(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _tradeoff_values)
    cfg, res = sweep.runs[0]
    k_max = cfg.chunk_sizes[-1]
    margins = [
        sweep.at_least("success_drop", 0.1, "open-loop success drop k=1 -> k_max"),
        sweep.at_most("replan_over_open_loop", 1.0, "replan / open-loop error at k_max"),
        sweep.at_most("replan_over_k1", 1.25, "replan error at k_max / error at k=1"),
        sweep.at_most("hf_act_over_open_loop", 1.0,
                      "ACT-ensemble / open-loop high-frequency power at k_max"),
    ]
    names = [n for n in sweep.values]
    return Evidence(
        predicted={"open-loop success": "falls as k grows (by > 0.1 from k = 1 to k_max)",
                   "replan (T_a = 1)": "error at k_max below open loop and within 1.25x of k = 1",
                   "ACT ensembling": "less high-frequency action power than open loop"},
        measured={n: {"mean": round(sweep.mean(n), 4), "spread": round(sweep.spread(n), 4),
                      "min": round(sweep.lo(n), 4), "max": round(sweep.hi(n), 4)}
                  for n in names},
        tolerance="success drop > 0.1 (about 3 standard errors of a rate near 0.5 with "
        f"{cfg.num_test_paths} test paths); replan error within 25 % of single-step BC (pushes "
        f"make errors vary by ~10 % between k); each on the worst of {len(sweep.seeds)} seeds",
        verdict=decide(margins),
        notes=[
            msg("ACT-style oldest-first ensembling weighs the oldest (least informed) prediction "
                "most, which delays feedback; see success_<mode>_kmax for act_ensemble vs "
                "newest_ensemble and replan: reactivity is measured, not assumed."),
            msg("Issue 12: tiny trains 2500 steps on 100 demos, horizon 200, push_prob 0.01, 400 "
                "test paths, k in 1, 16. Issue 14: thresholds unchanged, now on the worst seed."),
            msg("push_prob {push_prob}, push speed {push_speed} m/s; first seed: train "
                "{train_seconds:.1f} s, rollouts {rollout_seconds:.1f} s", push_prob=cfg.push_prob,
                push_speed=cfg.push_speed, train_seconds=res.train_seconds,
                rollout_seconds=res.rollout_seconds),
            f"k_max = {k_max}",
        ],
        figures=_tradeoff_figures(cfg, res),
        margins=margins,
        per_seed=sweep.to_json(),
        details={"expert success": res.expert.success, "expert error": res.expert.mean_error},
    )
