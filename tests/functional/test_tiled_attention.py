"""Tiled online-softmax attention: exact values and gradients, merge algebra, memory, backend."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.tiled_attention import (
    IOCounter,
    empty_softmax_state,
    finalize_softmax_state,
    merge_softmax_states,
    softmax_state_from_block,
    tiled_attention,
    tiled_attention_forward,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.theory.io_model import tiled_attention_io


@settings(max_examples=25, deadline=None)
@given(
    t=st.integers(1, 20),
    extra=st.integers(0, 12),
    d=st.integers(1, 9),
    dv=st.integers(1, 7),
    block_q=st.integers(1, 24),
    block_k=st.integers(1, 24),
    causal=st.booleans(),
    masked=st.sampled_from(["none", "full", "keys"]),
    seed=st.integers(0, 10_000),
)
def test_tiled_equals_reference_values_and_gradients(
    t: int,
    extra: int,
    d: int,
    dv: int,
    block_q: int,
    block_k: int,
    causal: bool,
    masked: str,
    seed: int,
) -> None:
    g = torch.Generator().manual_seed(seed)
    s = t + extra
    q = torch.randn(2, 2, t, d, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 2, s, d, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 2, s, dv, generator=g, dtype=torch.float64, requires_grad=True)
    mask = None
    if masked != "none":  # a full additive mask, or a key-padding-like (B, 1, 1, S) one
        rows = t if masked == "full" else 1
        mask = torch.randn(2, 1, rows, s, generator=g, dtype=torch.float64)
        mask = mask.masked_fill(torch.rand(2, 1, rows, s, generator=g) < 0.4, float("-inf"))
    full_mask = None if mask is None else mask.expand(2, 1, t, s)
    ref = scaled_dot_product_attention(q, k, v, attn_mask=full_mask, is_causal=causal).output
    out = tiled_attention(
        q, k, v, attn_mask=mask, is_causal=causal, block_q=block_q, block_k=block_k
    )
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    go = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    for a, b in zip(
        torch.autograd.grad(out, (q, k, v), go),
        torch.autograd.grad(ref, (q, k, v), go),
        strict=True,
    ):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_fully_masked_row_gives_zero_output_and_zero_gradient() -> None:
    q = torch.randn(1, 1, 3, 4, requires_grad=True)
    k = torch.randn(1, 1, 5, 4, requires_grad=True)
    v = torch.randn(1, 1, 5, 4, requires_grad=True)
    mask = torch.zeros(1, 1, 3, 5)
    mask[..., 1, :] = float("-inf")
    out = tiled_attention(q, k, v, attn_mask=mask, block_q=2, block_k=2)
    assert torch.equal(out[0, 0, 1], torch.zeros(4))
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.equal(q.grad[0, 0, 1], torch.zeros(4))


def test_gradcheck_float64() -> None:
    g = torch.Generator().manual_seed(0)
    args = [
        torch.randn(1, 1, n, 3, generator=g, dtype=torch.float64, requires_grad=True)
        for n in (5, 7, 7)
    ]
    assert torch.autograd.gradcheck(
        lambda q, k, v: tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=3), args
    )


def _state(logits: torch.Tensor, values: torch.Tensor):  # type: ignore[no-untyped-def]
    return softmax_state_from_block(logits, values)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    seed=st.integers(0, 10_000),
    big=st.floats(0, 200),
)
def test_online_softmax_merge_is_associative_and_equals_logsumexp(
    sizes: list[int], seed: int, big: float
) -> None:
    g = torch.Generator().manual_seed(seed)
    parts = [
        (
            torch.randn(4, n, generator=g, dtype=torch.float64) * 3 + big,
            torch.randn(n, 2, generator=g, dtype=torch.float64),
        )
        for n in sizes
    ]
    a, b, c = (_state(x, v) for x, v in parts)
    left = merge_softmax_states(merge_softmax_states(a, b), c)
    right = merge_softmax_states(a, merge_softmax_states(b, c))
    out_l, lse_l = finalize_softmax_state(left)
    out_r, lse_r = finalize_softmax_state(right)
    torch.testing.assert_close(out_l, out_r)
    torch.testing.assert_close(lse_l, lse_r)
    logits = torch.cat([x for x, _ in parts], dim=-1)
    values = torch.cat([v for _, v in parts], dim=0)
    torch.testing.assert_close(lse_l, torch.logsumexp(logits, dim=-1))
    torch.testing.assert_close(out_l, torch.softmax(logits, dim=-1) @ values)
    # the empty state is neutral
    empty = empty_softmax_state((4,), 2, like=logits)
    torch.testing.assert_close(
        finalize_softmax_state(merge_softmax_states(empty, a))[0], finalize_softmax_state(a)[0]
    )


def test_io_counter_matches_closed_form() -> None:
    q, k, v = (torch.randn(1, 1, 40, 8) for _ in range(3))
    for causal in (False, True):
        counter = IOCounter()
        tiled_attention_forward(q, k, v, is_causal=causal, block_q=7, block_k=5, io=counter)
        assert counter.total == tiled_attention_io(40, 8, 7, 5, is_causal=causal).total


def test_backend_registered_and_multihead_attention_matches_reference() -> None:
    torch.manual_seed(0)
    tiled = MultiHeadAttention(16, 4, num_kv_heads=2, backend="tiled")
    ref = MultiHeadAttention(16, 4, num_kv_heads=2, backend="reference")
    ref.load_state_dict(tiled.state_dict())
    x = torch.randn(2, 9, 16)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[1, 6:] = True
    a = tiled(x, is_causal=True, key_padding_mask=pad)
    b = ref(x, is_causal=True, key_padding_mask=pad)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"block_q": 0}, ValueError),
        ({"block_k": 2.5}, ValueError),
        ({"attn_mask": torch.ones(1, 1, 4, 4, dtype=torch.bool)}, TypeError),
        ({"attn_mask": torch.zeros(4, 4)}, ValueError),
        ({"attn_mask": torch.zeros(1, 1, 3, 4)}, ValueError),
    ],
)
def test_bad_input_rejected(kwargs: dict, error: type) -> None:
    q = torch.randn(1, 1, 4, 2)
    with pytest.raises(error):
        tiled_attention(q, q, q, **kwargs)


def test_causal_needs_enough_keys() -> None:
    q = torch.randn(1, 1, 4, 2)
    with pytest.raises(ValueError, match="k_len >= q_len"):
        tiled_attention(q, q[:, :, :2], q[:, :, :2], is_causal=True)


def test_online_softmax_without_rescale_is_wrong_and_the_correct_one_is_exact() -> None:
    """Planted bug flash.online-softmax-no-rescale (both directions)."""
    from transformer_math.bugs import plant
    from transformer_math.functional.attention import scaled_dot_product_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 20, 8, generator=g) for _ in range(3))
    ref = scaled_dot_product_attention(q, k, v).output
    good = tiled_attention(q, k, v, block_q=7, block_k=5)
    assert float((good - ref).abs().max()) < 1e-5
    with plant("flash.online-softmax-no-rescale"):
        bad = tiled_attention(q, k, v, block_q=7, block_k=5)
        one_tile = tiled_attention(q, k, v, block_q=20, block_k=20)  # one key tile: no merge
    assert float((bad - ref).abs().max()) > 1e-2
    assert float((one_tile - ref).abs().max()) < 1e-5


def test_kv_counted_once_undercounts_and_the_correct_count_is_the_closed_form() -> None:
    """Planted bug flash.kv-counted-once (both directions)."""
    from transformer_math.bugs import plant
    from transformer_math.functional.tiled_attention import IOCounter, tiled_attention_forward
    from transformer_math.theory.io_model import tiled_attention_io

    q, k, v = (torch.randn(1, 1, 32, 4) for _ in range(3))
    counts = []
    for bug in (False, True):
        io = IOCounter()
        if bug:
            with plant("flash.kv-counted-once"):
                tiled_attention_forward(q, k, v, block_q=8, block_k=4, io=io)
        else:
            tiled_attention_forward(q, k, v, block_q=8, block_k=4, io=io)
        counts.append(io.total)
    closed = tiled_attention_io(32, 4, 8, 4).total
    assert counts[0] == closed and counts[1] < closed
