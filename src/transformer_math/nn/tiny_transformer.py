"""A small configurable Transformer for the expressivity and computation experiments.

Built on :class:`transformer_math.nn.attention.MultiHeadAttention`. Components are chosen by
*name* from registries (ARCHITECTURE.md, "Examples to follow"), never by boolean flags:

* ``block``: ``"full"`` (pre-LN: h + Attn(LN h), then h + FFN(LN h)), ``"attention_only"``
  (h + Attn(LN h)), ``"ffn_only"`` (h + FFN(LN h); every token is processed alone).
  000 §8.3.4 "反面": attention mixes context, the FFN is the token-wise nonlinearity.
* ``positions``: ``"none"`` (the model is permutation equivariant, 000 §8.3.1 property (3)),
  ``"learned"`` (absolute table, error beyond ``max_len``), ``"sinusoidal"`` (Vaswani et al. 2017,
  PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)), ``"relative"`` (a learned
  per-head bias b_h(clip(i - j)) added to the attention logits, a simplified T5 relative bias,
  Raffel et al. 2020: distances beyond ``relative_window`` share one bias, so the model is
  defined for any length), ``"local_relative"`` (the same bias, but keys farther than
  ``relative_window - 1`` are masked out: sliding-window attention, so every query sees at most
  2 * relative_window - 1 keys whatever the sequence length and softmax weights are not diluted
  by far keys).
* ``attention``: ``"bidirectional"`` or ``"causal"``.

The positional code here is a minimal private one (the project's position modules live
elsewhere); it exists so that these experiments can switch positions on and off by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import seeded

BLOCKS = ("full", "attention_only", "ffn_only")
POSITIONS = ("none", "learned", "sinusoidal", "relative", "local_relative")
ATTENTION = ("bidirectional", "causal")


@dataclass(frozen=True)
class TinyTransformerConfig:
    """Everything that defines a :class:`TinyTransformer` (a model is built from its config)."""

    vocab_size: int
    num_outputs: int
    embed_dim: int = 32
    num_heads: int = 2
    num_layers: int = 2
    block: str = "full"
    positions: str = "none"
    attention: str = "bidirectional"
    max_len: int = 64
    ffn_mult: int = 4
    relative_window: int = 8

    def __post_init__(self) -> None:
        for name in ("vocab_size", "num_outputs", "embed_dim", "num_heads", "num_layers",
                     "max_len", "ffn_mult", "relative_window"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name, allowed in (("block", BLOCKS), ("positions", POSITIONS),
                              ("attention", ATTENTION)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must divide embed_dim ({self.embed_dim})"
            )


# ---------------------------------------------------------------- position schemes
class _NoPositions(nn.Module):
    def embed(self, h: Tensor) -> Tensor:
        return h

    def attention_bias(self, t: int, s: int) -> Tensor | None:
        return None


class _LearnedPositions(_NoPositions):
    def __init__(self, cfg: TinyTransformerConfig) -> None:
        super().__init__()
        self.max_len = cfg.max_len
        self.table = nn.Embedding(cfg.max_len, cfg.embed_dim)
        nn.init.normal_(self.table.weight, std=0.02)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """The position table ~ N(0, 0.02^2) (GPT-2's scale)."""
        nn.init.normal_(self.table.weight, std=0.02, generator=generator)

    def embed(self, h: Tensor) -> Tensor:
        t = h.shape[1]
        if t > self.max_len:
            raise ValueError(
                f"sequence length {t} exceeds the learned position table (max_len={self.max_len})"
            )
        return h + self.table.weight[:t]


class _SinusoidalPositions(_NoPositions):
    def __init__(self, cfg: TinyTransformerConfig) -> None:
        super().__init__()
        self.dim = cfg.embed_dim

    def embed(self, h: Tensor) -> Tensor:
        t = h.shape[1]
        pos = torch.arange(t, dtype=torch.float64)[:, None]  # (T, 1)
        i = torch.arange(0, self.dim, 2, dtype=torch.float64)  # (d/2,)
        angle = pos / (10000.0 ** (i / self.dim))  # (T, ceil(d/2))
        pe = torch.zeros(t, self.dim, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : self.dim // 2])
        return h + pe.to(h.dtype)


class _RelativeBias(_NoPositions):
    """Logit bias b_h(clip(i - j, -(W-1), W-1)) per head: depends only on the offset i - j."""

    def __init__(self, cfg: TinyTransformerConfig) -> None:
        super().__init__()
        self.window = cfg.relative_window
        self.bias = nn.Parameter(torch.zeros(cfg.num_heads, 2 * cfg.relative_window - 1))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Relative biases start at 0 (no offset preferred)."""
        self.bias.zero_()

    def attention_bias(self, t: int, s: int) -> Tensor:
        q_pos = torch.arange(t)[:, None] + (s - t)  # queries are the last t positions
        offset = (q_pos - torch.arange(s)[None, :]).clamp(-(self.window - 1), self.window - 1)
        return self.bias[:, offset + self.window - 1][None]  # (1, H, T, S)


class _LocalRelativeBias(_RelativeBias):
    """The relative bias inside a window of offsets |i - j| < W; -inf outside (sliding window)."""

    def attention_bias(self, t: int, s: int) -> Tensor:
        q_pos = torch.arange(t)[:, None] + (s - t)
        far = (q_pos - torch.arange(s)[None, :]).abs() >= self.window  # (T, S)
        return super().attention_bias(t, s).masked_fill(far, float("-inf"))


_POSITION_SCHEMES: dict[str, Callable[[TinyTransformerConfig], nn.Module]] = {
    "none": lambda cfg: _NoPositions(),
    "learned": _LearnedPositions,
    "sinusoidal": _SinusoidalPositions,
    "relative": _RelativeBias,
    "local_relative": _LocalRelativeBias,
}


# ---------------------------------------------------------------- blocks
class _FeedForward(nn.Module):
    """FFN(h) = W_2 GELU(W_1 h + b_1) + b_2, applied to every position alone."""

    def __init__(self, cfg: TinyTransformerConfig) -> None:
        super().__init__()
        hidden = cfg.ffn_mult * cfg.embed_dim
        self.net = nn.Sequential(
            nn.Linear(cfg.embed_dim, hidden), nn.GELU(), nn.Linear(hidden, cfg.embed_dim)
        )

    def forward(self, h: Tensor) -> Tensor:
        return self.net(h)


class _Block(nn.Module):
    """Pre-LN residual block made of the named sublayers ("attention", "ffn")."""

    def __init__(self, cfg: TinyTransformerConfig, sublayers: tuple[str, ...]) -> None:
        super().__init__()
        self.sublayers = sublayers
        self.causal = cfg.attention == "causal"
        if "attention" in sublayers:
            self.attn_norm = nn.LayerNorm(cfg.embed_dim)
            self.attn = MultiHeadAttention(cfg.embed_dim, cfg.num_heads)
        if "ffn" in sublayers:
            self.ffn_norm = nn.LayerNorm(cfg.embed_dim)
            self.ffn = _FeedForward(cfg)

    def forward(self, h: Tensor, bias: Tensor | None) -> Tensor:
        if "attention" in self.sublayers:
            h = h + self.attn(self.attn_norm(h), attn_mask=bias, is_causal=self.causal).output
        if "ffn" in self.sublayers:
            h = h + self.ffn(self.ffn_norm(h))
        return h


_BLOCK_SUBLAYERS: dict[str, tuple[str, ...]] = {
    "full": ("attention", "ffn"),
    "attention_only": ("attention",),
    "ffn_only": ("ffn",),
}


class TinyTransformer(nn.Module):
    """tokens (B, T) -> logits (B, T, num_outputs): embed, add positions, L blocks, LN, readout."""

    def __init__(self, cfg: TinyTransformerConfig) -> None:
        super().__init__()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.embed_dim)
        self.positions = _POSITION_SCHEMES[cfg.positions](cfg)
        self.blocks = nn.ModuleList(
            _Block(cfg, _BLOCK_SUBLAYERS[cfg.block]) for _ in range(cfg.num_layers)
        )
        self.final_norm = nn.LayerNorm(cfg.embed_dim)
        self.readout = nn.Linear(cfg.embed_dim, cfg.num_outputs)

    def hidden_states(self, tokens: Tensor) -> Tensor:
        """The final normalised hidden states, shape (B, T, embed_dim)."""
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
            got = getattr(tokens, "shape", tokens)
            raise ValueError(f"tokens must be an integer tensor (batch, seq), got {got}")
        vocab = self.config.vocab_size
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
            raise ValueError(
                f"tokens must lie in [0, {self.config.vocab_size}), got range "
                f"[{int(tokens.min())}, {int(tokens.max())}]"
            )
        t = tokens.shape[1]
        h = self.positions.embed(self.embed(tokens))  # (B, T, d)
        bias = self.positions.attention_bias(t, t)  # (1, H, T, T) or None
        for block in self.blocks:
            h = block(h, bias)
        return self.final_norm(h)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.readout(self.hidden_states(tokens))  # (B, T, num_outputs)


def build_tiny_transformer(cfg: TinyTransformerConfig, seed: int) -> TinyTransformer:
    """Build the model with every parameter drawn from a generator seeded with ``seed``
    (``nn.init.seeded``: the global RNG is neither read nor advanced)."""
    return seeded(lambda: TinyTransformer(cfg), seed)

