"""The eager CPU shortcut of ``propagate_non_finite`` (issue 36 item 5): one sum over q and one
over k decide that nothing needs propagating; otherwise (a bad entry, or a finite sum that
overflowed) the exact probes run. The result must equal the branch-free path's in every case,
and the shortcut must never be taken where a Python branch would be traced or would synchronise.
"""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.attention import (
    _untraced_cpu,
    propagate_non_finite,
    scaled_dot_product_attention,
)

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _branch_free(out: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The exact probes written out independently (contract point 2): NaN in a q row -> that
    output row NaN; NaN in k of a (batch, head) -> every row of it NaN."""
    q_bad = ~torch.isfinite(q).all(dim=-1, keepdim=True)  # (B, H, T, 1)
    k_bad = ~torch.isfinite(k).flatten(-2).all(dim=-1)[..., None, None]  # (B, H, 1, 1)
    return out.masked_fill(q_bad | k_bad, math.nan)


def _inputs(dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, 3, 5, 4, generator=g).to(dtype) for _ in range(4))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_finite_inputs_return_the_output_unchanged(dtype):
    out, q, k, v = _inputs(dtype)
    got = propagate_non_finite(out.clone(), q, k, v, inplace=True)
    assert torch.equal(got, out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("where", ["q", "k"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_bad_entry_still_takes_the_exact_probes(dtype, where, bad):
    out, q, k, v = _inputs(dtype)
    (q if where == "q" else k)[1, 2, 3, 0] = bad
    got = propagate_non_finite(out.clone(), q, k, v, inplace=True)
    assert torch.equal(got.isnan(), _branch_free(out, q, k).isnan())
    assert got.isnan().any()


def test_plus_and_minus_inf_that_cancel_in_a_row_sum_are_caught():
    """+inf + -inf = NaN: a sum never reads as finite when an entry is not."""
    out, q, k, v = _inputs(torch.float32)
    q[0, 0, 0, 0], q[0, 0, 0, 1] = math.inf, -math.inf
    got = propagate_non_finite(out.clone(), q, k, v)
    assert got[0, 0, 0].isnan().all() and torch.isfinite(got[0, 0, 1:]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_a_finite_sum_that_overflows_is_no_false_nan(dtype):
    """Entries at the dtype's largest finite value: sum(q) overflows to inf (bfloat16 sums in
    float32, whose range it shares; a float16 sum in float32 cannot overflow), the exact probes
    run and find nothing."""
    out, q, k, v = _inputs(dtype)
    q.fill_(torch.finfo(dtype).max)
    k.fill_(torch.finfo(dtype).max)
    acc = torch.float32 if dtype == torch.bfloat16 else dtype
    assert not torch.isfinite(q.sum(dtype=acc) + k.sum(dtype=acc))
    got = propagate_non_finite(out.clone(), q, k, v)
    assert torch.equal(got, out)


def test_the_shortcut_is_off_under_tracing_and_transforms():
    """vmap / grad wrap their tensors, jit.trace traces, a fake tensor mode is a dispatch mode:
    none may take the Python branch (it would be traced as a constant or fail)."""
    x = torch.ones(2, 3)
    assert _untraced_cpu(x)
    seen: list[bool] = []

    def probe(t: torch.Tensor) -> torch.Tensor:
        seen.append(_untraced_cpu(t))
        return t * 2

    torch.func.vmap(probe)(x)
    torch.func.grad(lambda t: probe(t).sum())(x)
    torch.jit.trace(probe, (x,), check_trace=False)  # (the check reruns it untraced)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        probe(mode.from_tensor(x))
    assert seen == [False, False, False, False]
    assert not _untraced_cpu(torch.ones(2, device="meta"))
    assert not _untraced_cpu(torch.nn.Parameter(x))


@pytest.mark.parametrize("causal", [False, True])
def test_traced_and_eager_agree_on_a_bad_query(causal):
    """The sdpa backend through jit.trace (branch-free path) and eagerly (shortcut then probes)
    give the same NaN rows, for a trace recorded on finite inputs."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=g) for _ in range(3))

    def f(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return scaled_dot_product_attention(q, k, v, is_causal=causal, backend="sdpa").output

    traced = torch.jit.trace(f, (q, k, v))
    q_bad = q.clone()
    q_bad[0, 1, 2, 3] = math.nan
    eager, from_trace = f(q_bad, k, v), traced(q_bad, k, v)
    assert eager[0, 1, 2].isnan().all()
    assert torch.equal(eager.isnan(), from_trace.isnan())
