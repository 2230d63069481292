"""Transformer blocks (pre- and post-norm), encoder and decoder layers, Encoder and Decoder stacks.

Math (000 §8.3.7 "Pre-LN vs Post-LN"; Vaswani et al. 2017 §3.1; Xiong et al. 2020 eqs. 1-2):
    Post-LN:  x' = LN(x + Attn(x)),           y = LN(x' + FFN(x'))
    Pre-LN:   x' = x + Attn(LN(x)),           y = x' + FFN(LN(x'))
A residual sublayer is one forward-Euler step x_{l+1} = x_l + f(x_l) (000 §8.3.7 "理论 A").

Decoder layer (Vaswani et al. §3.1; 004 "解码器结构", whose call signature is fixed here): masked
(causal) self-attention over the target, cross-attention whose queries come from the target and
whose keys/values come from the encoder output ("memory"), then the feed-forward network. Padded
source tokens are excluded from cross-attention through ``memory_key_padding_mask`` (True = pad).

Pre-LN stacks end with a final normalisation (GPT-2, Xiong et al. Fig. 1); Post-LN stacks do not
need one (their last sublayer already normalises).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

import transformer_math.functional.tiled_attention  # noqa: F401  (registers backend "tiled")
from transformer_math.nn.attention import KVCache, MultiHeadAttention
from transformer_math.nn.feedforward import FEEDFORWARDS, build_feedforward
from transformer_math.nn.norms import NORMS, build_norm

NORM_POSITIONS = ("pre", "post")


@dataclass(frozen=True)
class BlockConfig:
    """Hyper-parameters shared by every layer of a stack.

    ``ffn_hidden_dim`` defaults to 4 * dim. ``norm`` is where the normalisation sits (``pre`` |
    ``post``); ``norm_type`` which one (``layernorm`` | ``rmsnorm``); ``ffn_type`` ``gelu`` |
    ``swiglu``; ``attention_backend`` a registered backend name (``sdpa``, ``reference``, ...).
    """

    dim: int
    num_heads: int
    num_kv_heads: int | None = None
    ffn_hidden_dim: int | None = None
    ffn_type: str = "gelu"
    norm_type: str = "layernorm"
    norm: str = "pre"
    dropout: float = 0.0
    attention_backend: str = "sdpa"
    bias: bool = True

    def __post_init__(self) -> None:
        if self.dim <= 0 or self.num_heads <= 0:
            raise ValueError(
                f"dim and num_heads must be positive, got dim={self.dim}, "
                f"num_heads={self.num_heads}"
            )
        if self.dim % self.num_heads != 0:
            raise ValueError(f"num_heads ({self.num_heads}) must divide dim ({self.dim})")
        if self.norm not in NORM_POSITIONS:
            raise ValueError(f"norm must be one of {NORM_POSITIONS}, got {self.norm!r}")
        if self.norm_type not in NORMS:
            raise ValueError(f"norm_type must be one of {sorted(NORMS)}, got {self.norm_type!r}")
        if self.ffn_type not in FEEDFORWARDS:
            raise ValueError(
                f"ffn_type must be one of {sorted(FEEDFORWARDS)}, got {self.ffn_type!r}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.ffn_hidden_dim is not None and self.ffn_hidden_dim <= 0:
            raise ValueError(f"ffn_hidden_dim must be positive, got {self.ffn_hidden_dim}")

    @property
    def hidden_dim(self) -> int:
        return 4 * self.dim if self.ffn_hidden_dim is None else self.ffn_hidden_dim


def _attention(config: BlockConfig) -> MultiHeadAttention:
    return MultiHeadAttention(
        config.dim,
        config.num_heads,
        num_kv_heads=config.num_kv_heads,
        bias=config.bias,
        backend=config.attention_backend,
        dropout=config.dropout,
    )


class TransformerBlock(nn.Module):
    """Self-attention + feed-forward with residuals; ``config.norm`` selects pre or post norm.

    Used as the encoder layer (``is_causal=False``) and as the decoder-only (GPT) layer
    (``is_causal=True``). The two residual branches are exposed as :meth:`attention_branch` and
    :meth:`ffn_branch` (f in x + f(x)) so that diagnostics can study them without editing the block.
    """

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.config = config
        self.self_attn = _attention(config)
        self.ffn = build_feedforward(config.ffn_type, config.dim, config.hidden_dim)
        self.norm1 = build_norm(config.norm_type, config.dim)
        self.norm2 = build_norm(config.norm_type, config.dim)
        self.dropout = nn.Dropout(config.dropout)

    def attention_branch(
        self,
        x: Tensor,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        """f_attn(x): Attn(LN(x)) for pre-norm, Attn(x) for post-norm (the residual branch)."""
        h = self.norm1(x) if self.config.norm == "pre" else x
        out = self.self_attn(
            h,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            kv_cache=kv_cache,
        ).output
        return self.dropout(out)

    def ffn_branch(self, x: Tensor) -> Tensor:
        """f_ffn(x): FFN(LN(x)) for pre-norm, FFN(x) for post-norm."""
        h = self.norm2(x) if self.config.norm == "pre" else x
        return self.dropout(self.ffn(h))

    def forward(
        self,
        x: Tensor,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        """x (B, T, dim) -> (B, T, dim)."""
        a = self.attention_branch(
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            kv_cache=kv_cache,
        )
        if self.config.norm == "pre":
            x = x + a
            return x + self.ffn_branch(x)
        x = self.norm1(x + a)
        return self.norm2(x + self.ffn_branch(x))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder output, feed-forward.

    Pre-LN: x += SelfAttn(LN1 x, causal); x += CrossAttn(LN2 x, memory); x += FFN(LN3 x).
    Post-LN: x = LN1(x + SelfAttn(x)); x = LN2(x + CrossAttn(x, memory)); x = LN3(x + FFN(x)).
    """

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.config = config
        self.self_attn = _attention(config)
        self.cross_attn = _attention(config)
        self.ffn = build_feedforward(config.ffn_type, config.dim, config.hidden_dim)
        self.norm1 = build_norm(config.norm_type, config.dim)
        self.norm2 = build_norm(config.norm_type, config.dim)
        self.norm3 = build_norm(config.norm_type, config.dim)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        self_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        kv_cache: KVCache | None = None,
    ) -> Tensor:
        """x (B, T, dim) target, memory (B, S, dim) encoder output -> (B, T, dim)."""
        if memory.dim() != 3 or memory.shape[0] != x.shape[0] or memory.shape[-1] != x.shape[-1]:
            raise ValueError(
                f"memory must have shape (batch={x.shape[0]}, src_len, dim={x.shape[-1]}), "
                f"got {tuple(memory.shape)}"
            )
        pre = self.config.norm == "pre"

        def sublayer(x: Tensor, norm: nn.Module, branch) -> Tensor:  # type: ignore[no-untyped-def]
            if pre:
                return x + self.dropout(branch(norm(x)))
            return norm(x + self.dropout(branch(x)))

        x = sublayer(
            x,
            self.norm1,
            lambda h: (
                self.self_attn(
                    h, key_padding_mask=self_key_padding_mask, is_causal=True, kv_cache=kv_cache
                ).output
            ),
        )
        x = sublayer(
            x,
            self.norm2,
            lambda h: (
                self.cross_attn(h, memory, memory, key_padding_mask=memory_key_padding_mask).output
            ),
        )
        return sublayer(x, self.norm3, self.ffn)


