"""The chunked compounding-error bound, measured on its worst-case model through the library's
chunk executor (000 §8.3.8 理论 B, lines 1253-1263; Ross & Bagnell 2010).

The worst case behind T^2 eps: the learner leaves the expert's state distribution at its first
mistake and pays cost 1 at every later step (``theory.compounding_error``). Here a scripted chunk
policy is executed by ``make_executor("open_loop", k)`` on B episodes at once: at every query each
episode's chunk is wrong with probability eps (per decision), or each of its k entries is wrong
with probability eps independently (per executed step). An episode is off track from the first
wrong action it executes; its cost is the number of steps spent off track. The Monte-Carlo mean
is compared with the dynamic programme, with T^2 eps / k, and with the seed's derivation.
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Refutation,
    Series,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE
from transformer_math.i18n.message import msg
from transformer_math.robotics.policies.ensembling import make_executor
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)

HORIZON, EPS = 400, 0.01  # the seed's worked example (000:1263)
CHUNKS = (1, 10, 90)


def _run_cliff(ctx: Context, chunk: int, per_step: bool, episodes: int,
               offset: int) -> tuple[torch.Tensor, float]:
    """Costs (episodes,) of the worst-case model executed open loop with chunk size ``chunk``,
    and the number of policy queries per episode."""
    g = ctx.generator(offset)
    executor = make_executor("open_loop", chunk)
    executor.reset()
    queries = 0
    # per decision: one draw per possible query (at most one per step), drawn up front; per
    # step: k draws per query, drawn when queried (below 32768 elements torch stays on one thread)
    per_decision = (torch.rand(HORIZON, episodes, 1, 1, generator=g) < EPS).to(torch.float32)

    def chunk_fn(obs: torch.Tensor) -> torch.Tensor:
        nonlocal queries
        queries += 1
        if per_step:  # each entry wrong with probability eps; action 1 = the wrong action
            return (torch.rand(episodes, chunk, 1, generator=g) < EPS).to(torch.float32)
        return per_decision[queries - 1].expand(episodes, chunk, 1)  # a view, no copy

    off = torch.zeros(episodes, dtype=torch.bool)
    cost = torch.zeros(episodes, dtype=torch.float64)
    obs = torch.zeros(episodes, 1)
    for _ in range(HORIZON):
        off |= executor(chunk_fn, obs)[:, 0] > 0.5
        cost += off.double()
    return cost, float(queries)


@claim(
    "robotics.chunked-error-bound",
    source=f"{SOURCE} 理论 B (error = O(T^2 eps) -> O(T^2 eps / k) by 'substituting T -> T/k'; "
    "T = 400, eps = 0.01); Ross & Bagnell 2010; Ross, Gordon & Bagnell 2011",
    statement="On the worst-case compounding model (off track for good after the first wrong "
    "action, cost 1 per off-track step) executed through the library's open-loop chunk "
    "executor at T = 400, eps = 0.01: when each chunk decision errs with probability eps the "
    "expected cost equals the dynamic programme and stays below T^2 eps / k for k = 1, 10, 90, "
    "but exceeds (T/k)^2 eps, what the seed's derivation 'substitute T -> T/k into T^2 eps' "
    "gives; when each executed action errs with probability eps, chunking gives no gain on this "
    "model (the cost at k = 90 equals the k = 1 cost).",
    statement_zh="在最坏情形的复合误差模型上（第一次执行错误动作后永久偏离，"
    "偏离的每一步代价为 1），用库中的开环动作块执行器在 T = 400、eps = 0.01 下执行："
    "若每次块决策以概率 eps 出错，期望代价与动态规划一致，且对 k = 1、10、90 都低于 "
    "T^2 eps / k，却超过 (T/k)^2 eps，即种子文本的推导“把 T -> T/k 代入 T^2 eps”所得；"
    "若每个被执行的动作以概率 eps 出错，分块在此模型上毫无收益（k = 90 的代价等于 k = 1 的"
    "代价）。",
    tier="quick",
    falsifier="robotics.chunk-requery-every-step",
    expected="refuted",
    version=2,
    kind="code-audit",
    seed_refs=[("000", 1253, 1263), ("000", 1208, 1208), ("000", 1284, 1284),
               ("000", 1324, 1324), ("000", 1332, 1332), ("000", 1356, 1356),
               ("000", 1555, 1555)],
    refutes=[
        Refutation(
            seed="000", line=1257, to_line=1259,
            quote=r"把 \(T\to T/k\) 代入，复合误差变为 \[ \boxed{\ \text{error}(k) = "
            r"O\!\left(\frac{T^2\varepsilon}{k}\right)\ } \]",
            says="substituting T -> T/k (T/k effective decisions) into O(T^2 eps) gives the "
            "chunked error O(T^2 eps / k)",
            reading="the algebra of the derivation: T -> T/k in T^2 eps, checked against the "
            "worst-case cost the O(T^2 eps) bound is the bound of; the substitution's value "
            "(T/k)^2 eps must be at least the measured cost at k = 90",
            correct="the substitution gives (T/k)^2 eps = T^2 eps / k^2, which the measured "
            "worst-case cost exceeds (about 11 vs 0.2 at k = 90); T^2 eps / k is (T/k)^2 eps "
            "decision-level regret times k steps per decision, and needs each chunk to err no "
            "more often than one action (eps per decision)"),
    ],
    corrections=[Correction(
        seed="000", line=1255,
        says="the classic DAgger analysis gives compounding error O(T^2 eps) on a T-step horizon "
        "(000:1253-1255; again at 000:1332: 'from DAgger's O(T^2 eps)')",
        correct="T^2 eps is the bound of plain behaviour cloning (supervised imitation on the "
        "expert's states); DAgger, which trains on the learner's own states, is the remedy and "
        "has regret linear in T, O(T eps)",
        source="Ross & Bagnell, 'Efficient Reductions for Imitation Learning', AISTATS 2010, "
        "Thm 2.1 (T^2 eps for behaviour cloning); Ross, Gordon & Bagnell, AISTATS 2011 (DAgger, "
        "O(T eps)-type guarantee)")],
    audit="""Issue 31 review (m, c): agreed. 000:1257 (T -> T/k substituted into T^2 eps gives
    T^2 eps / k^2, not T^2 eps / k) is an algebra slip and stays refuted; the claim is the
    seed's arithmetic recomputed, with a Monte Carlo of the worst-case model through the
    library's chunk executor, so its kind is code-audit (the cost process and the DP are both
    this claim's model, as the review says). The record of 000:1555 (the theorem table's
    'chunking divides the error by k') is dropped: it was refuted with a per-executed-step error
    model that the seed's derivation ('有效决策步数从 T 降到 T/k', errors per decision) does not
    assume. The per-step arm stays as a measured property of the model (cost(k = 90) equals the
    unchunked DP), no longer a seed margin. Version 2; the thresholds are unchanged (6 standard
    errors of a Monte Carlo mean). Review R6 (outcome problem) reads the seed as intending
    T^2 eps / k (its 1600/90 example, "除掉了复合误差的一个因子") and would verify it;
    disputed by the lead and kept: the record refutes the derivation as written (the stated
    substitution gives (T/k)^2 eps), and its correct statement already says that T^2 eps / k
    is what a per-decision error of eps over chunks of k steps gives; the result is not what
    is refuted, the step that is said to produce it is.""",
)
def check_chunked_error_bound(ctx: Context) -> Evidence:
    episodes = ctx.pick(4000, 20000, 50000)
    rows: dict[int, dict[str, float]] = {}
    margins = []
    for i, k in enumerate(CHUNKS):
        cost, queries = _run_cliff(ctx, k, per_step=False, episodes=episodes, offset=10 + i)
        mean, se = float(cost.mean()), float(cost.std()) / math.sqrt(episodes)
        dp = worst_case_expected_cost(HORIZON, EPS, k)
        rows[k] = {"measured cost": mean, "standard error": se, "DP": dp,
                   "T^2 eps / k": seed_chunked_bound(HORIZON, EPS, k),
                   "(T/k)^2 eps": substituted_bound(HORIZON, EPS, k), "queries": queries}
        margins += [
            # 6 standard errors: at 4 the slack (4 SE - |error|) was 3.07 against 3 x its
            # spread 1.04 over seeds 0-4 at k = 1 (a Monte Carlo error is |Z| SE, Z ~ N(0, 1))
            close_to(f"k={k}: |measured cost - DP| (6 standard errors)", mean, dp,
                     abs_=6.0 * se + 1e-9),
            at_most(f"k={k}: measured cost / (T^2 eps / k)", mean / rows[k]["T^2 eps / k"], 1.0),
            close_to(f"k={k}: |queries per episode - ceil(T / k)| (integers: < 0.5 is equal)",
                     queries, math.ceil(HORIZON / k), abs_=0.5),
        ]
    k_max = CHUNKS[-1]
    # fewer episodes: k draws per query (k x more under a re-querying executor); the cost
    # (~300) is compared with T^2 eps / k = 18, so 6 standard errors of ~20 suffice
    step_episodes = ctx.pick(300, 2000, 5000)
    step_cost, _ = _run_cliff(ctx, k_max, per_step=True, episodes=step_episodes, offset=20)
    step_mean = float(step_cost.mean())
    step_se = float(step_cost.std()) / math.sqrt(step_episodes)
    dp_unchunked = worst_case_expected_cost(HORIZON, EPS, 1)
    margins.append(close_to(f"eps per executed step, k={k_max}: |cost - unchunked DP| "
                            "(6 standard errors)", step_mean, dp_unchunked,
                            abs_=6.0 * step_se + 1e-9))
    seed_margins = [
        at_most(f"seed's substitution: cost(k={k_max}) / (T/k)^2 eps",
                rows[k_max]["measured cost"] / rows[k_max]["(T/k)^2 eps"], 1.0),
    ]
    return Evidence(
        predicted={"eps per decision": "cost = DP <= T^2 eps / k; > (T/k)^2 eps for k > 1",
                   "eps per executed step": f"cost(k={k_max}) = cost(k=1) = "
                   f"{dp_unchunked:.1f}",
                   "T^2 eps (k=1)": bc_regret_bound(HORIZON, EPS)},
        measured={"eps per decision": {str(k): {n: round(v, 3) for n, v in r.items()}
                                       for k, r in rows.items()},
                  f"eps per executed step, k={k_max}": {"cost": round(step_mean, 2),
                                                        "standard error": round(step_se, 2)}},
        tolerance=f"Monte Carlo over {episodes} episodes ({step_episodes} per executed step): 6 "
        "standard errors of the mean cost; "
        "bounds compared as ratios (<= 1); query counts exact (integers)",
        verdict=decide(margins, seed_margins),
        notes=[
            msg("T^2 eps = 1600 exceeds the largest possible cost T = 400: at T = 400, eps = 0.01 "
                "the k = 1 bound is vacuous (the worst case costs {measured_cost:.0f}).",
                measured_cost=rows[1]['measured cost']),
            msg("The seed's ~18 (000:1263) is T^2 eps / k = 17.8 at k = 90; its derivation "
                "(000:1257, 'substitute T -> T/k') gives (T/k)^2 eps = 0.198."),
            msg("Per executed step the chunk process is the unchunked one in distribution: the "
                "same first-error time, so the same cost, whatever k."),
        ],
        figures=[Figure(
            msg("Worst-case compounding cost vs chunk size (eps per decision)"),
            msg("chunk size k"),
            msg("expected off-track steps"),
            [Series(msg("measured (executor)"), [float(k) for k in CHUNKS],
                    [rows[k]["measured cost"] for k in CHUNKS], style="o-"),
             Series("T^2 eps / k", [float(k) for k in CHUNKS],
                    [rows[k]["T^2 eps / k"] for k in CHUNKS], style="--"),
             Series(msg("(T/k)^2 eps (substitution)"), [float(k) for k in CHUNKS],
                    [rows[k]["(T/k)^2 eps"] for k in CHUNKS], style=":")],
            logx=True, logy=True, hlines=[(float(HORIZON), msg("T (largest cost)"))])],
        margins=margins,
        seed_margins=seed_margins,
    )
