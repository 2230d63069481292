"""Exact attention by tiles with the online softmax (FlashAttention's algorithm, on any device).

Math (000 §8.3.7 "理论 D"; Dao et al. 2022, Algorithm 1; Milakov & Gimelshein 2018; FACTS.md
"Attention systems"). Split the keys into blocks K_1..K_T. For one query row keep a running max m,
a running normaliser l and an unnormalised output o. For each block S_j = q K_j^T * scale (+ mask):
    m' = max(m, rowmax(S_j)),
    l' = exp(m - m') l + rowsum(exp(S_j - m')),
    o' = exp(m - m') o + exp(S_j - m') V_j,
and at the end  output = o / l,  logsumexp = m + log l.  Every step is an exact identity, so the
result equals softmax(Q K^T * scale + M) V whatever the block sizes; only rounding differs.

Two partial states over disjoint key sets merge by the same rule (``merge_softmax_states``):
(m_a, l_a, o_a) (+) (m_b, l_b, o_b)
    = (m, e^{m_a-m} l_a + e^{m_b-m} l_b, e^{m_a-m} o_a + e^{m_b-m} o_b)
with m = max(m_a, m_b). The merge is associative and commutative (it is addition of the
exponential sums exp(m) l, written in a rescaled form that never overflows).

Memory: the largest intermediate is one (block_q, block_k) tile of logits per (batch, head); the
n x n matrix is never formed. The backward pass (``TiledAttentionFunction``) recomputes each tile
from q, k and the saved per-row logsumexp (FlashAttention-2, Dao 2023, Algorithm 2):
    P = exp(S - lse),  dV += P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dO * O)),
    dQ += dS K * scale,  dK += dS^T Q * scale,
so training also needs O(n * block) extra memory instead of O(n^2).

Masks: causal masking is bottom-right aligned like ``functional.masks.causal_mask`` (queries are
the last positions when k_len > q_len); tiles entirely in the future are skipped. An additive
``attn_mask`` broadcastable to (B, H, T, S) (e.g. a key-padding mask (B, 1, 1, S)) is read tile
by tile (it is treated as a constant: a mask
that requires grad is rejected). A fully masked query row gives a zero output and lse = -inf.

Precision (the contract of ``functional/attention.py``): the scale multiplies q before the
matmul, and float16 / bfloat16 inputs are computed in float32 (logits, running max, sums,
accumulators, backward), the output cast back, so a q k^T beyond 65504 no longer overflows to
inf / NaN where the scaled logits are representable.

The backend ``"tiled"`` is registered for ``MultiHeadAttention(backend="tiled")``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.attention import (
    LOW_PRECISION,
    AttentionOutput,
    reference_backend,
    register_attention_backend,
)

ONLINE_SOFTMAX_NO_RESCALE = declare_bug(
    "flash.online-softmax-no-rescale",
    "the online softmax adds a new tile's exp(S - m') into the running sum and output without "
    "rescaling the old ones by exp(m - m') when the running max grows",
    module=__name__,
    seen_in="the classic slip of hand-written FlashAttention / online-softmax kernels "
    "(Milakov & Gimelshein 2018 eq. 4 is the rescale that gets dropped)",
)
BACKWARD_RECOMPUTES_OUTPUT = declare_bug(
    "flash.backward-recomputes-output",
    "the backward recomputes each query tile's output O = sum_j P_j V_j from the tiles for "
    "D = rowsum(dO * O) instead of using the saved O (same gradients; the logits and P V of "
    "every tile computed once more: 4 N^2 d more FLOPs per head)",
    module=__name__,
    seen_in="FlashAttention backward ports that recompute everything from Q, K, V and lse, "
    "O included (Dao et al. 2022 Algorithm 4 reads the saved O for D)",
)
KV_COUNTED_ONCE = declare_bug(
    "flash.kv-counted-once",
    "the IO counter of the tiled loop records the K/V tiles only on the first query tile, as if "
    "K and V were loaded once (they are streamed again for every query tile)",
    module=__name__,
    seen_in="IO models that forget the outer loop (the re-reads are exactly the N^2 d^2 / M "
    "term of Dao et al. 2022 Theorem 2)",
)

DEFAULT_BLOCK_Q = 128
DEFAULT_BLOCK_K = 128


class SoftmaxState(NamedTuple):
    """Running statistics of the online softmax for a set of rows.

    ``row_max`` m (..., 1), ``row_sum`` l (..., 1) (sum of exp(s - m)), ``acc`` o (..., D_v) (sum of
    exp(s - m) v). An empty state has m = -inf, l = 0, o = 0.
    """

    row_max: Tensor
    row_sum: Tensor
    acc: Tensor


def _safe_shift(m: Tensor) -> Tensor:
    """Replace -inf maxima (rows that saw only masked keys) by 0 so exp() gives exact zeros."""
    return torch.where(torch.isneginf(m), torch.zeros_like(m), m)


def empty_softmax_state(
    rows_shape: tuple[int, ...], value_dim: int, *, like: Tensor
) -> SoftmaxState:
    """The neutral element of ``merge_softmax_states``: m = -inf, l = 0, o = 0."""
    m = torch.full((*rows_shape, 1), float("-inf"), dtype=like.dtype, device=like.device)
    l = torch.zeros((*rows_shape, 1), dtype=like.dtype, device=like.device)
    o = torch.zeros((*rows_shape, value_dim), dtype=like.dtype, device=like.device)
    return SoftmaxState(m, l, o)


def softmax_state_from_block(logits: Tensor, values: Tensor) -> SoftmaxState:
    """Partial state of one tile: logits (..., r, c) (entries may be -inf), values (..., c, D_v)."""
    m = logits.amax(dim=-1, keepdim=True)
    p = torch.exp(logits - _safe_shift(m))
    return SoftmaxState(m, p.sum(dim=-1, keepdim=True), torch.matmul(p, values))


def merge_softmax_states(a: SoftmaxState, b: SoftmaxState) -> SoftmaxState:
    """Combine the states of two disjoint key sets (the online-softmax rescaling rule)."""
    m = torch.maximum(a.row_max, b.row_max)
    shift = _safe_shift(m)
    ca = torch.exp(a.row_max - shift)  # exp(-inf) = 0 for an empty side
    cb = torch.exp(b.row_max - shift)
    if planted(ONLINE_SOFTMAX_NO_RESCALE):  # planted bug: falsifier of tiled-attention-exact
        ca = torch.ones_like(ca)  # the running state is not rescaled to the new max
    return SoftmaxState(m, ca * a.row_sum + cb * b.row_sum, ca * a.acc + cb * b.acc)


def finalize_softmax_state(state: SoftmaxState) -> tuple[Tensor, Tensor]:
    """(output, logsumexp) = (o / l, m + log l); rows with l = 0 give output 0 and lse = -inf."""
    l = state.row_sum
    empty = l == 0
    out = state.acc / torch.where(empty, torch.ones_like(l), l)
    lse = torch.where(empty, torch.full_like(l, float("-inf")), state.row_max + torch.log(l))
    return out, lse.squeeze(-1)


@dataclass
class IOCounter:
    """Elements moved between slow memory (HBM) and fast memory by the tiled loop.

    The tiled forward adds what it loads (a Q tile, a K/V tile pair, a mask tile) and stores (an
    output tile and its logsumexp) as it runs, so the counts describe the schedule actually
    executed (skipped causal tiles are not counted). ``tiles`` counts visited (query, key) tiles.
    """

    reads: int = 0
    writes: int = 0
    tiles: int = 0
    by_tensor: dict[str, int] = field(default_factory=dict)

    def read(self, what: str, elements: int) -> None:
        self.reads += elements
        self.by_tensor[what] = self.by_tensor.get(what, 0) + elements

    def write(self, what: str, elements: int) -> None:
        self.writes += elements
        self.by_tensor[what] = self.by_tensor.get(what, 0) + elements

    @property
    def total(self) -> int:
        return self.reads + self.writes


def _check_blocks(block_q: int, block_k: int) -> None:
    for name, b in (("block_q", block_q), ("block_k", block_k)):
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"{name} must be a positive int, got {b!r}")


def _check_tiled_inputs(
    q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool
) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or t.dim() != 4 or not t.is_floating_point():
            raise ValueError(
                f"{name} must be a floating tensor of shape (batch, heads, seq, dim), got "
                f"{type(t).__name__} {tuple(t.shape) if isinstance(t, Tensor) else ''}"
            )
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q (B, H, T, D), k (B, H, S, D) and v (B, H, S, D_v) must agree; got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] == 0:
        raise ValueError(
            f"head_dim must be >= 1 (the scale is 1/sqrt(head_dim)), got q {tuple(q.shape)}"
        )
    t, s = q.shape[-2], k.shape[-2]
    if is_causal and s < t:
        raise ValueError(f"is_causal needs k_len >= q_len, got q_len={t}, k_len={s}")
    if attn_mask is not None:
        if (
            attn_mask.dim() != 4
            or attn_mask.shape[-2] not in (1, t)
            or attn_mask.shape[-1] not in (1, s)
        ):
            raise ValueError(
                f"attn_mask must be additive with shape (B|1, H|1, {t}|1, {s}|1), got "
                f"{tuple(attn_mask.shape)}"
            )
        if attn_mask.dtype == torch.bool:
            raise TypeError("attn_mask of tiled_attention must be additive (float), got bool")


def _mask_tile(mask: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """The (i0:i1, j0:j1) tile of a mask that may broadcast (size 1) along queries or keys."""
    rows = slice(None) if mask.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if mask.shape[-1] == 1 else slice(j0, j1)
    return mask[:, :, rows, cols]


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16 / bfloat16 are computed (logits, softmax state, accumulators) in float32."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def _tile_logits(
    q_blk: Tensor,
    k: Tensor,
    attn_mask: Tensor | None,
    is_causal: bool,
    i0: int,
    i1: int,
    j0: int,
    j1: int,
    offset: int,
) -> Tensor:
    """Logits of tile (queries i0:i1, keys j0:j1) with the mask and causal -inf applied.

    ``q_blk`` is already multiplied by the scale (the scale is applied before the matmul, so a
    large q k^T never overflows before it is scaled down).
    """
    s = torch.matmul(q_blk, k[:, :, j0:j1].transpose(-2, -1))  # (B, H, bq, bk)
    if attn_mask is not None:
        s = s + _mask_tile(attn_mask, i0, i1, j0, j1)
    if is_causal and j1 - 1 > offset + i0:  # some key of this tile is in some query's future
        rows = torch.arange(i0, i1, device=q_blk.device).unsqueeze(1) + offset
        cols = torch.arange(j0, j1, device=q_blk.device).unsqueeze(0)
        s = s.masked_fill(cols > rows, float("-inf"))
    return s


def _key_range(is_causal: bool, i1: int, s_len: int, offset: int) -> int:
    """Keys at or beyond the returned index are in the future of every query < i1."""
    return min(s_len, offset + i1) if is_causal else s_len


def tiled_attention_forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = DEFAULT_BLOCK_Q,
    block_k: int = DEFAULT_BLOCK_K,
    io: IOCounter | None = None,
) -> tuple[Tensor, Tensor]:
    """The tiled forward pass without autograd: returns (output (B, H, T, D_v), lse (B, H, T)).

    Loop order of FlashAttention-2: for each query tile, stream the key/value tiles through the
    online softmax. ``io`` (optional) records the elements read and written per tile.
    float16 / bfloat16 inputs are computed in float32 (the scale applied to q before the
    matmul); the output has the input dtype and ``lse`` the compute dtype (float32).
    Tiles are concatenated rather than written into a preallocated tensor, so the function is
    ``torch.func.vmap``-compatible.
    """
    _check_blocks(block_q, block_k)
    _check_tiled_inputs(q, k, v, attn_mask, is_causal)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    out_dtype, work = q.dtype, _compute_dtype(q.dtype)
    qs, k, v = q.to(work) * scale, k.to(work), v.to(work)  # scale before the matmul
    attn_mask = None if attn_mask is None else attn_mask.to(work)
    b, h, t, _ = q.shape
    s_len, dv = k.shape[-2], v.shape[-1]
    offset = s_len - t
    outs: list[Tensor] = [qs.new_zeros((b, h, 0, dv))]
    lses: list[Tensor] = [qs.new_zeros((b, h, 0))]
    for i0 in range(0, t, block_q):
        i1 = min(i0 + block_q, t)
        q_blk = qs[:, :, i0:i1]
        if io is not None:
            io.read("q", q_blk.numel())
        state = empty_softmax_state((b, h, i1 - i0), dv, like=qs)
        for j0 in range(0, _key_range(is_causal, i1, s_len, offset), block_k):
            j1 = min(j0 + block_k, s_len)
            logits = _tile_logits(q_blk, k, attn_mask, is_causal, i0, i1, j0, j1, offset)
            state = merge_softmax_states(state, softmax_state_from_block(logits, v[:, :, j0:j1]))
            if io is not None:
                io.tiles += 1
                if i0 == 0 or not planted(KV_COUNTED_ONCE):  # planted bug: falsifier of flash-io
                    io.read("k", b * h * (j1 - j0) * k.shape[-1])
                    io.read("v", b * h * (j1 - j0) * dv)
                if attn_mask is not None:
                    io.read("mask", _mask_tile(attn_mask, i0, i1, j0, j1).numel())
        out_blk, lse_blk = finalize_softmax_state(state)
        outs.append(out_blk)
        lses.append(lse_blk)
        if io is not None:
            io.write("o", out_blk.numel())
            io.write("lse", lse_blk.numel())
    return torch.cat(outs, dim=2).to(out_dtype), torch.cat(lses, dim=2)


def tiled_attention_backward(
    grad_out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    *,
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float,
    block_q: int,
    block_k: int,
) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients (dq, dk, dv) by recomputing each tile from q, k and the saved logsumexp.

    Computed in the forward's compute dtype (float32 for float16 / bfloat16) and returned in the
    dtypes of q, k, v. Accumulators are out of place (``torch.func`` transforms can batch them).
    """
    t, s_len = q.shape[-2], k.shape[-2]
    offset = s_len - t
    dtypes = (q.dtype, k.dtype, v.dtype)
    work = _compute_dtype(q.dtype)
    grad_out, out, lse = grad_out.to(work), out.to(work), lse.to(work)
    q, k, v = q.to(work), k.to(work), v.to(work)
    attn_mask = None if attn_mask is None else attn_mask.to(work)
    qs = q * scale  # the logits are recomputed exactly as in the forward
    key_starts = list(range(0, s_len, block_k))
    dk_tiles = [k.new_zeros(k[:, :, j0:j0 + block_k].shape) for j0 in key_starts]
    dv_tiles = [v.new_zeros(v[:, :, j0:j0 + block_k].shape) for j0 in key_starts]
    dq_tiles: list[Tensor] = [q.new_zeros((*q.shape[:2], 0, q.shape[-1]))]
    delta = (grad_out * out).sum(dim=-1, keepdim=True)  # rowsum(dO * O), (B, H, T, 1)
    shift_all = _safe_shift(lse).unsqueeze(-1)  # (B, H, T, 1)
    for i0 in range(0, t, block_q):
        i1 = min(i0 + block_q, t)
        q_blk, qs_blk, do_blk = q[:, :, i0:i1], qs[:, :, i0:i1], grad_out[:, :, i0:i1]
        dq_blk = torch.zeros_like(q_blk)
        dead = torch.isneginf(lse[:, :, i0:i1]).unsqueeze(-1)  # fully masked rows: P = 0
        delta_blk = delta[:, :, i0:i1]
        if planted(BACKWARD_RECOMPUTES_OUTPUT):  # planted bug: falsifier of
            o_blk = torch.zeros_like(do_blk)  # architecture.flash-recompute-flops
            for j0 in range(0, _key_range(is_causal, i1, s_len, offset), block_k):
                j1 = min(j0 + block_k, s_len)
                logits = _tile_logits(qs_blk, k, attn_mask, is_causal, i0, i1, j0, j1, offset)
                p = torch.exp(logits - shift_all[:, :, i0:i1]).masked_fill(dead, 0.0)
                o_blk = o_blk + torch.matmul(p, v[:, :, j0:j1])
            delta_blk = (do_blk * o_blk).sum(dim=-1, keepdim=True)
        for jt, j0 in enumerate(range(0, _key_range(is_causal, i1, s_len, offset), block_k)):
            j1 = min(j0 + block_k, s_len)
            logits = _tile_logits(qs_blk, k, attn_mask, is_causal, i0, i1, j0, j1, offset)
            p = torch.exp(logits - shift_all[:, :, i0:i1]).masked_fill(dead, 0.0)
            dv_tiles[jt] = dv_tiles[jt] + torch.matmul(p.transpose(-2, -1), do_blk)
            dp = torch.matmul(do_blk, v[:, :, j0:j1].transpose(-2, -1))
            ds = p * (dp - delta_blk)
            dq_blk = dq_blk + torch.matmul(ds, k[:, :, j0:j1]) * scale
            dk_tiles[jt] = dk_tiles[jt] + torch.matmul(ds.transpose(-2, -1), q_blk) * scale
        dq_tiles.append(dq_blk)
    dk = torch.cat(dk_tiles, dim=2) if dk_tiles else torch.zeros_like(k)
    dv = torch.cat(dv_tiles, dim=2) if dv_tiles else torch.zeros_like(v)
    dq = torch.cat(dq_tiles, dim=2)
    return dq.to(dtypes[0]), dk.to(dtypes[1]), dv.to(dtypes[2])


