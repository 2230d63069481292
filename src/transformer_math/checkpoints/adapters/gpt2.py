"""GPT-2 family (``GPT2LMHeadModel``; Radford et al. 2019; HF ``modeling_gpt2.py``).

Preset: ``norm="layernorm"`` (eps ``layer_norm_epsilon``, 1e-5), ``feedforward="gelu_tanh"``
(``gelu_new``) or ``"gelu"``, ``position="learned"`` (``max_seq_len = n_positions``), biases
everywhere, tied head by default:

    h_0 = E[x] + P[pos];  a = h + Attn(LN_1(h));  h' = a + W_2 gelu_tanh(W_1 LN_2(a) + b_1) + b_2;
    logits = LN_f(h_L) E^T,   gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).

Name table (an optional ``transformer.`` prefix is added to legacy names). Conv1D stores W as
(in, out), the transpose of ``nn.Linear``'s (out, in); ``c_attn`` packs q, k, v along the output
axis::

    transformer.wte.weight / wpe.weight                 embed_tokens / embed_positions .weight
    transformer.h.i.ln_1.*, h.i.ln_2.*                  layers.i.attn_norm.*, layers.i.ffn_norm.*
    transformer.h.i.attn.c_attn.weight (d, 3d)          .T, split -> layers.i.attn.{q,k,v}_proj
    transformer.h.i.attn.c_attn.bias (3d,)              split -> layers.i.attn.{q,k,v}_proj.bias
    transformer.h.i.attn.c_proj.weight (d, d)           .T -> layers.i.attn.out_proj.weight
    transformer.h.i.mlp.c_fc.weight (d, 4d)             .T -> layers.i.ffn.fc_in.weight
    transformer.h.i.mlp.c_proj.weight (4d, d)           .T -> layers.i.ffn.fc_out.weight
    transformer.ln_f.*                                  final_norm.*
    lm_head.weight (untied only)                        lm_head.weight

Causal-mask buffers ``h.i.attn.bias`` / ``masked_bias`` of old checkpoints are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.checkpoints.adapters.base import Adapter, Rule, mapped, packed, transposed
from transformer_math.checkpoints.adapters.keys import bool_key, float_key, int_key
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
_SAVED_ACTIVATION = {"gelu_tanh": "gelu_new", "gelu": "gelu"}
_FIXED_OPTIONS = (("scale_attn_by_inverse_layer_idx", False), ("reorder_and_upcast_attn", False),
                  ("add_cross_attention", False), ("scale_attn_weights", True))


def preset(*, vocab_size: int, hidden_size: int, num_layers: int, num_heads: int,
           intermediate_size: int, max_seq_len: int, norm_eps: float = 1e-5,
           feedforward: str = "gelu_tanh", tie_embeddings: bool = True) -> TransformerConfig:
    """The GPT-2 architecture as a :class:`TransformerConfig`; init N(0, 0.02^2) like HF's."""
    return TransformerConfig(
        hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
        vocab_size=vocab_size, num_kv_heads=num_heads,
        intermediate_size=intermediate_size, max_seq_len=max_seq_len, position="learned",
        norm="layernorm", norm_eps=norm_eps, norm_placement="pre", feedforward=feedforward,
        attention_bias=True, mlp_bias=True, head_bias=False, tie_embeddings=tie_embeddings,
        init="gpt2", position_init_std=0.02)


