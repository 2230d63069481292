"""Scaled dot-product attention: the reference path, the fast path, and a registry of backends.

Math (000 §8.3.1, boxed definition; Vaswani et al. 2017, eq. 1):
    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V,
with the softmax taken row by row, so that A = softmax(...) is row-stochastic and every output
row is a convex combination of the rows of V. M is the additive mask (0 where allowed, -inf where
forbidden). Shapes follow the project convention (batch, heads, seq, head_dim):
    q: (B, H, T, D), k: (B, H_kv, S, D), v: (B, H_kv, S, D_v), H divisible by H_kv.
With H_kv < H (grouped-query attention, Ainslie et al. 2023; H_kv = 1 is multi-query attention,
Shazeer 2019) query head h reads key/value head h // (H / H_kv).

Numerical contract, the same for every registered backend (``reference``, ``sdpa``, ``tiled``,
``linear``) and every floating dtype (float64, float32, float16, bfloat16):

1. Fully masked rows. A query row that may attend to no key (every key blocked by the masks, or
   ``k_len = 0``) has zero weights, a zero output and zero gradients, never NaN (the softmax
   convention of ``softmax.py``). An empty query sequence (``q_len = 0``) gives an empty output.
2. Non-finite inputs propagate, they are neither hidden nor refused. Query row i of head h "sees"
   key j when no mask blocks (i, j). Then, with g(h) the key/value head of h:
   - a NaN or +-inf anywhere in q[b, h, i] makes the whole output row out[b, h, i] NaN;
   - a NaN or +-inf in k[b, g(h), j] makes every row out[b, h, i] that sees key j NaN;
   - a NaN or +-inf in v[b, g(h), j, d] makes out[b, h, i, d] non-finite for every row that
     sees key j;
   - every output of another batch element, of a head outside the group g(h), or (for q) of
     another query row stays finite and equal to the result without the bad entry.
   Rows that do not see the bad key but share its (batch, kv head) are not specified (the exact
   backends multiply a zero weight by NaN, 0 * NaN = NaN, where a causal tile is computed and
   skip it where it is not), nor is the output of a fully masked row next to a bad input.
   Each backend propagates by itself where it can, and ``scaled_dot_product_attention`` enforces
   the rule on the output whatever the backend did (``propagate_non_finite``); the optional
   ``weights`` are not post-processed.
   Why propagate rather than refuse: a refusal needs a data-dependent check of every input,
   which is a host synchronisation per call on an accelerator and breaks ``torch.compile
   (fullgraph=True)``, ``torch.export`` and ``torch.func.vmap``; hiding a NaN (what torch's
   fused CPU kernel does for a NaN in q) makes a broken upstream layer look healthy. NaN in, NaN
   out is torch's own convention. (Masks are different: a NaN or +inf in an additive mask is
   refused by ``combine_masks``; ``-inf`` is the blocking value.)
3. Low precision. float16 and bfloat16 inputs are computed with float32 accumulation and the
   scale applied before the exponent can overflow, so the result is finite and within rounding
   of the float32 result whenever that result (and every scaled logit) is representable in the
   input dtype; the output has the input dtype. ``sdpa`` gets this from torch's kernel; the
   ``reference``, ``tiled`` and ``linear`` backends compute internally in float32. float32 and
   float64 inputs are computed in their own dtype.

Backends are plain functions registered by name (the pattern of Hugging Face's RoPE registry):
``reference`` (explicit matrices, returns the weights), ``sdpa`` (PyTorch's fused kernel).
Other layers of the project add their own (``tiled``, ``linear``) with
:func:`register_attention_backend`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.masks import (
    causal_mask,
    combine_masks,
    single_query_sees_all_keys,
)
from transformer_math.functional.softmax import stable_softmax
from transformer_math.registry import Registry

# Planted bugs (``transformer_math.bugs``): off unless a falsifier or ``tmath mutants`` plants them.
SCALE_BY_DK = declare_bug(
    "attention.scale-by-dk", "the default logit scale is 1/d_k instead of 1/sqrt(d_k)",
    module=__name__, seen_in="000 §8.3.1 pitfall (\"换成 d_k 会过度压缩\"); a common slip when "
    "re-implementing eq. 1 of Vaswani et al. 2017")
SCALE_DROPPED = declare_bug(
    "attention.scale-dropped", "the default logit scale is 1 (the 1/sqrt(d_k) factor is forgotten)",
    module=__name__, seen_in="hand-written attention layers that compute softmax(Q K^T) V")
GQA_TILED = declare_bug(
    "attention.gqa-tiled", "repeat_kv tiles the key/value heads (query head h reads kv head "
    "h % H_kv, torch.Tensor.repeat) instead of grouping them (h // (H / H_kv), repeat_interleave)",
    module=__name__, seen_in="GQA ports that use .repeat instead of Hugging Face's repeat_kv "
    "(expand + reshape), which silently mis-pairs heads of a pretrained checkpoint")
MASK_AFTER_SOFTMAX = declare_bug(
    "attention.mask-after-softmax", "the reference backend takes the softmax of the unmasked "
    "logits and zeroes the blocked weights afterwards, without renormalising",
    module=__name__, seen_in="000 §8.3.1 因果掩码 (\"softmax 后乘 0 ... 新手最容易在这里出 bug\")")
SOFTMAX_WRONG_AXIS = declare_bug(
    "attention.softmax-wrong-axis", "the reference backend normalises the weights over the "
    "queries (dim=-2) instead of over the keys", module=__name__,
    seen_in="F.softmax(scores, dim=1) on (B, T, S) scores; Nadaraya-Watson weights normalised "
    "over the wrong index")
IMPLICIT_CAUSAL = declare_bug(
    "attention.implicit-causal", "scaled_dot_product_attention turns on the causal mask whenever "
    "no mask is given and q_len > 1, also for bidirectional (encoder) attention", module=__name__,
    seen_in="Hugging Face's sdpa path infers is_causal from 'no mask and q_len > 1'; encoder "
    "models that forgot is_causal = False became causal")
BACKEND_IGNORED = declare_bug(
    "attention.backend-ignored", "scaled_dot_product_attention ignores the requested backend and "
    "always runs the eager reference path (a silent fallback)", module=__name__,
    seen_in="engines that fall back to eager attention when a fused or linear kernel is "
    "unavailable, with only a warning")
# (H2, issue 14) planted bug: falsifier of kernel.temperature-bandwidth
# (issue 31) planted bug: falsifier of attention.not-globally-lipschitz
WEIGHTS_DETACHED = declare_bug(
    "attention.weights-detached", "the reference backend detaches the attention weights before "
    "the weighted sum, so no gradient flows through the softmax into Q and K (only through V)",
    module=__name__,
    seen_in="attention maps detached for logging or visualisation and then reused in the "
    "forward; custom attention kernels whose backward propagates through V only")
SCALE_AS_TEMPERATURE = declare_bug(
    "attention.scale-as-temperature", "an explicit logit scale (an inverse temperature beta) is "
    "used as a temperature: the logits are divided by it", module=__name__,
    seen_in="softmax_scale (multiplies, flash-attn / torch SDPA) confused with a temperature "
    "(divides) when wrapping one attention API in another")


LOW_PRECISION = (torch.float16, torch.bfloat16)
"""Dtypes that the reference, tiled and linear backends compute in float32 (contract point 3)."""


class AttentionOutput(NamedTuple):
    """What :func:`scaled_dot_product_attention` and every backend return: a named pair, not a
    tensor. ``out, weights = ...`` unpacks it; ``.output`` is the attended values."""

    output: Tensor  # (B, H, T, D_v)
    weights: Tensor | None  # (B, H, T, S) when requested and available


class AttentionBackend(Protocol):
    def __call__(
        self,
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
        """q, k, v already have equal head counts. ``attn_mask`` is additive (or None);
        ``is_causal`` (bottom-right aligned) is to be applied on top of it."""
        ...


ATTENTION_BACKENDS: Registry[AttentionBackend] = Registry("attention backend")
"""Backends by name. Metadata: ``exact`` (computes softmax attention up to rounding; False for
an approximation such as linear attention), ``weights`` (can return the (B, H, T, S) weights),
``description`` (one line for help texts)."""


def register_attention_backend(
    name: str, *, exact: bool, weights: bool = False, description: str = ""
) -> Callable[[AttentionBackend], AttentionBackend]:
    """Register ``fn`` as the attention backend ``name`` (used by ``MultiHeadAttention``)."""
    return ATTENTION_BACKENDS.register(name, exact=exact, weights=weights,
                                       description=description)


def get_attention_backend(name: str) -> AttentionBackend:
    return ATTENTION_BACKENDS.get(name)


def exact_backends() -> tuple[str, ...]:
    """Names of the registered backends that compute exact softmax attention."""
    return ATTENTION_BACKENDS.where(exact=True)


def validate_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    """Raise a clear error unless q, k, v have the (B, H, T, D) layout and agree."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(
                f"{name} must have rank 4 (batch, heads, seq, head_dim), got shape {tuple(t.shape)}"
            )
        if not t.is_floating_point():
            raise TypeError(f"{name} must be floating point, got dtype {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if q.shape[0] != k.shape[0] or k.shape[0] != v.shape[0]:
        raise ValueError(
            f"q, k, v must share the batch size, got {q.shape[0]}, {k.shape[0]}, {v.shape[0]}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share head_dim, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.shape[1:3] != v.shape[1:3]:
        raise ValueError(
            f"k and v must share (heads, seq), got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if k.shape[1] == 0:
        raise ValueError(
            f"k and v need at least one key/value head (num_kv_heads >= 1), got k {tuple(k.shape)}"
        )
    if q.shape[-1] == 0:
        raise ValueError(
            f"head_dim must be >= 1 (the scale is 1/sqrt(head_dim)), got q {tuple(q.shape)}"
        )
    if q.shape[1] % k.shape[1] != 0:
        raise ValueError(
            f"query heads ({q.shape[1]}) must be a multiple of key/value heads ({k.shape[1]})"
        )


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """(B, H_kv, S, D) -> (B, H_kv * n_rep, S, D), each kv head repeated for its query group:
    output head h is kv head h // n_rep (grouped, the layout of Hugging Face's ``repeat_kv``,
    equal to ``x.repeat_interleave(n_rep, dim=1)``)."""
    if n_rep == 1:
        return x
    if planted(GQA_TILED):  # planted bug: falsifier of attention.gqa-grouping
        return x.repeat(1, n_rep, 1, 1)
    b, h_kv, s, d = x.shape
    return x[:, :, None].expand(b, h_kv, n_rep, s, d).reshape(b, h_kv * n_rep, s, d)


def default_scale(head_dim: int) -> float:
    """The logit scale 1/sqrt(d_k) (000 §8.3.1 property (2); Vaswani et al. 2017, eq. 1): it
    makes Var(scale q.k) = 1 for q, k with independent unit-variance components."""
    if planted(SCALE_BY_DK):  # planted bug: falsifier of attention.sqrt-dk-variance
        return 1.0 / head_dim
    if planted(SCALE_DROPPED):  # planted bug: falsifier of attention.softmax-saturation
        return 1.0
    return 1.0 / math.sqrt(head_dim)


def attention_logits(q: Tensor, k: Tensor, scale: float) -> Tensor:
    """S = Q K^T * scale, shape (B, H, T, S)."""
    return torch.matmul(q, k.transpose(-2, -1)) * scale


@register_attention_backend("reference", exact=True, weights=True,
                            description="explicit softmax(QK^T/sqrt(d_k)) V; returns weights")
def reference_backend(
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
    """The formula as written: logits, additive mask, stable row softmax, weighted sum.

    float16 / bfloat16 inputs are computed in float32 and the output cast back (the module's
    low-precision contract); float32 / float64 are computed in their own dtype.
    """
    low = q.dtype in LOW_PRECISION
    if low:
        dtype = q.dtype
        q, k, v = q.float(), k.float(), v.float()
        attn_mask = None if attn_mask is None else attn_mask.float()
    logits = attention_logits(q, k, scale)  # (B, H, T, S)
    unmasked = logits
    if attn_mask is not None:
        logits = logits + attn_mask
    if is_causal:
        allowed = causal_mask(q.shape[-2], k.shape[-2], device=q.device)
        logits = logits.masked_fill(~allowed, float("-inf"))
    if planted(SOFTMAX_WRONG_AXIS):  # planted bug: falsifier of attention.row-stochastic
        weights = stable_softmax(logits, dim=-2)
    elif planted(MASK_AFTER_SOFTMAX):  # planted bug: falsifier of attention.causal-mask
        # finite biases (ALiBi) still enter before the softmax; the -inf entries only after it
        before = unmasked if attn_mask is None else unmasked + attn_mask.nan_to_num(neginf=0.0)
        weights = stable_softmax(before, dim=-1).masked_fill(torch.isneginf(logits), 0.0)
    else:
        weights = stable_softmax(logits, dim=-1)
    if planted(WEIGHTS_DETACHED):  # (issue 31) planted bug: no gradient through the softmax
        weights = weights.detach()
    attended = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    output = torch.matmul(attended, v)  # (B, H, T, D_v)
    if low:
        output, weights = output.to(dtype), weights.to(dtype)
    return AttentionOutput(output, weights if return_weights else None)


@register_attention_backend("sdpa", exact=True, weights=True,
                            description="torch SDPA (fused); weights via the reference path")
def sdpa_backend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float,
    dropout_p: float,
    return_weights: bool,
    enable_gqa: bool = False,
) -> AttentionOutput:
    """PyTorch's fused kernel. Weights are never materialised; ask ``reference`` for them.

    Differences from raw SDPA that this wrapper fixes: causal masking is bottom-right aligned
    when q_len != k_len (SDPA's ``is_causal`` is top-left aligned), and fully masked rows give
    zeros rather than NaN.

    ``enable_gqa`` (only from :func:`scaled_dot_product_attention`): k and v may have H_kv < H
    heads, query head h reading kv head h // (H / H_kv) inside torch's kernel (its own
    ``enable_gqa``), so the (B, H, S, D) copies of ``repeat_kv`` are never made (at a decoding
    step with 640 cached keys and H / H_kv = 2 the kernel then takes 46 instead of 243 us).
    Used only without a mask; a mask built here (causal with q_len != k_len) falls back to the
    repeated heads.
    """
    if return_weights or (enable_gqa and attn_mask is not None):
        n_rep = q.shape[1] // k.shape[1]
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        enable_gqa = False
    if return_weights:
        return reference_backend(
            q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
            dropout_p=dropout_p, return_weights=True,
        )
    t, s = q.shape[-2], k.shape[-2]
    mask = attn_mask
    # bool(): under torch.export / jit.trace ``t == s`` is a SymBool / traced tensor, which SDPA
    # refuses; converting specialises on it (self-attention has t and s the same symbol).
    native_causal = bool(is_causal and mask is None and t == s)
    if is_causal and mask is None and t == 1 and single_query_sees_all_keys():
        is_causal = False  # one query at the end of the keys (a decoding step) sees them all
    if is_causal and not native_causal:
        causal = torch.zeros((t, s), dtype=q.dtype, device=q.device).masked_fill(
            ~causal_mask(t, s, device=q.device), float("-inf")
        )
        mask = causal if mask is None else mask + causal
        if enable_gqa:
            n_rep = q.shape[1] // k.shape[1]
            k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
            enable_gqa = False
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=native_causal, scale=scale,
        **({"enable_gqa": True} if enable_gqa else {}),
    )
    if mask is not None:
        dead = torch.isneginf(mask).all(dim=-1, keepdim=True)  # fully masked query rows
        out = out.masked_fill(dead, 0.0)
    return AttentionOutput(out, None)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    return_weights: bool = False,
    backend: str = "reference",
) -> AttentionOutput:
    """softmax(q k^T * scale + mask) v for (B, H, T, D) tensors; see the module docstring.

    ``scale`` defaults to 1/sqrt(head_dim) (000 §8.3.1 property (2)). ``attn_mask`` (bool: True =
    allowed; float: added), ``key_padding_mask`` (B, S) bool with True = padded, and
    ``is_causal`` (bottom-right aligned) may be combined.

    Returns an :class:`AttentionOutput`, a ``NamedTuple`` ``(output, weights)``, not a tensor
    (unlike ``torch.nn.functional.scaled_dot_product_attention``, which returns the output
    alone): ``output`` is (B, H, T, D_v); ``weights`` (B, H, T, S) is None unless
    ``return_weights`` (and the backend can give them). Write ``out, _ = ...`` or ``.output``
    where torch's function would be used directly.
    """
    validate_qkv(q, k, v)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")
    if (planted(IMPLICIT_CAUSAL) and attn_mask is None and key_padding_mask is None
            and q.shape[-2] > 1 and k.shape[-2] >= q.shape[-2]):
        is_causal = True  # planted bug: falsifier of attention.permutation-equivariance
    scale, mask = _scale_and_mask(q, k, attn_mask, key_padding_mask, is_causal, scale)
    n_rep = q.shape[1] // k.shape[1]
    if planted(BACKEND_IGNORED):  # planted bug: falsifier of attention.quadratic-cost
        backend = "reference"
    # Grouped heads inside torch's kernel (no repeat_kv copies) for the sdpa backend without a
    # mask or weights; the planted GQA bug lives in repeat_kv, so it keeps the repeated path.
    grouped = (n_rep > 1 and backend == "sdpa" and mask is None and not return_weights
               and not planted(GQA_TILED))
    if grouped:
        out = sdpa_backend(
            q, k, v, attn_mask=None, is_causal=is_causal, scale=scale, dropout_p=dropout_p,
            return_weights=False, enable_gqa=True,
        )
    else:
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        fn = get_attention_backend(backend)
        out = fn(
            q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale, dropout_p=dropout_p,
            return_weights=return_weights,
        )
    # The built-in backends return a fresh output tensor, which may be fixed in place.
    inplace = backend in ("reference", "sdpa", "tiled", "linear")
    output = propagate_non_finite(out.output, q, k, v, inplace=inplace)
    return AttentionOutput(output, out.weights)


def propagate_non_finite(
    out: Tensor, q: Tensor, k: Tensor, v: Tensor, *, inplace: bool = False
) -> Tensor:
    """NaN in, NaN out (contract point 2) whatever the backend did with a non-finite input.

    Backends can hide one: torch's fused CPU kernel turns a NaN in q (and, with a single key,
    in k) into a finite row, and an infinite q can make a logit -inf, which every backend reads
    as "masked". So a row whose query has a non-finite entry, and every row of a (batch, head)
    whose keys have one, become NaN. (A non-finite value reaches the output through the
    weighted sum P V in every backend by itself: no probe of v is needed.) The probes are the
    max and min over head_dim of q and over (keys, head_dim) of k (exact: no sum that a finite
    input could overflow; not matrix products, so FLOP counts of attention are unchanged) times
    0, which is 0 for finite extremes and NaN otherwise, added to the output: one pass over
    ``out`` (in place with ``inplace`` when ``out`` needs no grad, else one copy) and no
    data-dependent branch, so compile, export and vmap trace it. A bad key infects the rows of
    its (batch, head) that do not see it, which point 2 leaves unspecified. q (B, H, T, D),
    k (B, H_kv, S, D), v (B, H_kv, S, D_v) with H_kv dividing H (a key probe of kv head g
    reaches query heads g n_rep .. (g + 1) n_rep - 1, the grouping of ``repeat_kv``; equal
    head counts are H_kv = H); finite outputs are unchanged
    (x + 0 = x). The probes are detached: their gradient is 0 times an indicator, which adds
    exact zeros to the gradients of finite inputs, so autograd need not run through them (it
    cost about 10 % of a small model's training step; issue 19's profile).

    Eager CPU shortcut (issue 36 item 5): the exact probes are four reductions and a pass over
    ``out``, about 0.8 ms of a 15 ms (4, 8, 512, 64) float32 call on one thread. When nothing
    traces the call (no compile, export, jit trace, functorch transform or dispatch mode) and
    q and k are plain CPU tensors, one sum over q plus one over k (float32 accumulation for
    float16 / bfloat16) decides first: sum(q) + sum(k) is finite only if every entry of q and k
    is finite (NaN and +-inf survive a sum; +inf + -inf = NaN), and then every probe above is 0
    and ``out + 0 = out``, so ``out`` is returned as it is. A non-finite total (a bad entry, or
    a finite sum that overflowed) runs the exact probes, so the result is the same either way.
    The branch reads one scalar on the host, free on the CPU; on an accelerator it would be a
    synchronisation per call, so other devices always take the branch-free path.
    """
    del v  # see above
    q, k = q.detach(), k.detach()
    if _untraced_cpu(q, k) and _sums_finite(q, k):
        return out
    # amax and amin separately: each is far faster than torch.aminmax on CPU
    rows = q.amax(dim=-1, keepdim=True) * 0.0 + q.amin(dim=-1, keepdim=True) * 0.0  # (B,H,T,1)
    if k.shape[-2] > 0:  # (no keys: nothing to check, and amax of nothing is an error)
        k_dims = (-2, -1)
        keys = (k.amax(dim=k_dims, keepdim=True) * 0.0
                + k.amin(dim=k_dims, keepdim=True) * 0.0)  # (B, H_kv, 1, 1)
        b, h_kv = keys.shape[:2]
        n_rep = q.shape[1] // h_kv
        if n_rep > 1:  # kv head g -> query heads of its group (grouped, as repeat_kv)
            keys = keys[:, :, None].expand(b, h_kv, n_rep, 1, 1).reshape(b, h_kv * n_rep, 1, 1)
        rows = rows + keys  # (B, H, 1, 1)
    return out.add_(rows) if inplace and not out.requires_grad else out + rows


def _untraced_cpu(*tensors: Tensor) -> bool:
    """Whether a data-dependent Python branch on these tensors is safe and free: eager mode (not
    compiling or exporting, not jit tracing, no dispatch mode such as fake tensors or make_fx),
    and plain CPU tensors (no subclass, no functorch wrapper as under vmap or grad)."""
    if (torch.compiler.is_compiling() or torch.jit.is_tracing()
            or torch._C._len_torch_dispatch_stack() > 0):
        return False
    wrapped = torch._C._functorch.is_functorch_wrapped_tensor
    return all(type(t) is Tensor and t.device.type == "cpu" and not wrapped(t) for t in tensors)


def _sums_finite(q: Tensor, k: Tensor) -> bool:
    """True only if every entry of q and k is finite (False may also mean a sum overflowed)."""
    acc = torch.float32 if q.dtype in LOW_PRECISION else None
    # Two host reads and a Python sum (no tensor add, no isfinite kernel): NaN and inf survive
    # it (inf - inf = NaN), and an overflow to inf only sends the call to the exact probes.
    return math.isfinite(q.sum(dtype=acc).item() + k.sum(dtype=acc).item())


def _scale_and_mask(
    q: Tensor, k: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
    is_causal: bool, scale: float | None,
) -> tuple[float, Tensor | None]:
    """The logit scale (default 1/sqrt(head_dim)) and one additive (B|1, H|1, T, S) mask."""
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    if planted(SCALE_AS_TEMPERATURE) and scale != 0:  # (H2) planted bug: falsifier of
        scale = 1.0 / scale  # kernel.temperature-bandwidth (explicit and default scales alike)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    b, h, t, _ = q.shape
    s = k.shape[-2]
    if is_causal and s < t:
        raise ValueError(f"is_causal needs k_len >= q_len, got q_len={t}, k_len={s}")
    mask = combine_masks(
        (b, h, t, s), attn_mask=attn_mask, key_padding_mask=key_padding_mask,
        is_causal=False, dtype=q.dtype, device=q.device,
    )
    return scale, mask


def attention_scores(
    q: Tensor,
    k: Tensor,
    *,
    attn_mask: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """The logits softmax acts on: q k^T * scale + masks, -inf where blocked; (B, H, T, S).

    Same conventions as :func:`scaled_dot_product_attention` (bottom-right causal alignment,
    key/value heads repeated for GQA); ``stable_softmax(attention_scores(...)) @ v`` is the
    reference backend's output.
    """
    validate_qkv(q, k, k)
    scale, mask = _scale_and_mask(q, k, attn_mask, key_padding_mask, is_causal, scale)
    logits = attention_logits(q, repeat_kv(k, q.shape[1] // k.shape[1]), scale)
    if mask is not None:
        logits = logits + mask
    if is_causal:
        allowed = causal_mask(q.shape[-2], k.shape[-2], device=q.device)
        logits = logits.masked_fill(~allowed, float("-inf"))
    return logits
