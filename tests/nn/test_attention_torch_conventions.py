"""MultiHeadAttention follows torch conventions (issue 15): autocast, torch.jit.trace,
torch.export, torch.compile(fullgraph=True) with and without a KV cache. Compiles use the
"eager" dynamo backend (graph capture is what is tested; inductor would be slow on CPU)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import transformer_math.functional.linear_attention  # registers "linear"
import transformer_math.functional.tiled_attention  # noqa: F401  (registers "tiled")
from transformer_math.nn.attention import KVCache, MultiHeadAttention

BACKENDS = ("sdpa", "reference", "tiled", "linear")


def _module(backend: str = "sdpa", **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(16, 4, num_kv_heads=2, backend=backend, **kwargs).eval()


class _Causal(nn.Module):
    def __init__(self, attn: MultiHeadAttention) -> None:
        super().__init__()
        self.attn = attn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, is_causal=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_autocast_bfloat16_activation_is_accepted_and_output_follows_autocast(backend):
    """before: TypeError 'query dtype torch.bfloat16 differs from the module's parameters'."""
    m = _module(backend)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        ref = m(x, is_causal=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out_bf16_in = m(x.bfloat16(), is_causal=True)
            out_fp32_in = m(x, is_causal=True)
    for out in (out_bf16_in, out_fp32_in):
        assert out.dtype == torch.bfloat16
        torch.testing.assert_close(out.float(), ref, atol=0.05, rtol=0.05)
    with pytest.raises(TypeError, match="differs from the module's parameters"):
        m(x.bfloat16())  # outside autocast the dtype check still holds
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(TypeError):
        m(x.half())  # neither the parameters' nor the autocast dtype


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_trace_of_causal_attention(backend):
    """before (sdpa): TypeError "scaled_dot_product_attention(): argument 'is_causal' must be
    bool, not Tensor" (native_causal was a traced comparison)."""
    wrapper = _Causal(_module(backend))
    x = torch.randn(1, 4, 16)
    with torch.no_grad():
        traced = torch.jit.trace(wrapper, (x,), check_trace=False)
        torch.testing.assert_close(traced(x), wrapper(x))


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_export_with_a_dynamic_sequence_length(backend):
    """before (sdpa): TypeError "argument 'is_causal' must be bool, not SymBool". The tiled and
    linear backends loop over tiles / chunks in Python, so their sequence length specialises
    (static-shape export below)."""
    wrapper = _Causal(_module(backend))
    seq = torch.export.Dim("seq", min=2, max=64)
    program = torch.export.export(wrapper, (torch.randn(1, 4, 16),),
                                  dynamic_shapes={"x": {1: seq}})
    x = torch.randn(1, 7, 16)
    with torch.no_grad():
        torch.testing.assert_close(program.module()(x), wrapper(x))


@pytest.mark.parametrize("backend", ["tiled", "linear"])
def test_export_with_a_static_shape(backend):
    wrapper = _Causal(_module(backend))
    x = torch.randn(1, 4, 16)
    program = torch.export.export(wrapper, (x,))
    with torch.no_grad():
        torch.testing.assert_close(program.module()(x), wrapper(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_fullgraph_without_and_with_kv_cache(backend):
    """before: with a KV cache fullgraph=True failed ('Data-dependent branching': the
    fully-masked-row fix-up of sdpa was behind `if dead.any()`)."""
    torch._dynamo.reset()
    m = _module(backend)
    padding = torch.tensor([[False] * 5, [False, False, True, False, False]])
    x = torch.randn(2, 5, 16)

    def step(x, cache, mask):
        return m(x, kv_cache=cache, is_causal=True, key_padding_mask=mask)

    compiled = torch.compile(step, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, None, padding), step(x, None, padding))
        eager_cache, compiled_cache = KVCache(), KVCache()
        torch.testing.assert_close(compiled(x[:, :3], compiled_cache, padding[:, :3]),
                                   step(x[:, :3], eager_cache, padding[:, :3]))
        for i in (3, 4):
            torch.testing.assert_close(compiled(x[:, i:i + 1], compiled_cache, padding[:, :i + 1]),
                                       step(x[:, i:i + 1], eager_cache, padding[:, :i + 1]))
    assert compiled_cache.seq_len == eager_cache.seq_len == 5
    torch.testing.assert_close(compiled_cache.key, eager_cache.key)


def test_compiled_module_keeps_refusing_bad_masks():
    """Data-dependent mask checks become runtime assertions under torch.compile instead of
    being dropped: a NaN additive mask, and a non-key-padding mask for the linear backend."""
    torch._dynamo.reset()
    m = _module("sdpa")
    compiled = torch.compile(m, fullgraph=True, backend="eager")
    bad = torch.zeros(3, 3)
    bad[1, 1] = float("nan")
    with pytest.raises(RuntimeError, match="contains NaN"):
        compiled(torch.randn(1, 3, 16), attn_mask=bad)
    lin = torch.compile(_module("linear"), fullgraph=True, backend="eager")
    causal_as_mask = torch.ones(3, 3, dtype=torch.bool).tril()
    with pytest.raises(RuntimeError, match="only key-padding"):
        lin(torch.randn(1, 3, 16), attn_mask=causal_as_mask)