class Encoder(nn.Module):
    """A stack of non-causal :class:`TransformerBlock`s (+ final norm when pre-norm)."""

    def __init__(self, config: BlockConfig, num_layers: int) -> None:
        super().__init__()
        if num_layers <= 0:
            raise ValueError(f"num_layers must be positive, got {num_layers}")
        self.config = config
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(num_layers))
        self.final_norm = build_norm(config.norm_type, config.dim) if config.norm == "pre" else None

    def forward(self, x: Tensor, *, key_padding_mask: Tensor | None = None) -> Tensor:
        """x (B, S, dim) -> memory (B, S, dim); ``key_padding_mask`` (B, S), True = padded."""
        for layer in self.layers:
            x = layer(x, key_padding_mask=key_padding_mask)
        return self.final_norm(x) if self.final_norm is not None else x


class Decoder(nn.Module):
    """A stack of :class:`DecoderLayer`s attending to an encoder's memory (+ final norm if pre)."""

    def __init__(self, config: BlockConfig, num_layers: int) -> None:
        super().__init__()
        if num_layers <= 0:
            raise ValueError(f"num_layers must be positive, got {num_layers}")
        self.config = config
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(num_layers))
        self.final_norm = build_norm(config.norm_type, config.dim) if config.norm == "pre" else None

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        self_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        kv_caches: list[KVCache] | None = None,
    ) -> Tensor:
        """x (B, T, dim), memory (B, S, dim) -> (B, T, dim); one KV cache per layer if given."""
        if kv_caches is not None and len(kv_caches) != len(self.layers):
            raise ValueError(
                f"kv_caches must hold one cache per layer ({len(self.layers)}), "
                f"got {len(kv_caches)}"
            )
        for i, layer in enumerate(self.layers):
            x = layer(
                x,
                memory,
                self_key_padding_mask=self_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                kv_cache=None if kv_caches is None else kv_caches[i],
            )
        return self.final_norm(x) if self.final_norm is not None else x
