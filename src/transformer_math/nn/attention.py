"""Multi-head attention with grouped key/value heads, selectable backends and a KV cache.

Math (000 §8.3.1 "多头注意力"; Vaswani et al. 2017, §3.2.2):
    head_h = Attention(X W_Q^(h), X W_K^(g(h)), X W_V^(g(h))),
    MultiHead(X) = Concat(head_1, ..., head_H) W_O,
with head_dim d_k = d / H and per-head scale 1/sqrt(d_k). Grouped-query attention (Ainslie et al.
2023) shares each key/value head among H / H_kv query heads: g(h) = h // (H / H_kv); H_kv = H is
standard MHA and H_kv = 1 multi-query attention (Shazeer 2019).

Parameter count with biases: (H + 2 H_kv) d_k d + (H + 2 H_kv) d_k for the projections plus
d^2 + d for W_O; for d = 512, H = H_kv = 8 this is 4 * 512^2 + 4 * 512 = 1,050,624.

KV cache: during autoregressive decoding, keys and values of past positions are kept so that a
new token attends to them without recomputation. Because queries are the LAST positions of the
sequence, the causal mask is bottom-right aligned (``functional.masks.causal_mask``). The cache
is transactional: a call reads the extended keys/values without storing them and writes them
back only after the whole call (every check, the attention and the output projection)
succeeded, so a call that raises leaves the cache exactly as it was.

Dtypes: inputs must have the parameters' dtype, except under ``torch.autocast`` for the input's
device, where the autocast dtype (and float32) are accepted too and the output dtype follows
autocast.

Positions (000 §8.3.3): an optional ``rotary`` (RoPE) rotates q and k at their absolute positions
before the keys enter the cache, so <R_m q, R_n k> depends on n - m only and cached keys never
need recomputation; an optional ALiBi bias -m_h |i - j| is added to the logits. Query positions
default to ``past, ..., past + T - 1`` with ``past`` the cache length, so incremental decoding
uses the same positions as a full forward pass.

Hook points (``nn/hooks.py``; names relative to this module): ``hook_q`` (B, H, T, d_k) and
``hook_k``/``hook_v`` (B, H_kv, T, d_k) after RoPE and before the cache (with RoPE,
``hook_q_pre_rope``/``hook_k_pre_rope`` see them before the rotation: TransformerLens's
``hook_q``/``hook_k``, whose ``hook_rot_q``/``hook_rot_k`` are the project's ``hook_q``/
``hook_k``); ``hook_scores`` (B, H, T, S), the logits q k^T * scale with the masks added
(-inf where blocked); ``hook_pattern`` (B, H, T, S), the attention weights; ``hook_z``
(B, H, T, d_k), every head's output before W_O. Scores and pattern are materialised only while
something listens: with a listener on ``hook_scores`` the module evaluates the formula itself
(softmax backends only); with one on ``hook_pattern`` alone it asks its backend for the weights,
and a pattern replaced by the hook is multiplied with V again, so patching a pattern changes the
output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.attention import (
    ATTENTION_BACKENDS,
    attention_scores,
    repeat_kv,
    scaled_dot_product_attention,
)
from transformer_math.functional.rope import apply_rotary, can_read_values
from transformer_math.functional.softmax import stable_softmax
from transformer_math.nn.hooks import HookPoint, hooks_live
from transformer_math.nn.position import ALiBi, RotaryEmbedding

KV_HEADS_IGNORED = declare_bug(
    "attention.gqa-kv-heads-ignored", "num_kv_heads is ignored: the key/value projections are "
    "sized for all H query heads, so a grouped-query configuration builds plain multi-head "
    "attention", module=__name__, seen_in="model ports that read num_attention_heads where "
    "num_key_value_heads was meant (GQA checkpoints then fail to load or are not GQA)")
SCALE_BY_MODEL_WIDTH = declare_bug(
    "attention.scale-by-model-width", "each head scales its logits by 1/sqrt(d) (the model width) "
    "instead of 1/sqrt(d_k) = 1/sqrt(d/H)", module=__name__,
    seen_in="000 §8.3.1 头维度的方差含义 (\"缩放是 sqrt(d/H) 而非 sqrt(d)\"); scale computed "
    "from hidden_size instead of head_dim")
HEADS_MERGED_WITHOUT_TRANSPOSE = declare_bug(
    "attention.heads-merged-without-transpose", "the head outputs (B, H, T, d_k) are merged by "
    "reshaping straight to (B, T, H d_k) instead of transposing to (B, T, H, d_k) first: output "
    "row t then holds one head's outputs at several positions (identical for H = 1)",
    module=__name__, seen_in="hand-written multi-head attention that calls .reshape(B, T, d) on "
    "the (B, H, T, d_k) result; it trains, only worse, and is invisible with one head")
DROPOUT_IN_EVAL = declare_bug(
    "attention.dropout-in-eval", "the attention-weight dropout is applied whatever the mode "
    "(dropout_p = p instead of p if training else 0): eval-mode outputs are random",
    module=__name__, seen_in="functional sdpa calls passing dropout_p=self.dropout without the "
    "self.training guard that nn.Dropout has built in",
    test="tests/checkpoints/test_plumbing_bugs.py::test_dropout_is_off_in_eval_mode")
QKV_BIAS_DROPPED = declare_bug(
    "attention.qkv-bias-dropped", "the q, k and v projections ignore their biases (x W^T "
    "instead of x W^T + b): Qwen2's attention biases are loaded and never used",
    module=__name__, seen_in="fused or hand-written projections that take only the weight "
    "(F.linear(x, w)); Qwen2 is the family with q/k/v biases and no output bias",
    test="tests/checkpoints/test_plumbing_bugs.py::test_qwen2_qkv_biases_are_applied")


@dataclass
class KVCache:
    """Keys and values of past positions, shape (batch, kv_heads, past_len, head_dim).

    Growth (issue 36 item 3): in eager mode without autograd, a decoding step does not copy
    the whole cache (``torch.cat``, O(past) per layer and step: 13 of a 1.9 ms step's us per
    tensor at 640 cached keys) but writes the new keys into spare room of a buffer, of which
    ``key`` / ``value`` are views (capacity: the length plus a quarter, at least 128 more).
    A region any returned tensor covers is never written again: the buffer is written only
    at the end of the length it last returned, and only while the stored ``key`` is exactly
    that view; anything else (a failed or uncommitted call, a restored or replaced ``key``,
    a copy of the cache that appended first) moves the cache to a fresh buffer.
    """

    key: Tensor | None = None
    value: Tensor | None = None
    _room: _Room | None = field(default=None, repr=False, compare=False)

    @property
    def seq_len(self) -> int:
        return 0 if self.key is None else self.key.shape[-2]

    def extended(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """The cached keys/values followed by ``key``/``value`` (sequence axis), WITHOUT storing
        them: the first half of a transactional append (``commit`` is the second)."""
        if key.dim() != 4 or value.dim() != 4 or key.shape[:3] != value.shape[:3]:
            raise ValueError(
                f"keys and values must be (batch, kv_heads, seq, head_dim) with equal leading "
                f"dims, got {tuple(key.shape)} and {tuple(value.shape)}"
            )
        if self.key is None or self.value is None:
            return key, value
        if key.shape[:2] != self.key.shape[:2] or key.shape[-1] != self.key.shape[-1]:
            raise ValueError(
                f"new keys {tuple(key.shape)} do not match the cache {tuple(self.key.shape)}"
            )
        if value.shape[-1] != self.value.shape[-1]:
            raise ValueError(
                f"new values {tuple(value.shape)} do not match the cache "
                f"{tuple(self.value.shape)}"
            )
        if key.dtype != self.key.dtype or value.dtype != self.value.dtype:
            raise TypeError(
                f"new keys/values ({key.dtype}, {value.dtype}) must have the cache's dtype "
                f"({self.key.dtype}, {self.value.dtype})"
            )
        if not _may_grow_in_place(self.key, self.value, key, value):
            return torch.cat([self.key, key], dim=-2), torch.cat([self.value, value], dim=-2)
        past, new = self.key.shape[-2], key.shape[-2]
        room = self._room
        if room is None or not room.holds(self.key, self.value, past + new):
            room = self._room = _Room.around(self.key, self.value, past + new)
        room.key[:, :, past:past + new].copy_(key)
        room.value[:, :, past:past + new].copy_(value)
        room.written = past + new
        return room.key[:, :, :past + new], room.value[:, :, :past + new]

    def commit(self, key: Tensor, value: Tensor) -> None:
        """Store full keys/values returned by ``extended`` (after the call using them passed)."""
        self.key, self.value = key, value

    def append(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append new keys/values along the sequence axis; return the full tensors."""
        full_key, full_value = self.extended(key, value)
        self.commit(full_key, full_value)
        return full_key, full_value

    def reset(self) -> None:
        self.key = None
        self.value = None
        self._room = None


