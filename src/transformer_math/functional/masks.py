"""Attention masks: causal, key padding, boolean and additive, and their combination.

Conventions (the same as ``torch.nn.functional.scaled_dot_product_attention``):
- a boolean ``attn_mask`` is True where a query MAY attend to a key;
- a floating ``attn_mask`` is added to the scaled logits (use ``-inf`` to forbid);
- ``key_padding_mask`` of shape (batch, k_len) is True at PADDED keys, which are ignored (the
  convention of ``torch.nn.MultiheadAttention``).

Causal masking (000 §8.3.1, "因果掩码"): M_ij = 0 for j <= i and -inf for j > i, added BEFORE the
softmax, so the softmax renormalises over the allowed keys only. With a KV cache the query block
sits at the END of the key sequence: query i (0-based within the block) has absolute position
``k_len - q_len + i`` and may see keys j <= that position ("bottom-right" alignment).
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

CAUSAL_TOP_LEFT = declare_bug(
    "attention.causal-top-left", "the causal mask is top-left aligned when k_len > q_len: query i "
    "of a block of new tokens after a KV cache sees keys j <= i instead of j <= past_len + i",
    module=__name__, seen_in="torch SDPA's is_causal and FlashAttention < 2.1 are top-left "
    "aligned; chunked prefill / speculative decoding code that passes is_causal with a cache")
MASK_FINFO_MIN = declare_bug(
    "attention.mask-finfo-min", "forbidden entries of the additive mask are torch.finfo(dtype).min "
    "(like -1e9) instead of -inf, so a query with no allowed key gets uniform weights over the "
    "masked keys instead of zero weights", module=__name__,
    seen_in="Hugging Face's finfo.min attention masks and BERT's -10000 / -1e9 masks: fully "
    "masked (padding) rows attend uniformly to padding")
# helper H5 (issue 14, icl/computation): the previous-token bug
CAUSAL_NO_PREVIOUS = declare_bug(
    "attention.causal-blocks-previous", "the causal mask also blocks the key just before each "
    "query (j = i - 1): no layer can attend to the previous token, so no previous-token head "
    "and hence no induction head can form", module=__name__,
    seen_in="an off-by-one in a hand-built band / causal mask (issue 14: 'a layer 0 that "
    "cannot attend to the previous token')")
# helper h32claims (issue 32, robotics.vla-prefix-mask): the prefix-LM boundary one token late
PREFIX_LM_BOUNDARY_LATE = declare_bug(
    "attention.prefix-lm-boundary-late", "prefix_lm_mask puts the boundary between the prefix "
    "and the first suffix block one token late: the first suffix token (the VLA's state token) "
    "joins the bidirectional prefix block, so every prefix token attends to it and the prefix "
    "depends on the suffix", module=__name__,
    seen_in="pi0-style masks built from per-token 'starts a new block' flags (openpi's "
    "make_attn_mask takes a cumulative sum of them) with the flag on the wrong token; pi0.5 "
    "puts the state in the prefix on purpose, so code moved between the layouts can carry the "
    "other boundary")


def causal_mask(
    q_len: int, k_len: int | None = None, *, device: torch.device | None = None
) -> Tensor:
    """Boolean (q_len, k_len) mask, True where key j is not in the future of query i.

    Bottom-right aligned: when ``k_len > q_len`` (cached decoding) the queries are the last
    ``q_len`` positions of the sequence.
    """
    k_len = q_len if k_len is None else k_len
    if q_len < 0 or k_len < 0:
        raise ValueError(f"q_len and k_len must be >= 0, got {q_len} and {k_len}")
    if k_len < q_len:
        raise ValueError(
            f"causal mask needs k_len >= q_len (queries are the last positions), "
            f"got q_len={q_len}, k_len={k_len}"
        )
    offset = k_len - q_len
    if planted(CAUSAL_TOP_LEFT):  # planted bug: falsifier of attention.kv-cache-causal-alignment
        offset = 0
    rows = torch.arange(q_len, device=device).unsqueeze(1) + offset
    cols = torch.arange(k_len, device=device).unsqueeze(0)
    if planted(CAUSAL_NO_PREVIOUS):  # planted bug (H5): falsifier of icl.induction-circuit
        return (cols <= rows) & (cols != rows - 1)
    return cols <= rows


def single_query_sees_all_keys() -> bool:
    """Whether :func:`causal_mask` (1, k_len) allows every key (bottom-right alignment: the one
    query is the last position), so that a decoding step may skip building it. False while a
    planted causal-mask bug changes that row (the bug sites are queried, so they are reached)."""
    top_left = planted(CAUSAL_TOP_LEFT)
    no_previous = planted(CAUSAL_NO_PREVIOUS)
    return not (top_left or no_previous)


def sliding_window_mask(q_len: int, k_len: int | None = None, window: int = 1, *,
                        device: torch.device | None = None) -> Tensor:
    """Boolean (q_len, k_len) causal sliding-window mask (Beltagy et al. 2020; Mistral, Jiang
    et al. 2023): query at position p (bottom-right aligned, as :func:`causal_mask`) may attend
    to key j iff ``p - window < j <= p``, the ``window`` most recent positions, itself
    included (transformers' ``sliding_window_overlay``: ``kv_idx > q_idx - window``)."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an int >= 1, got {window!r}")
    causal = causal_mask(q_len, k_len, device=device)
    k_len = q_len if k_len is None else k_len
    rows = torch.arange(q_len, device=device).unsqueeze(1) + (k_len - q_len)
    cols = torch.arange(k_len, device=device).unsqueeze(0)
    return causal & (cols > rows - window)


def _check_mask_shape(name: str, mask: Tensor, target: tuple[int, int, int, int]) -> None:
    """A mask is (q_len, k_len) or 4-D with each leading dim 1 or equal to the target's."""
    b, h, t, s = target
    if mask.dim() == 2:
        if tuple(mask.shape) != (t, s):
            raise ValueError(
                f"{name} of rank 2 must have shape (q_len, k_len) = ({t}, {s}), "
                f"got {tuple(mask.shape)}"
            )
        return
    if mask.dim() == 4:
        mb, mh, mt, ms = mask.shape
        if (mt, ms) != (t, s) or mb not in (1, b) or mh not in (1, h):
            raise ValueError(
                f"{name} of rank 4 must have shape (batch|1, heads|1, q_len, k_len) with "
                f"batch={b}, heads={h}, q_len={t}, k_len={s}; got {tuple(mask.shape)}"
            )
        return
    raise ValueError(
        f"{name} must have rank 2 (q_len, k_len) or 4 (batch, heads, q_len, k_len), "
        f"got shape {tuple(mask.shape)}"
    )


def combine_masks(
    target: tuple[int, int, int, int],
    *,
    attn_mask: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    is_causal: bool = False,
    dtype: torch.dtype = torch.float32,
    device: torch.device | None = None,
) -> Tensor | None:
    """Merge every mask into one additive float mask of shape broadcastable to ``target``.

    ``target`` is (batch, heads, q_len, k_len). Returns None when there is nothing to mask.
    Forbidden entries are ``-inf``; a boolean mask and an additive mask may be combined with
    ``is_causal`` and a key padding mask.
    """
    b, _, t, s = target
    parts: list[Tensor] = []
    if attn_mask is not None:
        _check_mask_shape("attn_mask", attn_mask, target)
        if attn_mask.dtype == torch.bool:
            parts.append(_bool_to_additive(attn_mask, dtype))
        elif attn_mask.is_floating_point():
            bad = (torch.isnan(attn_mask) | torch.isposinf(attn_mask)).any()
            if torch.compiler.is_compiling():  # a traceable runtime assertion (RuntimeError)
                torch._assert_async(~bad, "attn_mask (additive) contains NaN or +inf")
            elif bad:
                raise ValueError("attn_mask (additive) contains NaN or +inf")
            parts.append(attn_mask.to(dtype))
        else:
            raise TypeError(f"attn_mask must be bool or floating, got dtype {attn_mask.dtype}")
        if attn_mask.dim() == 2:
            parts[-1] = parts[-1].view(1, 1, t, s)
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool:
            raise TypeError(
                f"key_padding_mask must be bool (True = padded key), got {key_padding_mask.dtype}"
            )
        if tuple(key_padding_mask.shape) != (b, s):
            raise ValueError(
                f"key_padding_mask must have shape (batch, k_len) = ({b}, {s}), "
                f"got {tuple(key_padding_mask.shape)}"
            )
        parts.append(_bool_to_additive(~key_padding_mask, dtype).view(b, 1, 1, s))
    if is_causal:
        parts.append(_bool_to_additive(causal_mask(t, s, device=device), dtype).view(1, 1, t, s))
    if not parts:
        return None
    out = parts[0].to(device) if device is not None else parts[0]
    for p in parts[1:]:
        out = out + p.to(out.device)
    return out


def _bool_to_additive(allowed: Tensor, dtype: torch.dtype) -> Tensor:
    """0 where allowed, -inf where forbidden (exp(-inf) = 0 exactly; a finite stand-in such as
    -1e9 leaves a fully masked row with uniform weights instead of none)."""
    zeros = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    if planted(MASK_FINFO_MIN):  # planted bug: falsifier of attention.fully-masked-rows
        return zeros.masked_fill(~allowed, torch.finfo(dtype).min)
    return zeros.masked_fill(~allowed, float("-inf"))


def prefix_lm_mask(prefix_len: int, suffix_blocks: tuple[int, ...] | list[int] = (), *,
                   device: torch.device | None = None) -> Tensor:
    """Boolean (T, T) prefix-LM mask with a blockwise-causal suffix, T = prefix_len + sum(blocks).

    The VLA layout (pi0, Black et al. 2024 §3 "blockwise causal attention mask"; the prefix-LM of
    Raffel et al. 2020 §3.2.1 for the first block): the positions are cut into consecutive blocks
    ``[prefix_len, *suffix_blocks]``; query i of block a may attend to key j of block b iff
    b <= a. So the prefix (images and instruction) attends bidirectionally within itself and
    never to the suffix, each suffix block (e.g. the state token, then the noisy action chunk)
    attends to the prefix, to the earlier suffix blocks and bidirectionally within itself.
    Suffix blocks of size 1 make the suffix causal. ``mask[prefix_len:]`` is the mask of the
    suffix queries against every key (the rows used with a cached prefix).
    """
    blocks = [prefix_len, *suffix_blocks]
    if planted(PREFIX_LM_BOUNDARY_LATE) and len(blocks) > 1 and blocks[1] > 0:  # planted bug
        blocks = [prefix_len + 1, blocks[1] - 1, *blocks[2:]]
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in blocks):
        raise ValueError(f"prefix_len and suffix_blocks must be ints >= 0, got {prefix_len!r} "
                         f"and {list(suffix_blocks)!r}")
    if sum(blocks) == 0:
        raise ValueError("prefix_len + sum(suffix_blocks) must be >= 1, got 0")
    block_of = torch.repeat_interleave(torch.arange(len(blocks), device=device),
                                       torch.tensor(blocks, device=device))
    return block_of.unsqueeze(0) <= block_of.unsqueeze(1)
