"""ACT's latent: sampled, different z decode different chunks (000 §8.3.8, line 1314); fixed at
0 as ACT runs at inference (line 1251), the CVAE decodes one chunk per observation and covers
one mode at most (Zhao et al. 2023).

A tiny ACT (the library's ``ACTPolicy``) is trained on a bimodal toy: one observation, and a
chunk of k actions all +1 or all -1 with probability 1/2 each (go left or right). It is then
queried as ACT deploys it (``latent_sampling="zero"``) and with z drawn from the prior
(``"sample"``) on the same weights. The mode of a chunk is the sign of its mean action; the
distance to the demonstrations is the 1-D Wasserstein-1 distance between the chunk means and the
two-point distribution {-1, +1}: a point mass c is at (|c - 1| + |c + 1|) / 2 >= 1 from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    claim,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import memo
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.training import build_seeded, train_policy

CHUNK = 4
QUERIES = 256  # inference queries of the one observation


@dataclass(frozen=True)
class BimodalConfig:
    """Training of the tiny ACT on the two-mode toy (hashable: a memo key)."""

    seed: int = 0
    steps: int = 150
    lr: float = 5e-3
    batch_size: int = 64
    kl_weight: float = 1.0

    def act_config(self, sampling: str) -> ACTConfig:
        return ACTConfig(1, 1, chunk_size=CHUNK, dim=16, num_heads=2, encoder_layers=1,
                         decoder_layers=1, latent_dim=2, kl_weight=self.kl_weight,
                         latent_sampling=sampling, seed=self.seed)


def train_bimodal_act(cfg: BimodalConfig) -> dict[str, torch.Tensor]:
    """Train the ACT on chunks of all +1 or all -1 (probability 1/2) from the observation 0;
    return its state dict (normalisation at the identity)."""
    policy = build_seeded(lambda: ACTPolicy(cfg.act_config("zero")), cfg.seed)

    def sample(g: torch.Generator) -> dict[str, torch.Tensor]:
        side = torch.randint(0, 2, (cfg.batch_size,), generator=g).float() * 2.0 - 1.0
        return {"observation.state": torch.zeros(cfg.batch_size, 1),
                "action": side[:, None, None].expand(cfg.batch_size, CHUNK, 1).clone()}

    train_policy(policy, sample, steps=cfg.steps, lr=cfg.lr,
                 generator=torch.Generator().manual_seed(cfg.seed))
    return {k: v.clone() for k, v in policy.state_dict().items()}


def _query(cfg: BimodalConfig, state: dict[str, torch.Tensor], sampling: str,
           seed: int) -> torch.Tensor:
    """Chunk means (QUERIES,) of the trained weights queried with ``sampling`` (the ACT
    library's inference path ``predict_action_chunk``)."""
    policy = build_seeded(lambda: ACTPolicy(cfg.act_config(sampling)), cfg.seed)
    policy.load_state_dict(state)
    policy.eval()
    policy.generator.manual_seed(seed)
    with torch.no_grad():
        chunks = policy.predict_action_chunk({"observation.state": torch.zeros(QUERIES, 1)})
    return chunks.mean((1, 2)).double()


def w1_to_modes(x: torch.Tensor) -> float:
    """W1 between the empirical distribution of ``x`` and 1/2 delta_{-1} + 1/2 delta_{+1}
    (1-D: the mean gap between sorted samples and the target's quantiles)."""
    n = x.shape[0]
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    return float((x.sort().values - torch.where(u < 0.5, -1.0, 1.0)).abs().mean())


def _values(ctx: Context) -> tuple[dict[str, float], dict[str, list[float]]]:
    cfg = BimodalConfig(seed=ctx.seed, steps=ctx.pick(150, 300, 600))
    state = memo.memoized(train_bimodal_act, cfg)
    zero = _query(cfg, state, "zero", ctx.seed + 1)
    sampled = _query(cfg, state, "sample", ctx.seed + 2)

    def minority(x: torch.Tensor) -> float:
        right = float((x > 0).double().mean())
        return min(right, 1.0 - right)

    return {"zero_spread": float(zero.max() - zero.min()), "zero_minority": minority(zero),
            "zero_w1": w1_to_modes(zero), "zero_chunk_mean": float(zero[0]),
            "sampled_minority": minority(sampled), "sampled_w1": w1_to_modes(sampled)}, {
        "z = 0": zero[:8].tolist(), "z ~ N(0, I)": sampled[:8].tolist()}


@claim(
    "robotics.cvae-zero-latent",
    source=f"{SOURCE} 理论 B (z = 0 at inference, k-step chunk); CVAE row of the decoding table "
    "('不同 z 解码出不同动作', 多峰能力中等); Zhao et al. 2023",
    statement="A tiny ACT trained on a two-mode toy (chunks all +1 or all -1, probability 1/2 "
    "each) decodes different chunks from different latents, as the seed says (000:1314): with z "
    "drawn from the prior the same weights cover both modes (each >= 20 % of the queries, "
    "Wasserstein-1 distance <= 0.5 from the demonstrations). Deployed as ACT deploys it, with z "
    "= 0 (000:1251), it returns one and the same chunk on every query of an observation, so it "
    "covers at most one mode (W1 >= 1). On every seed.",
    statement_zh="在双峰玩具任务上（动作块全为 +1 或全为 -1，各占 1/2）训练的小型 ACT，"
    "如种子文本所说（000:1314），由不同的隐变量解码出不同的动作块：从先验中抽取 z 时，同一组权重"
    "覆盖两个峰（每个峰 >= 20 % 的查询，与演示的 Wasserstein-1 距离 <= 0.5）。按 ACT 的部署方式以 "
    "z = 0 推理时（000:1251），它对同一观测的每次查询都返回同一个动作块，因此至多覆盖一个峰"
    "（W1 >= 1）。在每个种子上都成立。",
    tier="full",
    falsifier="robotics.act-zero-latent-sampled",
    expected="verified",
    version=2,
    kind="measurement",
    seed_refs=[("000", 1251, 1251), ("000", 1314, 1316)],
    audit="""Issue 31 review (P, c; section 4 item 2): agreed, the refutation of 000:1314 is
    dropped. 000:1314 says that different z decode different actions, which this claim's own
    sampled-z arm confirms, and 000:1251 itself says that ACT sets z = 0 at inference; version 1's
    seed margin ('ACT as deployed, z = 0, covers both modes') was a reading the seed does not
    make. Version 2 is verified of what it measures: sampled latents cover both modes, z = 0
    gives one chunk per observation. Margins and thresholds are unchanged (they were derived in
    version 1: float rounding for the spread, W1 >= 1 of a point mass, 20 % against a fair
    coin's 50 % +- 3 % over 256 queries).""",
)
def check_cvae_zero_latent(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _values)
    margins = [
        sweep.at_most("zero_spread", 1e-6, "z = 0: max - min of the chunk mean over "
                      f"{QUERIES} queries"),
        sweep.at_least("zero_w1", 0.95, "z = 0: W1 to the demonstrations' modes"),
        sweep.at_least("sampled_minority", 0.2, "z ~ N(0, I): share of the rarer mode"),
        sweep.at_most("sampled_w1", 0.5, "z ~ N(0, I): W1 to the demonstrations' modes"),
    ]
    names = list(sweep.values)
    return Evidence(
        predicted={"z = 0": "one chunk per observation; W1 >= 1 from {-1, +1}",
                   "z ~ N(0, I)": "both modes (each >= 20 %); W1 small"},
        measured={n: {"min": round(sweep.lo(n), 4), "max": round(sweep.hi(n), 4)}
                  for n in names},
        tolerance="z = 0 spread: float rounding (1e-6); W1 of a point mass is >= 1, 0.95 "
        f"allowed; both modes: >= 20 % of {QUERIES} queries (a fair coin gives 50 % +- 3 %); "
        f"sampled W1 <= 0.5; worst of {len(sweep.seeds)} seeds",
        verdict=decide(margins),
        notes=[
            f"ACT: chunk {CHUNK}, dim 16, 1 encoder and 1 decoder layer, latent 2, kl_weight "
            f"1 (not ACT's 10), L1, {ctx.pick(150, 300, 600)} AdamW steps of batch 64, lr 5e-3.",
            "The z = 0 chunk need not sit on a mode (a seed of the tiny sweep returned -0.24, "
            "between the modes): z = 0 is a point of the prior, not a mode selector.",
            "Chunk means of the first seed's first 8 queries are in details.",
        ],
        margins=margins,
        per_seed=sweep.to_json(),
        details={"first seed's chunk means": sweep.runs[0]},
    )