@dataclass
class _Room:
    """The buffers a :class:`KVCache` grows into: (B, H_kv, capacity, d) each, valid up to
    ``written`` (the length of the views last returned)."""

    key: Tensor
    value: Tensor
    written: int

    @classmethod
    def around(cls, key: Tensor, value: Tensor, needed: int) -> _Room:
        """Fresh buffers holding ``key`` / ``value`` (B, H_kv, S, d) with room up to
        ``needed`` and a quarter more (at least 128 positions)."""
        capacity = needed + max(128, needed // 4)
        b, h = key.shape[:2]
        kbuf = key.new_empty((b, h, capacity, key.shape[-1]))
        vbuf = value.new_empty((b, h, capacity, value.shape[-1]))
        past = key.shape[-2]
        kbuf[:, :, :past].copy_(key)
        vbuf[:, :, :past].copy_(value)
        return cls(kbuf, vbuf, past)

    def holds(self, key: Tensor, value: Tensor, needed: int) -> bool:
        """Whether ``key`` / ``value`` are this room's views of its last written length and
        ``needed`` positions fit (then appending overwrites nothing anyone was given)."""
        past = key.shape[-2]
        if self.written != past or self.key.shape[-2] < needed:
            return False
        if torch.is_inference_mode_enabled() != self.key.is_inference():
            return False  # an inference tensor is read-only outside inference mode
        return all(view.data_ptr() == buf.data_ptr() and view.stride() == buf.stride()
                   and view.shape[:2] == buf.shape[:2]
                   for view, buf in ((key, self.key), (value, self.value)))


def _may_grow_in_place(*tensors: Tensor) -> bool:
    """Eager (not traced, not under vmap), plain tensors, and no gradient to record."""
    if not can_read_values(*tensors) or any(type(t) is not Tensor for t in tensors):
        return False
    return not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention: inputs (batch, seq, embed_dim).

    Args:
        embed_dim: model width d.
        num_heads: number of query heads H; must divide ``embed_dim`` unless ``head_dim`` given.
        num_kv_heads: key/value heads H_kv (default H); must divide H. 1 gives MQA.
        bias: learnable biases on the four projections.
        out_bias: bias of the output projection alone (default ``bias``; Qwen2 has q/k/v
            biases and none on the output).
        backend: name of a registered attention backend ("sdpa", "reference", ...).
        dropout: dropout on the attention weights (training only).
        head_dim: per-head width d_k (default embed_dim // num_heads).
        kdim, vdim: widths of key/value inputs for cross-attention (default embed_dim).
        scale_fn: ``scale_fn(head_dim, k_len) -> float`` replaces the default logit scale
            1/sqrt(head_dim), e.g. a length-dependent scale gamma*log(n)/sqrt(d_k).
        rotary: a ``RotaryEmbedding`` applied to q and k (self-attention only).
        alibi: add the ALiBi bias -m_h |i - j| (Press et al. 2022) to the logits.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        bias: bool = True,
        out_bias: bool | None = None,
        backend: str = "sdpa",
        dropout: float = 0.0,
        head_dim: int | None = None,
        kdim: int | None = None,
        vdim: int | None = None,
        scale_fn: Callable[[int, int], float] | None = None,
        rotary: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be positive, got {embed_dim} and {num_heads}"
            )
        if head_dim is None:
            if embed_dim % num_heads != 0:
                raise ValueError(
                    f"num_heads ({num_heads}) must divide embed_dim ({embed_dim}), "
                    "or pass head_dim explicitly"
                )
            head_dim = embed_dim // num_heads
        if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim <= 0:
            raise ValueError(f"head_dim must be a positive int, got {head_dim!r}")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if planted(KV_HEADS_IGNORED):  # planted bug: falsifier of attention.multihead-param-count
            num_kv_heads = num_heads
        if num_kv_heads <= 0 or num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads ({num_kv_heads}) must be positive and divide num_heads ({num_heads})"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        ATTENTION_BACKENDS.get(backend)  # fail early on an unknown backend name
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.backend = backend
        self.dropout = dropout
        self.scale_fn = scale_fn
        kdim = embed_dim if kdim is None else kdim
        vdim = embed_dim if vdim is None else vdim
        self.q_proj = nn.Linear(embed_dim, num_heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(kdim, num_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(vdim, num_kv_heads * head_dim, bias=bias)
        self.out_proj = nn.Linear(num_heads * head_dim, embed_dim,
                                  bias=bias if out_bias is None else out_bias)
        if rotary is not None and rotary.head_dim != head_dim:
            raise ValueError(
                f"rotary.head_dim ({rotary.head_dim}) must equal the attention head_dim "
                f"({head_dim})"
            )
        self.rotary = rotary
        self.alibi = ALiBi(num_heads) if alibi else None
        self.hook_q_pre_rope = HookPoint()  # (B, H, T, d_k), RoPE models only
        self.hook_k_pre_rope = HookPoint()  # (B, H_kv, T, d_k), RoPE models only
        self.hook_q = HookPoint()  # (B, H, T, d_k)
        self.hook_k = HookPoint()  # (B, H_kv, T, d_k)
        self.hook_v = HookPoint()  # (B, H_kv, T, d_k)
        self.hook_scores = HookPoint()  # (B, H, T, S)
        self.hook_pattern = HookPoint()  # (B, H, T, S)
        self.hook_z = HookPoint()  # (B, H, T, d_k)

    def _split_heads(self, x: Tensor, heads: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, d_k)

    def project_qkv(
        self, query: Tensor, key: Tensor, value: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Project inputs to per-head q (B, H, T, d_k), k and v (B, H_kv, S, d_k)."""
        if planted(QKV_BIAS_DROPPED):  # planted bug: the projections' biases ignored
            f = torch.nn.functional.linear
            q, k, v = (f(query, self.q_proj.weight), f(key, self.k_proj.weight),
                       f(value, self.v_proj.weight))
        else:
            q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        return (self._split_heads(q, self.num_heads), self._split_heads(k, self.num_kv_heads),
                self._split_heads(v, self.num_kv_heads))

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
        kv_cache: KVCache | None = None,
        position_ids: Tensor | None = None,
        rotary_tables: tuple[Tensor, Tensor] | None = None,
        key_start: int = 0,
    ) -> Tensor:
        """Self-attention when ``key``/``value`` are None, cross-attention otherwise.

        With ``kv_cache`` the queries attend to the cached keys/values followed by the new ones;
        masks then refer to (new queries, all keys). The new keys/values are stored in the cache
        only when the call returns normally (a call that raises leaves the cache unchanged).
        ``position_ids`` (T,) or (B, T) are the query positions used by ``rotary``/``alibi``
        (default ``past .. past + T - 1``, ``past`` = cached length); keys of a cache are taken
        to sit at positions 0 .. S - 1.
        ``rotary_tables`` (cos, sin), each (T, rotary_dim) or (B, 1, T, rotary_dim): ``rotary``'s
        tables at ``position_ids`` (``self.rotary(position_ids)``, a head axis added to batched
        ones), looked up once per forward by a model whose layers share one rotary embedding
        (``Transformer.hidden_states``) instead of once per layer; None looks them up here.
        ``key_start`` (self-attention with a cache): the keys/values before this index (of the
        cached ones followed by the new ones) are left out of the attention, because no query
        of the call may see them (a sliding window has moved past them), and stay in the
        cache; the masks then cover the keys ``key_start .. S - 1`` only. The logit scale
        (``scale_fn``) still sees the full key length. Not with ALiBi (its bias is a function
        of the key index).
        Returns the output (B, T, d); read weights through ``hook_pattern``.
        """
        self._check_input("query", query, self.q_proj.in_features)
        key = query if key is None else key
        value = key if value is None else value
        self._check_input("key", key, self.k_proj.in_features)
        self._check_input("value", value, self.v_proj.in_features)
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError(
                f"query, key, value must share batch and key/value share seq; got "
                f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
            )
        self_attention = key is query
        q, k, v = self.project_qkv(query, key, value)
        past = 0 if kv_cache is None else kv_cache.seq_len
        if (self.rotary is not None or self.alibi is not None) and position_ids is None:
            position_ids = torch.arange(past, past + query.shape[1], device=query.device)
        live = hooks_live()  # one check per call; hook points are skipped while nothing listens
        if self.rotary is not None:
            if not self_attention:
                raise ValueError("rotary embedding is defined for self-attention (key=None) only")
            if live:
                q, k = self.hook_q_pre_rope(q), self.hook_k_pre_rope(k)
            if rotary_tables is None:
                q, k = self.rotary.rotate_pair(q, k, position_ids)
            else:
                cos, sin = rotary_tables
                layout = self.rotary.layout
                q = apply_rotary(q, cos, sin, layout=layout)
                k = apply_rotary(k, cos, sin, layout=layout)
        if live:
            q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        if kv_cache is not None:
            k, v = kv_cache.extended(k, v)  # stored by commit() below, once the call succeeded
        full_k, full_v = k, v
        if key_start:
            if self.alibi is not None or not 0 <= key_start < k.shape[-2]:
                raise ValueError(f"key_start must be in [0, {k.shape[-2]}) and needs a module "
                                 f"without ALiBi, got {key_start!r}")
            k, v = k[:, :, key_start:], v[:, :, key_start:]
        if self.alibi is not None:
            attn_mask = self._with_alibi(attn_mask, position_ids, k.shape[-2], q.dtype)
        scale = (None if self.scale_fn is None
                 else self.scale_fn(self.head_dim, full_k.shape[-2]))
        if scale is None and planted(SCALE_BY_MODEL_WIDTH):
            scale = 1.0 / math.sqrt(self.embed_dim)  # planted bug: falsifier of low-rank-bottleneck
        dropout_p = self.dropout if self.training or planted(DROPOUT_IN_EVAL) else 0.0
        if live and self.hook_scores.active():
            if not ATTENTION_BACKENDS.metadata(self.backend)["exact"]:
                raise ValueError(f"hook_scores needs a softmax backend; {self.backend!r} is not "
                                 "exact softmax attention (listen to hook_pattern instead)")
            scores = self.hook_scores(attention_scores(
                q, k, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                is_causal=is_causal, scale=scale))  # (B, H, T, S)
            weights = self.hook_pattern(stable_softmax(scores, dim=-1))
            z = self._attend(weights, v, dropout_p)
        else:
            listening = live and self.hook_pattern.active()
            out = scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                is_causal=is_causal, scale=scale, dropout_p=dropout_p,
                return_weights=listening, backend=self.backend,
            )
            z = out.output  # (B, H, T, d_k)
            if listening:
                assert out.weights is not None
                weights = self.hook_pattern(out.weights)
                if weights is not out.weights:  # the pattern was patched: recompute P V
                    z = self._attend(weights, v, dropout_p)
        if live:
            z = self.hook_z(z)
        b, _, t, _ = z.shape
        if planted(HEADS_MERGED_WITHOUT_TRANSPOSE):  # planted bug: falsifier of heads-sweep
            z = z.reshape(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        output = self.out_proj(z.transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim))
        if kv_cache is not None:
            kv_cache.commit(full_k, full_v)  # every check and the whole computation passed
        return output

    def _attend(self, weights: Tensor, v: Tensor, dropout_p: float) -> Tensor:
        """P V with key/value heads repeated for their query groups: (B, H, T, d_k)."""
        if dropout_p > 0:
            weights = torch.nn.functional.dropout(weights, p=dropout_p)
        return weights @ repeat_kv(v, self.num_heads // self.num_kv_heads)

    def _with_alibi(
        self, attn_mask: Tensor | None, position_ids: Tensor | None, k_len: int,
        dtype: torch.dtype,
    ) -> Tensor:
        """attn_mask (bool or additive) plus the ALiBi bias (1, H, T, S) as one additive mask.

        ALiBi is a function of the distance between a query and a key. With 1-D ``position_ids``
        (T,) the queries sit at those positions and the keys at 0 .. S-1. Batched position ids
        (B, T) are what an ``attention_mask`` gives (each row's count of real tokens): in a
        left-padded row they differ from the index by a constant, so the index distance used
        here is the distance between the row's real tokens, and pad keys are masked anyway.
        """
        assert self.alibi is not None and position_ids is not None
        if position_ids.dim() == 2:  # (B, T): the queries are the last T of the S keys
            position_ids = torch.arange(k_len - position_ids.shape[-1], k_len,
                                        device=position_ids.device)
        elif position_ids.dim() != 1:
            raise ValueError(
                f"alibi needs position_ids of shape (T,) or (B, T), got "
                f"{tuple(position_ids.shape)}")
        keys = torch.arange(k_len, device=position_ids.device)
        bias = self.alibi(position_ids, keys).to(dtype)  # (1, H, T, S)
        if attn_mask is None:
            return bias
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device
                                    ).masked_fill(~attn_mask, float("-inf"))
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.view(1, 1, *attn_mask.shape)
        return attn_mask.to(dtype) + bias

    def _check_input(self, name: str, x: Tensor, width: int) -> None:
        if x.dim() != 3:
            raise ValueError(f"{name} must have shape (batch, seq, {width}), got {tuple(x.shape)}")
        if x.shape[-1] != width:
            raise ValueError(f"{name} must have last dim {width}, got {tuple(x.shape)}")
        param_dtype = self.q_proj.weight.dtype
        if x.dtype == param_dtype:
            return
        device_type = x.device.type
        if torch.is_autocast_enabled(device_type) and x.dtype in (
            torch.get_autocast_dtype(device_type), torch.float32
        ):
            return  # autocast casts the projections' inputs and weights itself
        raise TypeError(
            f"{name} dtype {x.dtype} differs from the module's parameters "
            f"({param_dtype}); convert one of them (or run under torch.autocast)"
        )

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Re-draw every projection from ``generator`` (default: the global RNG).

        Same distribution as ``nn.Linear``'s default: weights and biases ~ U(-1/sqrt(fan_in),
        1/sqrt(fan_in)), so a model is reproducible from an explicit generator alone.
        """
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            bound = 1.0 / math.sqrt(proj.in_features)
            w = torch.rand(proj.weight.shape, generator=generator, dtype=proj.weight.dtype)
            proj.weight.copy_(w.mul_(2 * bound).sub_(bound))
            if proj.bias is not None:
                b = torch.rand(proj.bias.shape, generator=generator, dtype=proj.bias.dtype)
                proj.bias.copy_(b.mul_(2 * bound).sub_(bound))

    @torch.no_grad()
    def load_torch_multihead_attention(self, module: nn.MultiheadAttention) -> None:
        """Copy weights from a ``torch.nn.MultiheadAttention`` with the same shape (H_kv = H)."""
        if self.num_kv_heads != self.num_heads or module.num_heads != self.num_heads:
            raise ValueError("loading torch.nn.MultiheadAttention needs num_kv_heads == num_heads")
        if module.embed_dim != self.embed_dim or not module._qkv_same_embed_dim:
            raise ValueError("torch module must have the same embed_dim and packed q/k/v weights")
        wq, wk, wv = module.in_proj_weight.chunk(3, dim=0)
        for proj, w in ((self.q_proj, wq), (self.k_proj, wk), (self.v_proj, wv)):
            proj.weight.copy_(w)
        self.out_proj.weight.copy_(module.out_proj.weight)
        if module.in_proj_bias is not None and self.q_proj.bias is not None:
            bq, bk, bv = module.in_proj_bias.chunk(3)
            self.q_proj.bias.copy_(bq)
            self.k_proj.bias.copy_(bk)
            self.v_proj.bias.copy_(bv)
            self.out_proj.bias.copy_(module.out_proj.bias)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable scalars (as ``sum(p.numel())``)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
