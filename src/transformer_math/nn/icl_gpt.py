"""Small decoder-only models for in-context learning experiments.

``ICLGPT`` (prompt-as-sequence regression; Garg et al. 2022, Raventos et al. 2023; FACTS.md):
a prompt (x_1, y_1, ..., x_K, y_K) becomes 2K tokens of width 1 + D,

    x_i -> (0, x_i),     y_i -> (y_i, 0, ..., 0),

embedded linearly, plus a learned absolute position table (local to this file), through pre-LN
blocks (causal ``MultiHeadAttention`` + GELU MLP). The prediction of y_i is read at the x_i token
(position 2i - 2, 0-based), which under the causal mask sees x_1, y_1, ..., y_{i-1}, x_i but not
y_i. Reading at the y_i token would leak the target.

``AttentionOnlyTransformer`` (induction heads; Olsson et al. 2022; FACTS.md sizing): token
embedding, ``num_layers`` pre-LN attention-only residual blocks with rotary position embedding
(RoPE, Su et al. 2021) on queries and keys, final LayerNorm and unembedding. Attention runs through
``functional.scaled_dot_product_attention(backend="reference", return_weights=True)`` so every
head's pattern can be read without editing the model.

Both models initialise every parameter from an explicit ``torch.Generator``: ``ICLGPT`` with
PyTorch's fan-in uniform scheme (the position table starts at 0), ``AttentionOnlyTransformer``
GPT-2 style (weights N(0, 0.02^2), LayerNorm gains 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import normal_matrices_, reset_children


# ------------------------------------------------------------------ prompt-as-sequence regression
@dataclass(frozen=True)
class ICLGPTConfig:
    """x_dim: D; max_points: K (the position table holds 2K entries)."""

    x_dim: int
    max_points: int
    d_model: int = 32
    num_layers: int = 2
    num_heads: int = 2
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        for name in ("x_dim", "max_points", "d_model", "num_layers", "num_heads", "mlp_ratio"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must divide d_model ({self.d_model})")


class _PreLNBlock(nn.Module):
    """h <- h + MHA(LN(h)) (causal); h <- h + MLP(LN(h)), MLP = Linear-GELU-Linear."""

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm_attn = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, num_heads, backend="sdpa")
        self.norm_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model),
            nn.GELU(),
            nn.Linear(mlp_ratio * d_model, d_model),
        )

    def forward(self, h: Tensor) -> Tensor:
        h = h + self.attn(self.norm_attn(h), is_causal=True).output
        return h + self.mlp(self.norm_mlp(h))


def interleave_regression_tokens(x: Tensor, y: Tensor) -> Tensor:
    """(B, K, D), (B, K) -> (B, 2K, 1 + D): x_i -> (0, x_i) at 2i, y_i -> (y_i, 0...) at 2i + 1."""
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x (B, K, D) and y (B, K) expected, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    b, k, d = x.shape
    x_tokens = torch.cat([torch.zeros(b, k, 1, dtype=x.dtype), x], dim=-1)  # (B, K, 1+D)
    y_tokens = torch.cat([y.unsqueeze(-1), torch.zeros(b, k, d, dtype=x.dtype)], dim=-1)
    return torch.stack([x_tokens, y_tokens], dim=2).reshape(b, 2 * k, 1 + d)  # (B, 2K, 1+D)


class ICLGPT(nn.Module):
    """GPT-style in-context regressor; ``forward(x, y)`` returns predictions of every y_i (B, K)."""

    def __init__(self, config: ICLGPTConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Linear(1 + c.x_dim, c.d_model)
        self.position = nn.Parameter(torch.zeros(2 * c.max_points, c.d_model))  # learned absolute
        self.blocks = nn.ModuleList(
            _PreLNBlock(c.d_model, c.num_heads, c.mlp_ratio) for _ in range(c.num_layers)
        )
        self.norm_final = nn.LayerNorm(c.d_model)
        self.readout = nn.Linear(c.d_model, 1)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """PyTorch's default scheme for every layer (``nn.init.reset_children``: linear weights
        and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), LayerNorm 1 and 0) and a zero position
        table.

        For the regression GPT this matters: with N(0, 0.02^2) weights the D = 4 task-diversity
        runs at M >= 32 stayed on the predict-zero plateau within 2000 steps (fresh-task MSE ~
        D + sigma^2), while this scheme reaches ~1.3x the ridge MSE at M = 64 (FACTS.md reports
        ~1.25x).
        """
        reset_children(self, generator)
        self.position.zero_()

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        k = x.shape[1] if x.dim() == 3 else -1
        if x.dim() != 3 or x.shape[-1] != self.config.x_dim or not 1 <= k <= self.config.max_points:
            raise ValueError(
                f"x must have shape (batch, K <= {self.config.max_points}, {self.config.x_dim}), "
                f"got {tuple(x.shape)}"
            )
        tokens = interleave_regression_tokens(x, y)  # (B, 2K, 1+D)
        h = self.embed(tokens) + self.position[: 2 * k]  # (B, 2K, d_model)
        for block in self.blocks:
            h = block(h)
        out = self.readout(self.norm_final(h)).squeeze(-1)  # (B, 2K)
        return out[:, 0::2]  # read at the x tokens: (B, K)


# ------------------------------------------------------------------ attention-only, for induction
@dataclass(frozen=True)
class AttentionOnlyConfig:
    vocab_size: int = 128
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "num_heads", "num_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.num_heads or (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model / num_heads must be an even integer, "
                f"got {self.d_model} / {self.num_heads}"
            )
        if not self.rope_base > 1:
            raise ValueError(f"rope_base must be > 1, got {self.rope_base}")


def _apply_rotary(x: Tensor, base: float) -> Tensor:
    """Rotate (B, H, T, Dh) by RoPE in the "half" layout (GPT-NeoX; FACTS.md).

    Pair j couples channels j and j + Dh/2 with frequency theta_j = base^(-2j/Dh); position m
    rotates the pair by angle m theta_j: x' = x cos + rotate_half(x) sin with
    rotate_half(x) = cat(-x2, x1). Angles are computed in float32. A minimal private helper so
    this model does not depend on the project's position module.
    """
    t, dh = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, dh // 2, dtype=torch.float32) * 2 / dh)  # (Dh/2,)
    angles = torch.arange(t, dtype=torch.float32).unsqueeze(1) * inv_freq  # (T, Dh/2)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1).to(x.dtype)  # (T, Dh)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1).to(x.dtype)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2 :]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class _RotaryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, rope_base: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.rope_base = rope_base
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor]:
        b, t, d = h.shape
        q, k, v = self.qkv(h).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = _apply_rotary(q, self.rope_base), _apply_rotary(k, self.rope_base)  # (B, H, T, Dh)
        out, weights = scaled_dot_product_attention(
            q, k, v, is_causal=True, backend="reference", return_weights=True
        )
        merged = out.transpose(1, 2).reshape(b, t, d)  # (B, T, d)
        assert weights is not None
        return self.out(merged), weights


class AttentionOnlyTransformer(nn.Module):
    """Attention-only pre-LN decoder with RoPE; ``forward`` returns (logits, per-layer weights)."""

    def __init__(self, config: AttentionOnlyConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(c.d_model) for _ in range(c.num_layers))
        self.attns = nn.ModuleList(
            _RotaryAttention(c.d_model, c.num_heads, c.rope_base) for _ in range(c.num_layers)
        )
        self.norm_final = nn.LayerNorm(c.d_model)
        self.unembed = nn.Linear(c.d_model, c.vocab_size, bias=False)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """GPT-2's scheme: every matrix ~ N(0, 0.02^2), LayerNorm gains 1 and shifts 0."""
        reset_children(self, generator)
        normal_matrices_(self, generator, 0.02)

    def forward(self, tokens: Tensor) -> tuple[Tensor, list[Tensor]]:
        """tokens (B, T) int64 -> logits (B, T, vocab), weights per layer (B, H, T, T)."""
        if tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError(
                f"tokens must be int64 of shape (batch, T), "
                f"got {tokens.dtype} {tuple(tokens.shape)}"
            )
        h = self.embed(tokens)  # (B, T, d)
        weights = []
        for norm, attn in zip(self.norms, self.attns, strict=True):
            delta, w = attn(norm(h))
            h = h + delta
            weights.append(w)
        return self.unembed(self.norm_final(h)), weights

    def next_token_loss(self, tokens: Tensor) -> tuple[Tensor, list[Tensor]]:
        """Cross-entropy of predicting token t+1 at position t: (B, T-1), and the weights."""
        logits, weights = self.forward(tokens)
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]),
            tokens[:, 1:].reshape(-1),
            reduction="none",
        )
        return loss.view(tokens.shape[0], -1), weights