class TiledAttentionFunction(torch.autograd.Function):
    """Autograd wrapper: saves q, k, v, the output and lse (all O(n)); recomputes tiles.

    Written in the ``forward`` + ``setup_context`` form with ``generate_vmap_rule``, so
    ``torch.func.grad``, ``vmap`` and ``jacrev`` accept it.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(  # type: ignore[override]
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None,
        is_causal: bool,
        scale: float,
        block_q: int,
        block_k: int,
    ) -> tuple[Tensor, Tensor]:
        return tiled_attention_forward(
            q,
            k,
            v,
            attn_mask=attn_mask,
            is_causal=is_causal,
            scale=scale,
            block_q=block_q,
            block_k=block_k,
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
        q, k, v, attn_mask, is_causal, scale, block_q, block_k = inputs
        out, lse = output
        ctx.mark_non_differentiable(lse)
        if attn_mask is None:
            ctx.save_for_backward(q, k, v, out, lse)
        else:
            ctx.save_for_backward(q, k, v, out, lse, attn_mask)
        ctx.settings = (is_causal, scale, block_q, block_k)

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, grad_out: Tensor, grad_lse: Tensor | None
    ) -> tuple[Tensor | None, ...]:
        del grad_lse  # lse is non-differentiable (an internal statistic)
        q, k, v, out, lse, *mask = ctx.saved_tensors
        is_causal, scale, block_q, block_k = ctx.settings
        dq, dk, dv = tiled_attention_backward(
            grad_out.contiguous(),
            q,
            k,
            v,
            out,
            lse,
            attn_mask=mask[0] if mask else None,
            is_causal=is_causal,
            scale=scale,
            block_q=block_q,
            block_k=block_k,
        )
        return dq, dk, dv, None, None, None, None, None


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = DEFAULT_BLOCK_Q,
    block_k: int = DEFAULT_BLOCK_K,
) -> Tensor:
    """softmax(q k^T * scale + attn_mask [+ causal]) v computed tile by tile (differentiable).

    q (B, H, T, D), k (B, H, S, D), v (B, H, S, D_v); ``attn_mask`` additive, broadcastable as
    (B|1, H|1, T, S); ``scale`` defaults to 1/sqrt(D). Gradients flow to q, k and v (the backward
    pass recomputes tiles, O(n * block) memory); the mask is a constant.
    """
    _check_blocks(block_q, block_k)
    _check_tiled_inputs(q, k, v, attn_mask, is_causal)
    if attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled():
        raise ValueError("attn_mask must not require grad in tiled_attention (treated as constant)")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        out, _ = TiledAttentionFunction.apply(
            q, k, v, attn_mask, is_causal, scale, block_q, block_k
        )
        return out
    out, _ = tiled_attention_forward(
        q,
        k,
        v,
        attn_mask=attn_mask,
        is_causal=is_causal,
        scale=scale,
        block_q=block_q,
        block_k=block_k,
    )
    return out


@register_attention_backend("tiled", exact=True, weights=True,
                            description="online-softmax tiles (FlashAttention algorithm)")
def tiled_backend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float,
    dropout_p: float,
    return_weights: bool,
) -> AttentionOutput:
    """Backend ``"tiled"``: exact attention in O(n * block) memory.

    Attention weights are an n x n matrix by definition, so ``return_weights=True`` is served by
    the reference backend (as ``sdpa`` does). Dropout on the weights is not supported (the weights
    are never formed): ``dropout_p`` must be 0.
    """
    if return_weights:
        return reference_backend(
            q,
            k,
            v,
            attn_mask=attn_mask,
            is_causal=is_causal,
            scale=scale,
            dropout_p=dropout_p,
            return_weights=True,
        )
    if dropout_p != 0.0:
        raise ValueError(
            f"dropout_p must be 0 for the tiled backend (weights are never formed), got {dropout_p}"
        )
    mask = attn_mask
    if mask is not None:
        mask = mask.to(q.dtype)
        while mask.dim() < 4:
            mask = mask.unsqueeze(0)
    out = tiled_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    return AttentionOutput(out, None)
