"""The shared trunk of the iterative action decoders (diffusion, flow matching): a DiT-style
Transformer over the action chunk, conditioned by adaLN-Zero on the time and the observation.

(000 §8.3.8 decoding table, 000:1305-1316; Peebles & Xie 2023 (DiT) §3.2; Chi et al. 2023
(Diffusion Policy); Black et al. 2024 (pi0's action expert).) The network
f_theta(x, t, s) -> (B, k, A) reads a noisy normalised chunk x (B, k, A) as k tokens (a linear
embedding of width d plus a learned position table), and the condition

    c = MLP_t(phi(t)) + MLP_s(s),      phi(t)_i = cos(t w_i), phi(t)_{i+d/2} = sin(t w_i),
    w_i = 10000^(-i / (d/2))     (the sinusoidal timestep features of DiT / DDPM, t in [0, 1000)),

enters every block through adaLN-Zero (``TransformerConfig.condition_size``, ``nn/adaln.py``):
each block is the identity at initialisation. Attention over the chunk is bidirectional; the
head reads out A numbers per token. The trunk is a preset of the project's one
``TransformerConfig`` (:func:`denoiser_config`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import reset_children
from transformer_math.nn.transformer import Transformer

TIME_SCALE = 1000.0
"""phi(t) reads t on DDPM's integer scale [0, 1000); a flow time tau in [0, 1] is scaled by it."""


def timestep_features(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """phi(t) (B, dim): the sinusoidal features of DiT's ``TimestepEmbedder`` (module docstring)
    for t (B,) on the [0, 1000) scale; ``dim`` even."""
    if dim % 2:
        raise ValueError(f"timestep feature width must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=t.dtype,
                                                           device=t.device) / half)
    angles = t.to(freqs.dtype)[:, None] * freqs[None]
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)


def denoiser_config(action_dim: int, chunk_size: int, dim: int, num_heads: int,
                    num_layers: int) -> TransformerConfig:
    """The denoiser/velocity trunk: pre-LN, GELU MLP 4 d, learned positions over the k tokens,
    bidirectional, vector inputs of width A, a head of width A, adaLN-Zero with condition d."""
    return TransformerConfig(hidden_size=dim, num_layers=num_layers, num_heads=num_heads,
                             input_size=action_dim, output_size=action_dim, head_bias=True,
                             max_seq_len=chunk_size, position="learned", causal=False,
                             final_norm=True, condition_size=dim)


def _mlp(width_in: int, dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width_in, dim), nn.SiLU(), nn.Linear(dim, dim))


class ChunkDenoiser(nn.Module):
    """f_theta(x, t, s): (B, k, A), (B,) on the [0, 1000) scale, (B, S) -> (B, k, A)."""

    def __init__(self, state_dim: int, action_dim: int, chunk_size: int, dim: int,
                 num_heads: int, num_layers: int) -> None:
        super().__init__()
        if dim % 2:
            raise ValueError(f"dim must be even (sinusoidal time features), got {dim}")
        self.dim = dim
        self.time_mlp = _mlp(dim, dim)
        self.state_mlp = _mlp(state_dim, dim)
        self.trunk = Transformer(denoiser_config(action_dim, chunk_size, dim, num_heads,
                                                 num_layers))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        reset_children(self, generator)

    def condition(self, t: Tensor, s: Tensor) -> Tensor:
        """c = MLP_t(phi(t)) + MLP_s(s), (B, d)."""
        return self.time_mlp(timestep_features(t, self.dim).to(s.dtype)) + self.state_mlp(s)

    def forward(self, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
        return self.trunk(inputs_embeds=x, condition=self.condition(t, s))


def check_steps(name: str, value: Any, high: int) -> int:
    """An int in [1, high] (``ValueError`` naming ``name`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValueError(f"{name} must be an int in [1, {high}], got {value!r}")
    return value
