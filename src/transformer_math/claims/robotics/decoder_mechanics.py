"""The action decoders' mechanics on exact inputs, no training (issue 20, quick tier): DDIM and
Euler sampling with exact networks, the flow-matching target, the AR label shift and the adaLN
conditioning path. Together they kill every planted decoder bug in seconds (the bug zoo)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.claims.registry import (
    Context,
    Evidence,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE
from transformer_math.nn.adaln import AdaLNModulation
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer
from transformer_math.robotics.policies.ar_bins import ARBinsConfig, ARBinsPolicy
from transformer_math.robotics.policies.denoising import TIME_SCALE
from transformer_math.robotics.policies.diffusion import DiffusionConfig, DiffusionPolicy
from transformer_math.robotics.policies.flow_matching import (
    FlowMatchingConfig,
    FlowMatchingPolicy,
)
from transformer_math.robotics.training import build_seeded

MODE = torch.tensor([[0.3, -1.2], [0.8, 0.1], [-0.5, 0.6]], dtype=torch.float64)  # A* (3, 2)


class _TwoModeA0(nn.Module):
    """E[A | x_t] for data +A* or -A* (1/2 each): the exact A0 prediction of DDPM's forward
    process x_t = sqrt(abar) A + sqrt(1 - abar) eps; w = sigmoid((|x + sqrt(abar) A*|^2 -
    |x - sqrt(abar) A*|^2) / (2 (1 - abar)))."""

    def __init__(self, abar: Tensor, train_steps: int) -> None:
        super().__init__()
        self.abar, self.train_steps = abar, train_steps

    def forward(self, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
        a = self.abar[(t * self.train_steps / TIME_SCALE).round().long()][:, None, None]
        plus = ((x - a.sqrt() * MODE) ** 2).sum((1, 2), keepdim=True)
        minus = ((x + a.sqrt() * MODE) ** 2).sum((1, 2), keepdim=True)
        return (2 * torch.sigmoid((minus - plus) / (2 * (1 - a))) - 1) * MODE


class _PointVelocity(nn.Module):
    """The exact velocity towards data A*: v(x, tau) = (A* - x) / (1 - tau)."""

    def forward(self, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
        return (MODE - x) / (1 - (t / TIME_SCALE)[:, None, None])


def _mode_gap(x: Tensor) -> float:
    """Mean over samples of the max-norm distance to the nearer of +-A*."""
    return float(torch.minimum((x - MODE).abs().amax((1, 2)),
                               (x + MODE).abs().amax((1, 2))).mean())


def _ddim_gap() -> float:
    policy = build_seeded(lambda: DiffusionPolicy(DiffusionConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1, prediction="sample")), 0).double()
    policy.denoiser = _TwoModeA0(policy.alphas_cumprod, policy.config.train_steps)
    policy.generator.manual_seed(0)
    return _mode_gap(policy.sample(torch.zeros(256, 2, dtype=torch.float64), 10))


def _flow_values() -> tuple[float, float]:
    """(Euler K = 5 with the exact velocity: max |A - A*|, the training loss of the exact
    velocity on the straight path)."""
    policy = build_seeded(lambda: FlowMatchingPolicy(FlowMatchingConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1)), 0).double()
    policy.velocity = _PointVelocity()
    policy.generator.manual_seed(0)
    out = policy.sample(torch.zeros(8, 2, dtype=torch.float64), 5)
    batch = {"observation.state": torch.zeros(16, 2, dtype=torch.float64),
             "action": MODE.expand(16, -1, -1)}
    return float((out - MODE).abs().max()), float(policy(batch)[0])


def _ar_last_token_gradient() -> float:
    """|d loss / d E[b_n]|: the last bin token is only ever a label when labels are shifted."""
    policy = build_seeded(lambda: ARBinsPolicy(ARBinsConfig(
        2, 2, chunk_size=3, dim=16, num_heads=2, num_layers=1, bins=64)), 0)
    actions = torch.linspace(-1.0, 1.0, 6).reshape(1, 3, 2)  # six distinct bins
    policy.fit_normalization(torch.zeros(2, 2) + torch.tensor([[0.0], [1.0]]),
                             torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
    policy.bin_low.fill_(-1.01)
    policy.bin_high.fill_(1.01)
    target, _ = policy._target({"action": actions})
    ids = policy.tokenize(target)[0]
    assert len(set(ids.tolist())) == 6, ids
    policy.zero_grad()
    loss, _ = policy({"observation.state": torch.zeros(1, 2), "action": actions})
    loss.backward()
    grad = policy.token_embed.weight.grad
    return float(grad[int(ids[-1])].abs().max())


def _adaln_dependence() -> float:
    """max |f(x, c) - f(x, -c)| of an adaLN Transformer with non-zero modulation weights."""
    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=2, input_size=3,
                            output_size=0, causal=False, position="learned", max_seq_len=4,
                            condition_size=8)
    model = build_transformer(cfg, 0)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, AdaLNModulation):
                nn.init.normal_(m.proj.weight, 0.0, 0.3, generator=g)
        x, c = torch.randn(2, 4, 3, generator=g), torch.randn(2, 8, generator=g)
        return float((model(inputs_embeds=x, condition=c)
                      - model(inputs_embeds=x, condition=-c)).abs().max())


@claim(
    "robotics.decoder-mechanics",
    source=f"{SOURCE} decoding table (000:1304-1308); Song et al. 2021 eq. 12; Lipman et al. "
    "2023; Peebles & Xie 2023 §3.2",
    statement="With exact networks the decoders' samplers are exact: DDIM (K = 10) with the "
    "exact A0 of a two-mode distribution returns points on the modes, and K Euler steps with "
    "the exact velocity return the data; the flow-matching loss of the exact velocity is 0; the "
    "binned AR loss never reads the last token as an input (zero gradient on its embedding); "
    "the adaLN-conditioned Transformer's output depends on its condition.",
    statement_zh="在精确网络下，解码器的采样是精确的：用双峰分布的精确 A0 预测做 DDIM（K = "
    "10）得到的点落在峰上，用精确速度做 K 步 Euler 得到数据本身；精确速度的流匹配损失为 0；分档"
    "自回归损失从不把最后一个 token 当作输入（其嵌入的梯度为零）；adaLN 条件化的 Transformer "
    "的输出依赖于其条件向量。",
    tier="quick",
    falsifier="robotics.ddim-timesteps-truncated",
    expected="verified",
    version=1,
    seed_refs=[("000", 1304, 1308), ("000", 1313, 1313)],
)
def check_decoder_mechanics(ctx: Context) -> Evidence:
    gap = _ddim_gap()
    euler_err, flow_loss = _flow_values()
    ar_grad = _ar_last_token_gradient()
    dependence = _adaln_dependence()
    margins = [
        at_most("DDIM K = 10, exact two-mode A0: mean distance to the nearer mode", gap, 0.02),
        at_most("Euler K = 5, exact velocity: max |A - A*|", euler_err, 1e-9),
        at_most("flow-matching loss of the exact velocity", flow_loss, 1e-12),
        at_most("binned AR: max |d loss / d E[b_n]| (last token)", ar_grad, 0.0),
        at_least("adaLN: max |f(x, c) - f(x, -c)| (the output depends on c)", dependence, 1e-3),
    ]
    return Evidence(
        predicted={"DDIM": "on a mode (distance 0)", "Euler": "A* exactly",
                   "flow loss": "0", "AR last-token gradient": "0 (labels shifted)",
                   "adaLN": "output changes with c"},
        measured={"ddim_mode_gap": gap, "euler_max_error": euler_err,
                  "flow_loss_exact_velocity": flow_loss, "ar_last_token_gradient": ar_grad,
                  "adaln_condition_dependence": dependence},
        tolerance="float64; DDIM: mean gap <= 0.02 over 256 samples (the sampler's last step "
        "reads the oracle's A0 at t = 0); the others exact up to rounding",
        verdict=decide(margins),
        margins=margins,
    )
