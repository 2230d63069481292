"""A decoder-only LM whose parameters map one-to-one onto Llama- and GPT-2-format checkpoints.

Built from the project's modules (``nn/attention.py`` MultiHeadAttention with GQA, RoPE and a KV
cache; ``nn/position.py`` RotaryEmbedding with HF scaling types; ``nn/norms.py``;
``nn/feedforward.py`` SwiGLU). ``DecoderOnlyLM`` has no rotary positions, no per-family norm
epsilon and no GPT-2 tanh-GELU, hence this separate class (000 §8.3.1, §8.3.3, §8.3.7; 004).

Llama family (Touvron et al. 2023; HF ``modeling_llama.py`` conventions):
    h_0 = E[x];  a = h + Attn_RoPE(RMSNorm_1(h));  h' = a + W_down(SiLU(W_gate n) * W_up n),
    n = RMSNorm_2(a);  logits = RMSNorm_f(h_L) W_U^T.
    RMSNorm(x) = w * cast(x_32 / sqrt(mean(x_32^2) + eps)) computed in float32, cast back to the
    input dtype BEFORE the weight multiply (HF's order). RoPE uses the "half" layout
    (pair j with j + d/2); q/k weights in Meta's interleaved layout are permuted on import.
    GQA: H_kv key/value heads shared by H/H_kv query heads.
GPT-2 family (Radford et al. 2019):
    h_0 = E[x] + P[pos];  a = h + Attn(LN_1(h));  h' = a + W_2 gelu_tanh(W_1 LN_2(a) + b_1) + b_2;
    logits = LN_f(h_L) E^T (tied),  gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).

Generation (greedy / temperature / top-k) uses the KV cache; batches with left padding pass an
``attention_mask`` (1 = token, 0 = pad, over every key position so far): padded keys are masked
(``key_padding_mask``) and positions are counted over real tokens only
(``position_ids = cumsum(mask) - 1``), so a left-padded row produces the same tokens as the
unpadded sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.nn.attention import KVCache, MultiHeadAttention, count_parameters
from transformer_math.nn.feedforward import SwiGLU
from transformer_math.nn.init import normal_matrices_, reset_children
from transformer_math.nn.norms import LayerNorm, RMSNorm
from transformer_math.nn.position import RotaryEmbedding

FAMILIES = ("llama", "gpt2")
ACTIVATIONS = ("silu", "gelu_tanh", "gelu")


@dataclass(frozen=True)
class CheckpointLMConfig:
    """Hyper-parameters of a :class:`CheckpointLM` (mapped from an HF ``config.json``).

    ``rope_scaling`` is ``{"rope_type": name, **params}`` in the parameter names of
    ``functional/rope_scaling.py`` (None = plain RoPE); ``max_position_embeddings`` is the
    learned-position table size for GPT-2 and only informative for Llama (RoPE extrapolates).
    """

    family: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position_embeddings: int
    num_kv_heads: int | None = None
    head_dim: int | None = None
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    partial_rotary_factor: float = 1.0
    attention_bias: bool = False
    mlp_bias: bool = False
    activation: str = "silu"
    tie_word_embeddings: bool = False
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_position_embeddings"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.head_dim is None and self.hidden_size % self.num_heads != 0:
            raise ValueError(f"num_heads ({self.num_heads}) must divide hidden_size "
                             f"({self.hidden_size}) when head_dim is not given")
        kv = self.kv_heads
        if kv <= 0 or self.num_heads % kv != 0:
            raise ValueError(f"num_kv_heads ({kv}) must be positive and divide num_heads "
                             f"({self.num_heads})")
        if not self.norm_eps >= 0:
            raise ValueError(f"norm_eps must be >= 0, got {self.norm_eps}")

    @property
    def kv_heads(self) -> int:
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def dim_per_head(self) -> int:
        return self.hidden_size // self.num_heads if self.head_dim is None else self.head_dim


class HFRMSNorm(RMSNorm):
    """RMSNorm evaluated in float32 and cast back before the weight (HF Llama's order)."""

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        out = normed.to(x.dtype)
        return out if self.weight is None else self.weight * out


class GPT2MLP(nn.Module):
    """W_2 act(W_1 x + b_1) + b_2 with act = tanh-approximate GELU (GPT-2's gelu_new) or exact."""

    def __init__(self, dim: int, hidden_dim: int, *, approximate: str = "tanh") -> None:
        super().__init__()
        self.fc_in = nn.Linear(dim, hidden_dim)
        self.fc_out = nn.Linear(hidden_dim, dim)
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return self.fc_out(F.gelu(self.fc_in(x), approximate=self.approximate))


class CheckpointBlock(nn.Module):
    """Pre-norm residual block: h + Attn(N_1 h), then + FFN(N_2 .)."""

    def __init__(self, config: CheckpointLMConfig, rotary: RotaryEmbedding | None) -> None:
        super().__init__()
        c = config
        if c.family == "llama":
            self.attn_norm: nn.Module = HFRMSNorm(c.hidden_size, eps=c.norm_eps)
            self.ffn_norm: nn.Module = HFRMSNorm(c.hidden_size, eps=c.norm_eps)
            self.ffn: nn.Module = SwiGLU(c.hidden_size, c.intermediate_size, bias=c.mlp_bias)
        else:
            self.attn_norm = LayerNorm(c.hidden_size, eps=c.norm_eps)
            self.ffn_norm = LayerNorm(c.hidden_size, eps=c.norm_eps)
            approx = "tanh" if c.activation == "gelu_tanh" else "none"
            self.ffn = GPT2MLP(c.hidden_size, c.intermediate_size, approximate=approx)
        self.attn = MultiHeadAttention(
            c.hidden_size, c.num_heads, num_kv_heads=c.kv_heads, head_dim=c.dim_per_head,
            bias=c.attention_bias, rotary=rotary,
        )

    def forward(self, h: Tensor, *, cache: KVCache | None, position_ids: Tensor,
                key_padding_mask: Tensor | None) -> Tensor:
        a = h + self.attn(self.attn_norm(h), is_causal=True, kv_cache=cache,
                          position_ids=position_ids, key_padding_mask=key_padding_mask).output
        return a + self.ffn(self.ffn_norm(a))


class CheckpointLM(nn.Module):
    """Causal LM for the Llama and GPT-2 families: input_ids (B, T) -> logits (B, T, V).

    Use :func:`transformer_math.checkpoints.io.from_pretrained` to load a checkpoint and
    :func:`transformer_math.checkpoints.io.save_pretrained` to write one.
    """

    def __init__(self, config: CheckpointLMConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.embed_positions = (nn.Embedding(c.max_position_embeddings, c.hidden_size)
                                if c.family == "gpt2" else None)
        rotary = None
        if c.family == "llama":
            rotary = RotaryEmbedding(
                c.dim_per_head, base=c.rope_theta, partial_rotary_factor=c.partial_rotary_factor,
                scaling=c.rope_scaling, layout="half",
                max_position_embeddings=min(c.max_position_embeddings, 4096),
            )
        self.rotary = rotary
        self.layers = nn.ModuleList(CheckpointBlock(c, rotary) for _ in range(c.num_layers))
        self.final_norm: nn.Module = (HFRMSNorm(c.hidden_size, eps=c.norm_eps)
                                      if c.family == "llama"
                                      else LayerNorm(c.hidden_size, eps=c.norm_eps))
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        normal_matrices_(self, None, 0.02)  # silenced under nn.init.no_init_draws (loading)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Norm gains 1, biases by the package convention, every matrix ~ N(0, 0.02^2)
        (the ``initializer_range`` of HF's Llama and GPT-2 configs)."""
        reset_children(self, generator)
        normal_matrices_(self, generator, 0.02)

    @classmethod
    def from_pretrained(cls, path: str | Path, *, dtype: torch.dtype = torch.float32
                        ) -> CheckpointLM:
        """Load an HF-layout Llama or GPT-2 directory (see ``checkpoints/io.py``)."""
        from transformer_math.checkpoints.io import from_pretrained

        return from_pretrained(path, dtype=dtype)

    def save_pretrained(self, path: str | Path, *, max_shard_bytes: int | None = None) -> Path:
        """Write config.json + safetensors (sharded past ``max_shard_bytes``) in HF layout."""
        from transformer_math.checkpoints.io import save_pretrained

        return save_pretrained(self, path, max_shard_bytes=max_shard_bytes)

    # ------------------------------------------------------------------------------ forward

    def new_caches(self) -> list[KVCache]:
        """One empty :class:`KVCache` per layer."""
        return [KVCache() for _ in self.layers]

    def forward(
        self,
        input_ids: Tensor,
        *,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        caches: list[KVCache] | None = None,
    ) -> Tensor:
        """Logits (B, T, V) in float32-or-model dtype.

        ``attention_mask`` (B, past + T), 1 for tokens and 0 for (left) padding, covers every
        key seen so far; ``position_ids`` (B, T) default to ``cumsum(mask) - 1`` (pads get 1,
        their outputs are meaningless) or ``past .. past + T - 1`` without a mask.
        """
        if (not isinstance(input_ids, Tensor) or input_ids.dim() != 2
                or input_ids.dtype != torch.long):
            raise ValueError(
                "input_ids must be a LongTensor of shape (batch, seq), got "
                f"{getattr(input_ids, 'dtype', type(input_ids).__name__)} "
                f"{tuple(getattr(input_ids, 'shape', ()))}")
        v = self.config.vocab_size
        if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= v):
            raise ValueError(f"token ids must be in [0, {v}), got range "
                             f"[{int(input_ids.min())}, {int(input_ids.max())}]")
        if caches is not None and len(caches) != len(self.layers):
            raise ValueError(f"caches must hold {len(self.layers)} KVCache, got {len(caches)}")
        b, t = input_ids.shape
        past = 0 if caches is None else caches[0].seq_len
        key_padding_mask = None
        if attention_mask is not None:
            if tuple(attention_mask.shape) != (b, past + t):
                raise ValueError(f"attention_mask must have shape (batch, past + seq) = "
                                 f"({b}, {past + t}), got {tuple(attention_mask.shape)}")
            keep = attention_mask.to(torch.bool)
            key_padding_mask = ~keep
            if position_ids is None:
                pos = keep.long().cumsum(-1) - 1
                position_ids = pos.masked_fill(~keep, 1)[:, past:]
        if position_ids is None:
            position_ids = torch.arange(past, past + t, device=input_ids.device).expand(b, t)
        if tuple(position_ids.shape) != (b, t):
            raise ValueError(f"position_ids must have shape ({b}, {t}), "
                             f"got {tuple(position_ids.shape)}")
        h = self.embed_tokens(input_ids)
        if self.embed_positions is not None:
            n = self.config.max_position_embeddings
            if t and int(position_ids.max()) >= n:
                raise ValueError(f"position {int(position_ids.max())} exceeds the learned table "
                                 f"of max_position_embeddings={n} (GPT-2 cannot extrapolate)")
            h = h + self.embed_positions(position_ids)
        for i, layer in enumerate(self.layers):
            h = layer(h, cache=None if caches is None else caches[i], position_ids=position_ids,
                      key_padding_mask=key_padding_mask)
        return self.lm_head(self.final_norm(h))

    # --------------------------------------------------------------------------- generation

    @torch.no_grad()
    def generate(
        self,
        input_ids: Tensor,
        max_new_tokens: int,
        *,
        attention_mask: Tensor | None = None,
        temperature: float = 0.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        eos_token_id: int | list[int] | None = None,
        pad_token_id: int | None = None,
        use_cache: bool = True,
    ) -> Tensor:
        """Continue ``input_ids`` (B, T0) by up to ``max_new_tokens``; returns (B, T0 + n).

        Greedy when ``temperature == 0``; otherwise samples softmax(logits / temperature) over
        the ``top_k`` most likely tokens (all if None) with ``generator``. A row that emitted an
        ``eos_token_id`` is continued with ``pad_token_id`` (default: the first eos id); decoding
        stops early once every row is finished (HF ``generate`` semantics). ``use_cache=False``
        recomputes the whole prefix every step (the reference cached decoding must equal).
        """
        if (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                or max_new_tokens < 0):
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        if not temperature >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"top_k must be in [1, {self.config.vocab_size}], got {top_k}")
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise ValueError(f"input_ids must have shape (batch, seq>=1), got "
                             f"{tuple(input_ids.shape)}")
        eos = ([] if eos_token_id is None else
               [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id))
        pad = pad_token_id if pad_token_id is not None else (eos[0] if eos else 0)
        b = input_ids.shape[0]
        mask = (torch.ones_like(input_ids) if attention_mask is None
                else attention_mask.to(torch.long))
        was_training = self.training
        self.eval()
        tokens = input_ids
        caches = self.new_caches() if use_cache else None
        step = input_ids
        finished = torch.zeros(b, dtype=torch.bool, device=input_ids.device)
        eos_t = torch.tensor(eos, dtype=torch.long, device=input_ids.device)
        try:
            for _ in range(max_new_tokens):
                if use_cache:
                    logits = self(step, attention_mask=mask, caches=caches)[:, -1]
                else:
                    logits = self(tokens, attention_mask=mask)[:, -1]
                nxt = self._choose(logits.float(), temperature, top_k, generator)  # (B, 1)
                nxt = torch.where(finished.unsqueeze(1), torch.full_like(nxt, pad), nxt)
                tokens = torch.cat([tokens, nxt], dim=1)
                mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
                step = nxt
                if eos:
                    finished |= torch.isin(nxt.squeeze(1), eos_t)
                    if bool(finished.all()):
                        break
        finally:
            self.train(was_training)
        return tokens

    @staticmethod
    def _choose(logits: Tensor, temperature: float, top_k: int | None,
                generator: torch.Generator | None) -> Tensor:
        if temperature == 0.0:
            return logits.argmax(dim=-1, keepdim=True)
        scaled = logits / temperature
        if top_k is not None:
            kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        return torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator)

    # ------------------------------------------------------------------------------ summaries

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters by part; a tied head counts once, under ``embedding``."""
        attn = sum(count_parameters(layer.attn) for layer in self.layers)
        ffn = sum(count_parameters(layer.ffn) for layer in self.layers)
        norms = sum(count_parameters(layer.attn_norm) + count_parameters(layer.ffn_norm)
                    for layer in self.layers) + count_parameters(self.final_norm)
        parts = {
            "embedding": count_parameters(self.embed_tokens),
            "positions": 0 if self.embed_positions is None
            else count_parameters(self.embed_positions),
            "attention": attn,
            "feedforward": ffn,
            "norms": norms,
            "lm_head": 0 if self.config.tie_word_embeddings else count_parameters(self.lm_head),
        }
        parts["total"] = count_parameters(self)
        parts["non_embedding"] = parts["total"] - parts["embedding"] - parts["positions"] - (
            parts["lm_head"])
        return parts
