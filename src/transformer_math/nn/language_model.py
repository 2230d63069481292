"""A decoder-only language model built from a dataclass config, with KV-cached generation.

Math (Radford et al. 2018/2019, GPT; 000 §8.3.1 causal mask, §8.3.7 Pre-LN):
    h_0 = E[tokens] + P[positions],  h_l = Block_l(h_{l-1}) (causal),  logits = LN(h_L) W_U.
Generation is autoregressive: p(x_{t+1} | x_{<=t}) = softmax(logits_t / temperature); greedy
decoding takes the arg-max. With a KV cache each step feeds only the new token: its key and value
are appended to every layer's cache and its query attends to all cached positions (bottom-right
causal alignment), so cached and uncached generation give the same tokens (exactly up to rounding).

Positions: ``position="learned"`` (a table of ``max_seq_len`` rows, GPT-2) or ``"none"``
(NoPE: causal attention alone carries order). Rotary positions live in ``MultiHeadAttention``.

Parameter count (biases on, learned positions, untied head, norm = LayerNorm, GELU FFN):
    V d + T_max d + L (4 d^2 + 4 d + 2 d d_ff + d_ff + d + 4 d) + 2 d + d V.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.nn.attention import KVCache, count_parameters
from transformer_math.nn.blocks import BlockConfig, TransformerBlock
from transformer_math.nn.init import reset_children
from transformer_math.nn.norms import build_norm

POSITION_KINDS = ("learned", "none")


@dataclass(frozen=True)
class LanguageModelConfig:
    """Everything needed to build a :class:`DecoderOnlyLM` (the model is built from it alone)."""

    vocab_size: int
    max_seq_len: int
    dim: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int | None = None
    ffn_hidden_dim: int | None = None
    ffn_type: str = "gelu"
    norm_type: str = "layernorm"
    norm: str = "pre"
    dropout: float = 0.0
    attention_backend: str = "sdpa"
    position: str = "learned"
    tie_embeddings: bool = False
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_seq_len", "num_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.position not in POSITION_KINDS:
            raise ValueError(f"position must be one of {POSITION_KINDS}, got {self.position!r}")
        self.block_config()  # validates the block hyper-parameters

    def block_config(self) -> BlockConfig:
        return BlockConfig(
            dim=self.dim,
            num_heads=self.num_heads,
            num_kv_heads=self.num_kv_heads,
            ffn_hidden_dim=self.ffn_hidden_dim,
            ffn_type=self.ffn_type,
            norm_type=self.norm_type,
            norm=self.norm,
            dropout=self.dropout,
            attention_backend=self.attention_backend,
            bias=self.bias,
        )


class DecoderOnlyLM(nn.Module):
    """GPT-style causal language model: tokens (B, T) -> logits (B, T, vocab_size)."""

    def __init__(self, config: LanguageModelConfig) -> None:
        super().__init__()
        self.config = config
        block = config.block_config()
        self.token_embedding = nn.Embedding(config.vocab_size, config.dim)
        self.position_embedding = (
            nn.Embedding(config.max_seq_len, config.dim) if config.position == "learned" else None
        )
        self.blocks = nn.ModuleList(TransformerBlock(block) for _ in range(config.num_layers))
        self.final_norm = build_norm(config.norm_type, config.dim) if config.norm == "pre" else None
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.token_embedding.weight
        self._init_embeddings(None)

    @torch.no_grad()
    def _init_embeddings(self, generator: torch.Generator | None) -> None:
        """GPT-2 initialisation of the embedding tables: N(0, 0.02^2) (a tied head shares it)."""
        nn.init.normal_(self.token_embedding.weight, 0.0, 0.02, generator=generator)
        if self.position_embedding is not None:
            nn.init.normal_(self.position_embedding.weight, 0.0, 0.02, generator=generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Blocks and head by the package convention (``nn.init``), then the embedding tables."""
        reset_children(self, generator)
        self._init_embeddings(generator)

    def new_caches(self) -> list[KVCache]:
        """One empty :class:`KVCache` per layer."""
        return [KVCache() for _ in self.blocks]

    def forward(self, tokens: Tensor, *, caches: list[KVCache] | None = None) -> Tensor:
        """Logits (B, T, V). With ``caches`` the tokens continue the cached sequence."""
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError(
                "tokens must be a LongTensor of shape (batch, seq), got "
                f"{getattr(tokens, 'dtype', type(tokens).__name__)} "
                f"{tuple(getattr(tokens, 'shape', ()))}"
            )
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.config.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.config.vocab_size}), got range "
                f"[{int(tokens.min())}, {int(tokens.max())}]"
            )
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches must hold {len(self.blocks)} KVCache, got {len(caches)}")
        offset = 0 if caches is None else caches[0].seq_len
        t = tokens.shape[1]
        if offset + t > self.config.max_seq_len:
            raise ValueError(
                f"sequence length {offset + t} exceeds max_seq_len={self.config.max_seq_len}"
            )
        h = self.token_embedding(tokens)  # (B, T, d)
        if self.position_embedding is not None:
            positions = torch.arange(offset, offset + t, device=tokens.device)
            h = h + self.position_embedding(positions)  # broadcast over batch
        for i, block in enumerate(self.blocks):
            h = block(h, is_causal=True, kv_cache=None if caches is None else caches[i])
        if self.final_norm is not None:
            h = self.final_norm(h)
        return self.lm_head(h)  # (B, T, V)

    @torch.no_grad()
    def generate(
        self,
        prompt: Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 0.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> Tensor:
        """Continue ``prompt`` (B, T0) by ``max_new_tokens`` tokens; returns (B, T0 + new).

        ``temperature == 0`` is greedy decoding; ``temperature > 0`` samples from
        softmax(logits / temperature), restricted to the ``top_k`` most likely tokens if given,
        using ``generator`` (explicit randomness). ``use_cache=False`` recomputes the whole
        prefix at every step (the reference that cached decoding must equal).
        """
        if (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or max_new_tokens < 0
        ):
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        if not temperature >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"top_k must be in [1, {self.config.vocab_size}], got {top_k}")
        if prompt.dim() != 2 or prompt.shape[1] == 0:
            raise ValueError(f"prompt must have shape (batch, seq>=1), got {tuple(prompt.shape)}")
        if prompt.shape[1] + max_new_tokens > self.config.max_seq_len:
            raise ValueError(
                f"prompt length {prompt.shape[1]} + max_new_tokens {max_new_tokens} exceeds "
                f"max_seq_len={self.config.max_seq_len}"
            )
        was_training = self.training
        self.eval()
        tokens = prompt
        caches = self.new_caches() if use_cache else None
        step_input = prompt
        for _ in range(max_new_tokens):
            # (B, V): the cached path feeds only the new token(s)
            logits = (self(step_input, caches=caches) if use_cache else self(tokens))[:, -1]
            next_token = self._choose(logits, temperature, top_k, generator)  # (B, 1)
            tokens = torch.cat([tokens, next_token], dim=1)
            step_input = next_token
        self.train(was_training)
        return tokens

    @staticmethod
    def _choose(
        logits: Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None
    ) -> Tensor:
        if temperature == 0.0:
            return logits.argmax(dim=-1, keepdim=True)
        scaled = logits / temperature
        if top_k is not None:
            kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        probs = torch.softmax(scaled, dim=-1)
        return torch.multinomial(probs, 1, generator=generator)

    def parameter_breakdown(self) -> dict[str, int]:
        """Trainable parameters by part (the tied head counts once, under ``embedding``)."""
        parts = {
            "embedding": count_parameters(self.token_embedding),
            "positions": 0
            if self.position_embedding is None
            else count_parameters(self.position_embedding),
            "blocks": sum(count_parameters(b) for b in self.blocks),
            "final_norm": 0 if self.final_norm is None else count_parameters(self.final_norm),
            "lm_head": 0 if self.config.tie_embeddings else count_parameters(self.lm_head),
        }
        parts["total"] = count_parameters(self)
        return parts

    def non_embedding_parameters(self) -> int:
        """Parameters excluding the token and position tables (the N of Kaplan et al. 2020)."""
        positions = (
            0 if self.position_embedding is None else count_parameters(self.position_embedding)
        )
        return count_parameters(self) - count_parameters(self.token_embedding) - positions


def predicted_parameter_count(config: LanguageModelConfig) -> int:
    """Closed-form parameter count for LayerNorm/RMSNorm and GELU/SwiGLU configurations."""
    d, ff, L = config.dim, config.block_config().hidden_dim, config.num_layers
    hkv = config.num_heads if config.num_kv_heads is None else config.num_kv_heads
    dk = d // config.num_heads
    b = 1 if config.bias else 0
    attn = d * d + 2 * d * hkv * dk + d * d + b * (d + 2 * hkv * dk + d)
    ffn = 2 * d * ff + b * (ff + d) if config.ffn_type == "gelu" else 3 * d * ff
    norm = 2 * d if config.norm_type == "layernorm" else d
    total = config.vocab_size * d + L * (attn + ffn + 2 * norm)
    total += config.max_seq_len * d if config.position == "learned" else 0
    total += norm if config.norm == "pre" else 0
    total += 0 if config.tie_embeddings else d * config.vocab_size
    return total
