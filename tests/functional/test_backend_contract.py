"""The numerical contract of ``functional/attention.py`` (module docstring), for every backend and
dtype: fully masked rows, NaN/inf propagation, float16/bfloat16 safety, empty sequences, clear
errors for degenerate head counts, and the torch.func transforms (issue 15)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from transformer_math.functional.attention import scaled_dot_product_attention as attend
from transformer_math.functional.linear_attention import linear_attention  # registers "linear"
from transformer_math.functional.tiled_attention import tiled_attention  # registers "tiled"

BACKENDS = ("sdpa", "reference", "tiled", "linear")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
LOW = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}  # unit roundoff (eps)


def _qkv(
    gen: torch.Generator, b: int, h: int, h_kv: int, t: int, s: int, d: int, dtype: torch.dtype,
    mag: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q = torch.randn(b, h, t, d, generator=gen, dtype=torch.float64) * mag
    k = torch.randn(b, h_kv, s, d, generator=gen, dtype=torch.float64) * mag
    v = torch.randn(b, h_kv, s, d, generator=gen, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), v.to(dtype)


# ---------------------------------------------------------------- 1. fully masked rows


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("backend", BACKENDS)
def test_fully_masked_rows_give_zero_output_and_zero_gradients(backend, dtype):
    gen = torch.Generator().manual_seed(0)
    q, k, v = _qkv(gen, 2, 2, 2, 3, 4, 8, dtype)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    padding = torch.tensor([[False, False, True, False], [True, True, True, True]])
    out = attend(q, k, v, key_padding_mask=padding, backend=backend).output
    assert torch.isfinite(out).all()
    assert (out[1] == 0).all()  # batch 1 sees no key
    out.float().square().sum().backward()
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), name
        assert (t.grad[1] == 0).all(), name
    assert (k.grad[0, :, 2] == 0).all() and (v.grad[0, :, 2] == 0).all()  # a padded key


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_sequences_give_empty_or_zero_outputs(backend):
    """before: reference raised a bare IndexError (amax of an empty row), causal linear
    'torch.cat(): expected a non-empty list'. Now every backend: q_len = 0 -> empty output,
    k_len = 0 -> zero rows (every row is fully masked)."""
    q = torch.randn(1, 2, 0, 8)
    for causal in (False, True):
        out = attend(q, q, q, is_causal=causal, backend=backend).output
        assert out.shape == (1, 2, 0, 8)
    k = torch.randn(1, 2, 0, 8)
    out = attend(torch.randn(1, 2, 3, 8), k, k, backend=backend).output
    assert out.shape == (1, 2, 3, 8) and (out == 0).all()
    cached = torch.randn(1, 2, 5, 8)  # causal with a cache but no new query
    assert attend(q, cached, cached, is_causal=True, backend=backend).output.shape == (1, 2, 0, 8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_kv_heads_and_zero_head_dim_are_clear_value_errors(backend):
    """before: ZeroDivisionError (integer modulo by zero; float division by zero)."""
    q = torch.randn(1, 2, 3, 8)
    with pytest.raises(ValueError, match=r"num_kv_heads >= 1"):
        attend(q, torch.randn(1, 0, 3, 8), torch.randn(1, 0, 3, 8), backend=backend)
    z = torch.randn(1, 2, 3, 0)
    with pytest.raises(ValueError, match=r"head_dim must be >= 1"):
        attend(z, z, z, backend=backend)
    with pytest.raises(ValueError, match=r"head_dim must be >= 1"):
        tiled_attention(z, z, z)
    with pytest.raises(ValueError, match=r"head_dim must be >= 1"):
        linear_attention(z, z, z)


# ---------------------------------------------------------------- 2. non-finite inputs


def _sees(t: int, s: int, causal: bool, padding: torch.Tensor) -> torch.Tensor:
    """(B, T, S) bool: query i of batch b may attend to key j."""
    allowed = torch.ones(t, s, dtype=torch.bool)
    if causal:
        allowed = allowed.tril(diagonal=s - t)
    return allowed.unsqueeze(0) & ~padding.unsqueeze(1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    backend=st.sampled_from(BACKENDS),
    dtype=st.sampled_from(DTYPES),
    where=st.sampled_from("qkv"),
    bad=st.sampled_from([math.nan, math.inf, -math.inf]),
    h_kv=st.sampled_from([1, 2]),
    t=st.integers(1, 5),
    extra=st.integers(0, 3),
    causal=st.booleans(),
    pad=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_non_finite_inputs_propagate_to_exactly_the_rows_that_see_them(
    backend, dtype, where, bad, h_kv, t, extra, causal, pad, seed
):
    """before: sdpa hid a NaN in q (a finite row) while tiled/linear propagated it, and the
    reference backend raised ValueError. Now: one rule for every backend and dtype."""
    b, h, d = 2, 4, 8
    s = t + extra
    gen = torch.Generator().manual_seed(seed)
    q, k, v = _qkv(gen, b, h, h_kv, t, s, d, dtype)
    padding = torch.zeros(b, s, dtype=torch.bool)
    if pad:
        padding[torch.randint(b, (1,), generator=gen), torch.randint(s, (1,), generator=gen)] = True
    kpm = padding if pad else None
    clean = attend(q, k, v, key_padding_mask=kpm, is_causal=causal, backend=backend).output
    bi = int(torch.randint(b, (1,), generator=gen))
    tensors = {"q": q.clone(), "k": k.clone(), "v": v.clone()}
    target = tensors[where]
    hi = int(torch.randint(target.shape[1], (1,), generator=gen))
    ri = int(torch.randint(target.shape[2], (1,), generator=gen))
    di = int(torch.randint(d, (1,), generator=gen))
    target[bi, hi, ri, di] = bad
    out = attend(tensors["q"], tensors["k"], tensors["v"], key_padding_mask=kpm,
                 is_causal=causal, backend=backend).output
    sees = _sees(t, s, causal, padding)  # (B, T, S)
    group = h // h_kv
    heads = [hi] if where == "q" else list(range(hi * group, (hi + 1) * group))
    # untouched: other batch elements, heads outside the group, (for q) other query rows
    untouched = torch.ones(b, h, t, dtype=torch.bool)
    untouched[bi, heads] = False
    if where == "q":
        untouched[bi, hi] = True
        untouched[bi, hi, ri] = False
    assert torch.isfinite(out[untouched]).all()
    torch.testing.assert_close(out[untouched], clean[untouched])
    if where == "q":
        if sees[bi, ri].any():  # a fully masked row is not specified
            assert torch.isnan(out[bi, hi, ri]).all()
        return
    rows = sees[bi, :, ri]  # (T,) rows that see the bad key
    for hh in heads:
        if where == "k":
            assert torch.isnan(out[bi, hh, rows]).all()
        else:
            assert not torch.isfinite(out[bi, hh, rows, di]).any()


# ---------------------------------------------------------------- 3. low precision


def test_tiled_float16_large_logits_finite_like_sdpa():
    """before: tiled returned NaN in float16 (q k^T = 8e4 overflowed before the scale 1/8 was
    applied) where sdpa was finite."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = _qkv(gen, 1, 2, 2, 8, 8, 64, torch.float16, mag=100.0)
    assert (q.float() @ k.float().transpose(-2, -1)).abs().max() > 65504  # unscaled overflows
    ref = attend(q.double(), k.double(), v.double(), backend="reference").output
    for backend in ("sdpa", "reference", "tiled"):
        out = attend(q, k, v, backend=backend).output
        assert out.dtype == torch.float16 and torch.isfinite(out).all(), backend
        torch.testing.assert_close(out.double(), ref, atol=4e-3 * 4, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_linear_low_precision_near_1e4_kernel_values_is_finite(dtype):
    """before: linear gave NaN in float16 (phi(q)^T phi(k) ~ 6e5 > 65504 overflowed)."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = _qkv(gen, 1, 2, 2, 8, 8, 64, dtype, mag=100.0)
    for causal in (False, True):
        ref = attend(q.float(), k.float(), v.float(), is_causal=causal, backend="linear").output
        out = attend(q, k, v, is_causal=causal, backend="linear").output
        assert out.dtype == dtype and torch.isfinite(out).all()
        torch.testing.assert_close(out.float(), ref, atol=4 * LOW[dtype] * 4, rtol=0)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    backend=st.sampled_from(BACKENDS),
    dtype=st.sampled_from([torch.float16, torch.bfloat16]),
    log_mag=st.floats(-2.0, 2.5),
    d=st.sampled_from([4, 16, 64]),
    t=st.integers(1, 9),
    extra=st.integers(0, 4),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(backend="tiled", dtype=torch.float16, log_mag=2.0, d=64, t=8, extra=0, causal=False,
         seed=0)  # before: NaN (q k^T overflowed float16 before the scale)
@example(backend="linear", dtype=torch.float16, log_mag=1.5, d=16, t=8, extra=2, causal=True,
         seed=0)  # before: NaN (the elu+1 kernel overflowed float16)
@example(backend="reference", dtype=torch.float16, log_mag=2.0, d=64, t=8, extra=0,
         causal=False, seed=0)  # before: ValueError (logits overflowed to inf)
def test_low_precision_matches_float32_where_representable(
    backend, dtype, log_mag, d, t, extra, causal, seed
):
    """float16 / bfloat16 are within a few units of roundoff (times max |v|) of the float32
    result computed from the same (rounded) inputs, wherever the scaled logits are representable
    in the low-precision dtype."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = _qkv(gen, 2, 2, 1, t, t + extra, d, dtype, mag=10.0**log_mag)
    scaled = (q.double() @ k.double().transpose(-2, -1)).abs().max() / math.sqrt(d)
    if scaled > 0.5 * torch.finfo(dtype).max:
        return  # not representable in the input dtype: outside the contract
    ref = attend(q.float(), k.float(), v.float(), is_causal=causal, backend=backend).output
    out = attend(q, k, v, is_causal=causal, backend=backend).output
    assert out.dtype == dtype and torch.isfinite(out).all()
    tol = 8 * LOW[dtype] * float(v.abs().max())
    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=0)


