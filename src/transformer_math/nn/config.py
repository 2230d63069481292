"""The one configuration every Transformer of the project is built from.

A model is a function of its config (and a seed): ``Transformer(TransformerConfig(...))``. Parts
are chosen by name from registries, never by boolean feature flags (ARCHITECTURE.md):

=================  ========================================================================
field              registry / values
=================  ========================================================================
position           ``nn.position.POSITIONS``: none, learned, sinusoidal, rope, alibi, relative,
                   local_relative (rope takes ``rope_theta``, ``rope_scaling`` of any type in
                   ``functional.rope_scaling.ROPE_SCALING_FUNCTIONS``)
norm               ``nn.norms.NORMS``: layernorm, rmsnorm, rmsnorm_hf, none (identity)
feedforward        ``nn.feedforward.FEEDFORWARDS``: gelu, gelu_tanh, relu, swiglu, geglu_tanh
sublayers          :data:`SUBLAYERS`: full, attention_only, ffn_only
norm_placement     :data:`NORM_PLACEMENTS`: pre (Xiong et al. 2020), post (Vaswani et al. 2017)
attention_backend  ``functional.attention.ATTENTION_BACKENDS``: sdpa, reference, tiled, linear
init               :data:`INITS`: torch (each layer's PyTorch default), gpt2 (N(0, 0.02^2))
=================  ========================================================================

One vocabulary for sizes (ARCHITECTURE.md "Conventions"): ``hidden_size`` (the width d),
``num_heads``, ``num_kv_heads``, ``head_dim``, ``num_layers``, ``intermediate_size`` (d_ff),
``vocab_size``, ``max_seq_len``.

Checkpoint-family options (``checkpoints/adapters``): ``attention_out_bias`` (the output
projection's bias, default ``attention_bias``; Qwen2: q/k/v biases, none on the output),
``sliding_window`` W (causal attention to the W most recent positions, the query's own
included: ``p - W < j <= p``; Mistral, Phi-3), ``embedding_scale`` (token embeddings multiplied by
it, the factor rounded to the embedding dtype first; Gemma: sqrt(hidden_size)).

Inputs: token ids when ``vocab_size`` is set; otherwise vectors of width ``input_size`` (a linear
embedding, e.g. the (x, y) tokens of in-context regression) or ``hidden_size`` (already embedded,
e.g. a policy trunk). Output: a head of width ``output_size`` (default ``vocab_size``; 0 for no
head: the model returns the final hidden states).

Conditioning: ``condition_size`` C turns on adaLN-Zero (Peebles & Xie 2023, DiT §3.2): every
forward then takes ``condition`` (B, C), e.g. a diffusion timestep embedding plus an observation
embedding, and each pre-norm sublayer becomes h + gate(c) * f(N(h) * (1 + scale(c)) + shift(c))
(:mod:`transformer_math.nn.adaln`); pre-norm only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from transformer_math.functional.attention import ATTENTION_BACKENDS
from transformer_math.nn.feedforward import FEEDFORWARDS
from transformer_math.nn.norms import NORMS
from transformer_math.nn.position import POSITIONS

SUBLAYERS: dict[str, tuple[str, ...]] = {
    "full": ("attention", "ffn"),
    "attention_only": ("attention",),
    "ffn_only": ("ffn",),
}
NORM_PLACEMENTS = ("pre", "post")
INITS = ("torch", "gpt2")
MAX_SIZE = 1 << 20  # a sanity bound on every size field, checked before anything is allocated
#: A bound on :attr:`TransformerConfig.weight_count` (the weights the sizes imply, 2**40 ~ 1.1e12:
#: above every dense open model, e.g. 4.05e11 for Llama 3.1 405B), checked in ``__post_init__``
#: so that no combination of per-field-legal sizes (2**20 layers of width 2**20: ~1.4e19)
#: reaches an allocation.
MAX_PARAMETERS = 1 << 40

_SIZES = ("hidden_size", "num_layers", "num_heads")
_OPTIONAL_SIZES = ("vocab_size", "input_size", "num_kv_heads", "head_dim", "intermediate_size",
                   "condition_size")


def _positive_int(name: str, value: Any, *, allow_zero: bool = False) -> None:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_SIZE:
        raise ValueError(f"{name} must be an int in [{low}, {MAX_SIZE}], got {value!r}")


def _choice(name: str, value: Any, allowed: Any) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


@dataclass(frozen=True)
class TransformerConfig:
    """Everything that defines a :class:`transformer_math.nn.transformer.Transformer`."""

    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    vocab_size: int | None = None
    input_size: int | None = None
    output_size: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    max_seq_len: int = 512
    position: str = "learned"
    rope_theta: float = 10000.0
    rope_scaling: Mapping[str, Any] | None = None
    partial_rotary_factor: float = 1.0
    relative_window: int = 8
    norm: str = "layernorm"
    norm_eps: float | None = None
    norm_placement: str = "pre"
    final_norm: bool | None = None
    feedforward: str = "gelu"
    sublayers: str = "full"
    causal: bool = True
    sliding_window: int | None = None
    cross_attention: bool = False
    condition_size: int | None = None
    attention_bias: bool = True
    attention_out_bias: bool | None = None
    mlp_bias: bool = True
    head_bias: bool = False
    tie_embeddings: bool = False
    attention_backend: str = "sdpa"
    dropout: float = 0.0
    init: str = "torch"
    embedding_init_std: float | None = None
    position_init_std: float = 0.02
    embedding_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in _SIZES:
            _positive_int(name, getattr(self, name))
        for name in _OPTIONAL_SIZES:
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if self.output_size is not None:
            _positive_int("output_size", self.output_size, allow_zero=True)
        _positive_int("max_seq_len", self.max_seq_len)
        _positive_int("relative_window", self.relative_window)
        if self.sliding_window is not None:
            _positive_int("sliding_window", self.sliding_window)
            if not self.causal:
                raise ValueError("sliding_window needs causal attention (causal=True)")
        if self.attention_out_bias is not None and not isinstance(self.attention_out_bias, bool):
            raise ValueError(f"attention_out_bias must be a bool or None, got "
                             f"{self.attention_out_bias!r}")
        if self.vocab_size is not None and self.input_size is not None:
            raise ValueError("give vocab_size (token inputs) or input_size (vector inputs), "
                             f"not both; got {self.vocab_size} and {self.input_size}")
        _choice("position", self.position, POSITIONS.names())
        _choice("norm", self.norm, NORMS.names())
        _choice("feedforward", self.feedforward, FEEDFORWARDS.names())
        _choice("sublayers", self.sublayers, SUBLAYERS)
        _choice("norm_placement", self.norm_placement, NORM_PLACEMENTS)
        _choice("attention_backend", self.attention_backend, ATTENTION_BACKENDS.names())
        _choice("init", self.init, INITS)
        if self.head_dim is None and self.hidden_size % self.num_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must divide hidden_size "
                             f"({self.hidden_size}) unless head_dim is given")
        if self.num_heads % self.kv_heads:
            raise ValueError(f"num_kv_heads ({self.kv_heads}) must divide num_heads "
                             f"({self.num_heads})")
        if self.position == "rope" and self.dim_per_head % 2:
            raise ValueError(f"rope needs an even head_dim, got {self.dim_per_head}")
        if self.position == "sinusoidal" and self.hidden_size % 2:
            raise ValueError(f"sinusoidal positions need an even hidden_size, "
                             f"got {self.hidden_size}")
        for name in ("rope_theta", "partial_rotary_factor", "position_init_std",
                     "embedding_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.norm_eps is not None and not (math.isfinite(self.norm_eps) and self.norm_eps >= 0):
            raise ValueError(f"norm_eps must be a finite number >= 0, got {self.norm_eps!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.tie_embeddings and (self.vocab_size is None or self.head_size != self.vocab_size):
            raise ValueError("tie_embeddings needs token inputs and a head of width vocab_size")
        if self.cross_attention and "attention" not in SUBLAYERS[self.sublayers]:
            raise ValueError(f"cross_attention needs attention sublayers, got {self.sublayers!r}")
        if self.condition_size is not None and self.norm_placement != "pre":
            raise ValueError("condition_size (adaLN-Zero conditioning) modulates the pre-norm "
                             f"input of each sublayer: needs norm_placement='pre', got "
                             f"{self.norm_placement!r}")
        if self.weight_count > MAX_PARAMETERS:
            raise ValueError(
                f"the sizes imply {self.weight_count:.3e} weights (hidden_size "
                f"{self.hidden_size}, num_layers {self.num_layers}, num_heads {self.num_heads}, "
                f"head_dim {self.dim_per_head}, intermediate_size {self.ffn_size}, vocab_size "
                f"{self.vocab_size}, max_seq_len {self.max_seq_len}), more than MAX_PARAMETERS "
                f"= 2**40")

    # ---------------------------------------------------------------- derived sizes
    @property
    def weight_count(self) -> int:
        """The weight-matrix entries the sizes imply (biases, norms and buffers left out; an
        estimate of the parameter count used only for the :data:`MAX_PARAMETERS` bound):
        embedding, learned positions (``max_seq_len * d``), head, and per layer the q, k, v, out
        projections (twice with cross-attention) and the FFN (3 matrices for swiglu, else 2)."""
        d, q = self.hidden_size, self.num_heads * self.dim_per_head
        kv = self.kv_heads * self.dim_per_head
        attention = (2 * d * q + 2 * d * kv) * (2 if self.cross_attention else 1)
        ffn = int(FEEDFORWARDS.metadata(self.feedforward)["matrices"]) * d * self.ffn_size
        embed = (self.vocab_size or self.input_size or 0) * d
        positions = self.max_seq_len * d if self.position == "learned" else 0
        adaln = 0
        if self.condition_size is not None:  # 3 (shift, scale, gate) per sublayer, 2 final
            sub = len(SUBLAYERS[self.sublayers]) + int(self.cross_attention)
            adaln = self.condition_size * d * (3 * sub * self.num_layers + 2)
        return (embed + positions + self.head_size * d + adaln
                + self.num_layers * (attention + ffn))

    @property
    def out_bias(self) -> bool:
        """Whether the attention output projection has a bias (``attention_out_bias``, default
        ``attention_bias``; Qwen2 has q/k/v biases and none on the output)."""
        return self.attention_bias if self.attention_out_bias is None else self.attention_out_bias

    @property
    def kv_heads(self) -> int:
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def dim_per_head(self) -> int:
        return self.hidden_size // self.num_heads if self.head_dim is None else self.head_dim

    @property
    def ffn_size(self) -> int:
        return 4 * self.hidden_size if self.intermediate_size is None else self.intermediate_size

    @property
    def head_size(self) -> int:
        """Width of the output head (0: no head)."""
        if self.output_size is not None:
            return self.output_size
        return 0 if self.vocab_size is None else self.vocab_size

    @property
    def has_final_norm(self) -> bool:
        return self.norm_placement == "pre" if self.final_norm is None else self.final_norm

    @property
    def eps(self) -> float:
        return (float(NORMS.metadata(self.norm)["default_eps"]) if self.norm_eps is None
                else float(self.norm_eps))
