"""theory.latency: closed forms against the project's counters and io_model, argument checks."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.diagnostics import count_flops
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer
from transformer_math.theory import latency as lm
from transformer_math.theory.io_model import standard_attention_io, tiled_attention_io

HW = lm.HARDWARE["h100-sxm"]


@pytest.mark.parametrize("kw", [
    dict(hidden_size=32, num_layers=2, num_heads=4),
    dict(hidden_size=24, num_layers=2, num_heads=6, num_kv_heads=2, feedforward="swiglu",
         intermediate_size=40),
])
def test_flops_equal_counted_flops_prefill_and_decode(kw) -> None:  # type: ignore[no-untyped-def]
    torch.set_num_threads(1)
    cfg = TransformerConfig(vocab_size=11, attention_backend="reference", **kw)
    model = Transformer(cfg).eval()
    shape = lm.ModelShape.from_config(cfg)
    x = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        counted = count_flops(model, x).total
        caches = model.new_caches()
        model(x, caches=caches)
        step = count_flops(lambda: model(x[:, :1], caches=caches)).total
    assert lm.prefill_cost(shape, HW, 9, batch=2, attention="standard", logits="all").flops \
        == counted
    assert lm.decode_cost(shape, HW, 9, batch=2, attention="standard", logits="all").flops == step
    with plant(lm.ATTENTION_LINEAR_IN_KEYS):  # the falsifier changes the count
        assert lm.prefill_cost(shape, HW, 9, batch=2, attention="standard",
                               logits="all").flops != counted


def test_attention_bytes_reduce_to_io_model() -> None:
    n, d = 64, 16
    std = lm.attention_bytes_elements(n, 0, d, d, heads=1, kv_heads=1, attention="standard")
    assert std == standard_attention_io(n, d).total
    flash = lm.attention_bytes_elements(n, 0, d, d, heads=1, kv_heads=1, attention="flash",
                                        block_q=8, causal_skip=False)
    assert flash == tiled_attention_io(n, d, 8, 8).total


def test_causal_pairs_and_flash_saves_score_traffic() -> None:
    assert lm.attention_pairs(4, 0, causal_skip=True) == 10
    assert lm.attention_pairs(4, 3, causal_skip=False) == 28
    s = lm.MODEL_PRESETS["open-llama-3b"].shape
    std = lm.prefill_cost(s, HW, 2048, attention="standard")
    fl = lm.prefill_cost(s, HW, 2048, attention="flash")
    assert fl.bytes < std.bytes and fl.seconds < std.seconds


def test_presets_weights_and_roofline_bounds() -> None:
    assert 3.2e9 < lm.MODEL_PRESETS["open-llama-3b"].shape.weights() < 3.5e9
    assert 3.0e8 < lm.MODEL_PRESETS["gemma-300m"].shape.weights() < 3.3e8
    s = lm.MODEL_PRESETS["open-llama-3b"].shape
    step = lm.decode_cost(s, HW, 512)
    assert step.seconds >= 2 * s.weights() / HW.bandwidth  # weights read once, memory-bound
    assert lm.HARDWARE["jetson-agx-orin-64gb"].verified is False


def test_chunk_costs_and_bisection() -> None:
    s = lm.ModelShape(hidden=64, layers=2, heads=4)
    ar = lm.autoregressive_chunk_cost(s, HW, prefix=8, action_dims=3, chunk=2)
    assert ar.flops == lm.prefill_cost(s, HW, 8).flops + sum(
        lm.decode_cost(s, HW, 8 + i).flops for i in range(6))
    flow = lm.flow_chunk_cost(s, HW, prefix=8, chunk=5, steps=4)
    assert flow.flops == 4 * lm.forward_cost(s, HW, new=5, past=8, causal_skip=False,
                                             logits="none").flops
    budget = lm.prefill_cost(s, HW, 1000).seconds
    n = lm.max_context(s, HW, budget)
    assert n is not None and lm.prefill_cost(s, HW, n).seconds <= budget
    assert lm.prefill_cost(s, HW, n + 1).seconds > budget
    assert lm.largest_fitting(lambda x: float(x), 0.5) is None
    assert lm.max_layers(s, HW, budget, tokens=1000) == 2


@pytest.mark.parametrize("call, name", [
    (lambda: lm.ModelShape(hidden=0, layers=1, heads=1), "hidden"),
    (lambda: lm.ModelShape(hidden=8, layers=1, heads=4, kv_heads=3), "kv_heads"),
    (lambda: lm.ModelShape(hidden=8, layers=1, heads=2, mlp="relu"), "mlp"),
    (lambda: lm.forward_cost(lm.ModelShape(8, 1, 2), HW, new=0), "new"),
    (lambda: lm.forward_cost(lm.ModelShape(8, 1, 2), HW, new=1, attention="x"), "attention"),
    (lambda: lm.forward_cost(lm.ModelShape(8, 1, 2), HW, new=1, efficiency=2.0), "efficiency"),
    (lambda: lm.custom_hardware(float("nan"), 1.0), "tflops"),
    (lambda: lm.get_hardware("tpu"), "hardware"),
    (lambda: lm.max_context(lm.ModelShape(8, 1, 2), HW, -1.0), "budget_s"),
])
def test_arguments_are_validated(call, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=name):
        call()


def test_cpu_here_is_measured() -> None:
    torch.set_num_threads(1)
    hw = lm.measure_cpu_hardware(size=64, copy_mib=1, repeats=1)
    assert hw.flops > 0 and hw.bandwidth > 0 and "measured" in hw.source