# ---------------------------------------------------------------- 4. torch.func


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_func_grad_matches_autograd(backend):
    """before: tiled raised RuntimeError (an autograd.Function without setup_context)."""
    gen = torch.Generator().manual_seed(1)
    q, k, v = _qkv(gen, 1, 2, 1, 5, 7, 8, torch.float64)
    mask = torch.tensor([[False, False, True, False, False, False, False]])

    def loss(q, k, v):
        return attend(q, k, v, is_causal=True, key_padding_mask=mask, backend=backend
                      ).output.square().sum()

    grads = torch.func.grad(loss, argnums=(0, 1, 2))(q, k, v)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    loss(*leaves).backward()
    for g, leaf in zip(grads, leaves, strict=True):
        torch.testing.assert_close(g, leaf.grad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_func_vmap_matches_a_loop(backend):
    """before: reference failed under vmap (data-dependent NaN check in stable_softmax) and
    tiled too (in-place writes into an unbatched output)."""
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(3, 1, 2, 4, 8, generator=gen)
    k = torch.randn(3, 1, 2, 6, 8, generator=gen)
    v = torch.randn(3, 1, 2, 6, 8, generator=gen)

    def f(q, k, v):
        return attend(q, k, v, is_causal=True, backend=backend).output

    batched = torch.func.vmap(f)(q, k, v)
    torch.testing.assert_close(batched, torch.stack([f(q[i], k[i], v[i]) for i in range(3)]))
    if backend in ("sdpa", "reference", "tiled"):  # per-example gradients through vmap(grad)
        per = torch.func.vmap(torch.func.grad(lambda q, k, v: f(q, k, v).sum()))(q, k, v)
        loop = torch.stack([
            torch.func.grad(lambda q, k, v: f(q, k, v).sum())(q[i], k[i], v[i]) for i in range(3)
        ])
        torch.testing.assert_close(per, loop)


def test_tiled_autograd_function_uses_setup_context_form():
    from transformer_math.functional.tiled_attention import TiledAttentionFunction

    assert "setup_context" in vars(TiledAttentionFunction)
    gen = torch.Generator().manual_seed(3)
    q, k, v = _qkv(gen, 1, 2, 2, 9, 9, 8, torch.float64)
    assert torch.autograd.gradcheck(
        lambda q, k, v: tiled_attention(q, k, v, is_causal=True, block_q=4, block_k=3),
        tuple(t.requires_grad_() for t in (q, k, v)),
    )