def read_config(cfg: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None,
                source: str = "config.json") -> tuple[TransformerConfig, CheckpointInfo]:
    """An HF GPT-2 ``config.json`` dict -> (preset, info); every value type-checked
    (``adapters/keys.py``) with a message naming the key."""
    act = cfg.get("activation_function", "gelu_new")
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise ValueError(f"gpt2 activation_function must be one of {sorted(ACTIVATIONS)}, "
                         f"got {act!r}"[:300])
    for flag, ok in _FIXED_OPTIONS:
        if bool_key(cfg, flag, ok, source=source) != ok:
            raise ValueError(f"gpt2 option {flag}={cfg.get(flag)!r} is not supported "
                             f"(expected {ok})")
    kw = {"source": source}
    d = int_key(cfg, "n_embd", 768, **kw)
    sizes = dict(vocab_size=int_key(cfg, "vocab_size", 50257, **kw), hidden_size=d,
                 num_layers=int_key(cfg, "n_layer", 12, **kw),
                 num_heads=int_key(cfg, "n_head", 12, **kw),
                 intermediate_size=int_key(cfg, "n_inner", 4 * d, **kw),
                 max_seq_len=int_key(cfg, "n_positions", 1024, **kw))
    eps = float_key(cfg, "layer_norm_epsilon", 1e-5, **kw)
    tie = bool_key(cfg, "tie_word_embeddings", True, **kw)
    try:
        config = preset(**sizes, norm_eps=eps, feedforward=ACTIVATIONS[act], tie_embeddings=tie)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    return config, CheckpointInfo.from_config("gpt2", cfg, source)


def write_config(c: TransformerConfig, info: CheckpointInfo) -> dict[str, Any]:
    """The HF ``config.json`` dict of a GPT-2 preset (inverse of :func:`read_config`)."""
    if c.feedforward not in _SAVED_ACTIVATION:
        raise ValueError(f"gpt2 needs feedforward in {sorted(_SAVED_ACTIVATION)}, "
                         f"got {c.feedforward!r}")
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": c.vocab_size,
        "n_embd": c.hidden_size, "n_layer": c.num_layers, "n_head": c.num_heads,
        "n_inner": c.ffn_size, "n_positions": c.max_seq_len, "layer_norm_epsilon": c.eps,
        "activation_function": _SAVED_ACTIVATION[c.feedforward],
        "tie_word_embeddings": c.tie_embeddings, **info.to_config(),
    }


def rules(c: TransformerConfig) -> list[Rule]:
    """The GPT-2 name table (module docstring)."""
    t = "transformer."
    out = [mapped(t + "wte.weight", "embed_tokens.weight"),
           mapped(t + "wpe.weight", "embed_positions.weight"),
           mapped(t + "ln_f.weight", "final_norm.weight"),
           mapped(t + "ln_f.bias", "final_norm.bias")]
    for i in range(c.num_layers):
        hf, ours = f"{t}h.{i}.", f"layers.{i}."
        for theirs, mine in (("ln_1", "attn_norm"), ("ln_2", "ffn_norm")):
            out += [mapped(hf + f"{theirs}.{p}", ours + f"{mine}.{p}") for p in ("weight", "bias")]
        qkv = tuple(ours + f"attn.{n}_proj" for n in "qkv")
        out += [
            packed(hf + "attn.c_attn.weight", tuple(n + ".weight" for n in qkv), conv1d=True),
            packed(hf + "attn.c_attn.bias", tuple(n + ".bias" for n in qkv), conv1d=False),
            transposed(hf + "attn.c_proj.weight", ours + "attn.out_proj.weight"),
            mapped(hf + "attn.c_proj.bias", ours + "attn.out_proj.bias"),
            transposed(hf + "mlp.c_fc.weight", ours + "ffn.fc_in.weight"),
            mapped(hf + "mlp.c_fc.bias", ours + "ffn.fc_in.bias"),
            transposed(hf + "mlp.c_proj.weight", ours + "ffn.fc_out.weight"),
            mapped(hf + "mlp.c_proj.bias", ours + "ffn.fc_out.bias"),
        ]
    if not c.tie_embeddings:
        out.append(mapped("lm_head.weight", "lm_head.weight"))
    return out


def canonical(name: str) -> str:
    """Legacy GPT-2 files omit the ``transformer.`` prefix; the head never has it."""
    if name.startswith("transformer.") or name == "lm_head.weight":
        return name
    return "transformer." + name


GPT2 = Adapter(family="gpt2", read_config=read_config, write_config=write_config, rules=rules,
               ignored_suffixes=(".attn.bias", ".attn.masked_bias"), tied_head="lm_head.weight",
               canonical=canonical, layer_prefix="transformer.h.", layers_key="n_layer")
