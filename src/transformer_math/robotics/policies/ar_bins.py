"""Autoregressive binned-action head: 256 bins per action dimension, one token at a time.

(000 §8.3.8 decoding table, 000:1305-1316: "自回归 256-bin, p(b_t^(j) | b_<(t,j), o), O(d_a H)
steps"; Brohan et al. 2023 (RT-2) and Kim et al. 2024 (OpenVLA): each action dimension is
discretised into 256 uniform bins, OpenVLA's between the 1st and 99th percentile of the training
actions, and the tokens are predicted by a causal Transformer after the observation's tokens.)

Tokens: the normalised chunk A (k, A) is flattened in time-major order, b = (b_{1,1}, ...,
b_{1,A}, b_{2,1}, ..., b_{k,A}) (n = k A tokens), with
    b = clip(floor((a - lo_j) / (hi_j - lo_j) * nbins), 0, nbins - 1),
    decode(b) = lo_j + (b + 1/2) (hi_j - lo_j) / nbins          (the bin centre),
lo_j, hi_j the 1st and 99th percentiles of dimension j (``fit_normalization``). Model: the
project's causal Transformer over [proj(s), E b_1, ..., E b_{n-1}] (learned positions), whose
output at position i is the logit vector of b_{i+1}; loss = mean cross-entropy (next-token
prediction, labels shifted by one; ``action_is_pad`` steps left out). Decoding: n forwards with
a KV cache, each token sampled from softmax(logits / temperature) (``sampling="sample"``) or
taken as the argmax (``"greedy"``). n = k A sequential forwards per chunk: the table's
O(d_a H) latency.

Planted bug ``robotics.ar-labels-unshifted``: training feeds [proj(s), E b_1, ..., E b_n] and
scores the output at E b_i against b_i itself (labels not shifted): the model learns to copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import reset_children
from transformer_math.nn.transformer import Transformer
from transformer_math.robotics.policies.base import (
    ChunkPolicy,
    logged,
    register_policy,
)

AR_LABELS_UNSHIFTED = declare_bug(
    "robotics.ar-labels-unshifted",
    "the binned-action model is trained with the labels not shifted: the output at token b_i "
    "is scored against b_i itself, so it learns to copy its input and decodes garbage",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_binned_ar_loss_never_reads_the_last_token",
    seen_in="the classic next-token off-by-one (logits[:, :-1] vs labels[:, 1:] forgotten); "
    "HF models shift inside the loss, hand-written loops often do not")

AR_EXTRA_FORWARD = declare_bug(
    "robotics.ar-extra-forward",
    "the binned decoder feeds the last sampled token back through the trunk as well: k A + 1 "
    "sequential forwards per chunk instead of k A (one wasted step of latency, same actions)",
    module=__name__,
    seen_in="a decode loop that always runs the next-token forward after sampling (no guard "
    "for the last token); the output is unchanged, so only a step count or a timer sees it")

SAMPLING = ("sample", "greedy")
BIN_QUANTILES = (0.01, 0.99)


@dataclass(frozen=True)
class ARBinsConfig:
    state_dim: int
    action_dim: int
    chunk_size: int = 10
    dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    bins: int = 256
    sampling: str = "sample"
    temperature: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sampling not in SAMPLING:
            raise ValueError(f"sampling must be one of {SAMPLING}, got {self.sampling!r}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got "
                             f"{self.temperature!r}")
        if not 2 <= self.bins <= 65536:
            raise ValueError(f"bins must be in [2, 65536], got {self.bins}")


def ar_trunk_config(config: ARBinsConfig) -> TransformerConfig:
    """Causal, pre-LN, learned positions over 1 + k A tokens, inputs already d wide, a head of
    ``bins`` logits."""
    return TransformerConfig(hidden_size=config.dim, num_layers=config.num_layers,
                             num_heads=config.num_heads, output_size=config.bins,
                             head_bias=True, causal=True, position="learned",
                             max_seq_len=1 + config.chunk_size * config.action_dim)


@register_policy("ar_bins")
class ARBinsPolicy(ChunkPolicy):
    """RT-2/OpenVLA-style binned action tokens on the project's causal Transformer."""

    config_class: ClassVar[type] = ARBinsConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "bins": (2, 65536)}

    def __init__(self, config: ARBinsConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        self.state_proj = nn.Linear(config.state_dim, config.dim)
        self.token_embed = nn.Embedding(config.bins, config.dim)
        self.trunk = Transformer(ar_trunk_config(config))
        self.register_buffer("bin_low", torch.full((config.action_dim,), -3.0))
        self.register_buffer("bin_high", torch.full((config.action_dim,), 3.0))
        self.generator = torch.Generator().manual_seed(config.seed)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        reset_children(self, generator)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> ARBinsConfig:
        return ARBinsConfig(**d)

    # -- bins ----------------------------------------------------------------------------------
    def fit_normalization(self, states: np.ndarray | Tensor, actions: np.ndarray | Tensor
                          ) -> None:
        """Mean/std as every chunk policy, then the bin range per dimension: the 1st and 99th
        percentiles of the normalised actions (OpenVLA), widened to >= 1e-3."""
        super().fit_normalization(states, actions)
        a = torch.as_tensor(actions, dtype=torch.float32).reshape(-1, self.action_dim)
        z = (a - self.action_mean) / self.action_std
        lo = torch.quantile(z, BIN_QUANTILES[0], dim=0)
        hi = torch.quantile(z, BIN_QUANTILES[1], dim=0)
        self.bin_low.copy_(lo)
        self.bin_high.copy_(torch.maximum(hi, lo + 1e-3))

    def check_normalization(self) -> None:
        super().check_normalization()
        lo, hi = self.bin_low, self.bin_high
        if lo.device.type == "meta":
            return
        if not (bool(torch.isfinite(lo).all()) and bool(torch.isfinite(hi).all())
                and bool((hi > lo).all())):
            raise ValueError(f"bin_low/bin_high must be finite with bin_high > bin_low, got "
                             f"{lo.tolist()} and {hi.tolist()}")

    def tokenize(self, a: Tensor) -> Tensor:
        """Normalised chunk (B, k, A) -> bin ids (B, k A), time-major."""
        width = (self.bin_high - self.bin_low).to(a)
        frac = (a - self.bin_low.to(a)) / width
        ids = torch.floor(frac * self.config.bins).clamp(0, self.config.bins - 1).long()
        return ids.reshape(a.shape[0], -1)

    def detokenize(self, ids: Tensor) -> Tensor:
        """Bin ids (B, k A) -> normalised chunk (B, k, A) at the bin centres."""
        ids = ids.reshape(ids.shape[0], self.chunk_size, self.action_dim)
        width = self.bin_high - self.bin_low
        return self.bin_low + (ids.to(width) + 0.5) * width / self.config.bins

    # -- training and decoding -----------------------------------------------------------------
    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Next-token cross-entropy over the k A bin tokens (module docstring)."""
        s = self._state(batch)
        target, pad = self._target(batch)
        ids = self.tokenize(target)  # (B, n)
        prefix = self.state_proj(s)[:, None]  # (B, 1, d)
        if planted(AR_LABELS_UNSHIFTED):  # planted bug: the output at b_i scored against b_i
            h = torch.cat([prefix, self.token_embed(ids)], dim=1)
            logits = self.trunk(inputs_embeds=h)[:, 1:]
        else:
            h = torch.cat([prefix, self.token_embed(ids[:, :-1])], dim=1)  # (B, n, d)
            logits = self.trunk(inputs_embeds=h)  # (B, n, bins)
        wide = torch.promote_types(logits.dtype, torch.float32)  # half precision -> float32
        per_token = nn.functional.cross_entropy(
            logits.reshape(-1, self.config.bins).to(wide), ids.reshape(-1),
            reduction="none").reshape(ids.shape)
        if pad is not None:
            keep = (~pad).repeat_interleave(self.action_dim, dim=1)
            loss = (per_token * keep).sum() / keep.sum()
        else:
            loss = per_token.mean()
        return loss, {"cross_entropy": logged(loss)}

    def _choose(self, logits: Tensor) -> Tensor:
        if self.config.sampling == "greedy" or logits.device.type == "meta":
            return logits.argmax(-1)  # (meta: shapes only, nothing to sample from)
        probs = torch.softmax(logits.float() / self.config.temperature, dim=-1).cpu()
        return torch.multinomial(probs, 1, generator=self.generator)[:, 0].to(logits.device)

    @torch.no_grad()
    def sample_tokens(self, s: Tensor) -> Tensor:
        """Bin ids (B, k A), decoded one token per forward with a KV cache."""
        caches = self.trunk.new_caches()
        logits = self.trunk(inputs_embeds=self.state_proj(s)[:, None], caches=caches)[:, -1]
        ids = []
        n = self.chunk_size * self.action_dim
        for i in range(n):
            token = self._choose(logits)
            ids.append(token)
            if i + 1 < n or planted(AR_EXTRA_FORWARD):
                logits = self.trunk(inputs_embeds=self.token_embed(token)[:, None],
                                    caches=caches)[:, -1]
        return torch.stack(ids, dim=1)

    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        """(B, k, A) actions: k A sampled bin tokens, decoded at the bin centres."""
        s = self._state(batch)
        return self._unnormalize(self.detokenize(self.sample_tokens(s)))
