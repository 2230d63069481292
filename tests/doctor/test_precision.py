"""The doctor on bfloat16 / float16 models (``doctor/precision.py``, issue 36 item 4): a
healthy low-precision model is not flagged (the two checks that compare differently rounded
computations run on a float32 copy and say so), a real bug is still flagged in low precision,
the copy is skipped with the reason when it is too big, and a checkpoint too big for float32
is loaded in its stored dtype."""

from __future__ import annotations

import pytest
import torch

from transformer_math import bugs
from transformer_math.doctor import examine, precision, zoo


def _low(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """Parameters in ``dtype``, RoPE tables left in float32: what ``from_pretrained(dtype=)``
    gives (``Module.to`` would round the tables too, which ``rope.relativity`` rightly
    flags)."""
    for p in model.parameters():
        p.data = p.data.to(dtype)
    return model


CHECKS = ["cache.consistency", "rope.relativity", "attention.recompute",
          "attention.causal-leakage", "depth.gradients"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_healthy_low_precision_model_is_not_flagged_and_says_what_it_upcast(dtype):
    model = _low(zoo.zoo_model("llama-gqa").build(), dtype)
    dg = examine(model, checks=CHECKS)
    assert dg.flagged == [], [(f.check, f.summary) for f in dg.flagged]
    info = dg.by_check("checkpoint.dtype")
    assert len(info) == 1 and info[0].details["dtype"] == str(dtype).removeprefix("torch.")
    for f in dg.findings:
        upcast = precision.needs_float32(f.check, torch.device("cpu"))
        assert ("upcast" in f.details) == upcast, f.check
        assert next(model.parameters()).dtype == dtype  # the model itself is not converted


def test_a_bug_is_still_flagged_in_bfloat16():
    with bugs.plant("attention.causal-top-left"):
        model = _low(zoo.zoo_model("llama-gqa").build(), torch.bfloat16)
        dg = examine(model, checks=["cache.consistency"])
    assert [f.check for f in dg.flagged] == ["cache.consistency"]


def test_upcast_too_big_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(precision, "UPCAST_LIMIT_BYTES", 1000)
    model = _low(zoo.zoo_model("llama-gqa").build(), torch.bfloat16)
    dg = examine(model, checks=["cache.consistency"])
    assert dg.skipped["cache.consistency"].startswith("needs float32")


def test_a_backward_check_on_a_cpu_model_runs_in_float32_or_says_why_not(monkeypatch):
    """depth.gradients differentiates through the model: on a CPU bfloat16 model it runs on
    the float32 copy (bf16 matmul backward has no fast CPU kernel), and a copy too big is a
    skip naming that reason; on CUDA it would stay in the model's dtype."""
    assert precision.needs_float32("depth.gradients", torch.device("cpu"))
    assert not precision.needs_float32("depth.gradients", torch.device("cuda"))
    assert precision.needs_float32("cache.consistency", torch.device("cuda"))
    model = _low(zoo.zoo_model("llama-gqa").build(), torch.bfloat16)
    found = examine(model, checks=["depth.gradients"]).by_check("depth.gradients")
    assert found and all(f.details.get("upcast") == "bfloat16 -> float32" for f in found)
    monkeypatch.setattr(precision, "UPCAST_LIMIT_BYTES", 1000)
    dg = examine(model, checks=["depth.gradients"])
    assert "differentiates through the model" in dg.skipped["depth.gradients"]


def test_the_float32_copy_is_converted_directly_and_keeps_ties():
    model = _low(zoo.zoo_model("llama-gqa").build(), torch.bfloat16)
    model.lm_head.weight = model.embed_tokens.weight
    copy32 = precision.upcast(model)
    assert {p.dtype for p in copy32.parameters()} == {torch.float32}
    assert copy32.lm_head.weight is copy32.embed_tokens.weight
    assert next(model.parameters()).dtype == torch.bfloat16
    for a, b in zip(model.parameters(), copy32.parameters(), strict=True):
        assert torch.equal(a.float(), b)


def test_a_copy_beyond_the_limit_is_made_only_within_the_memory_goal(monkeypatch):
    """Past UPCAST_LIMIT_BYTES the copy must keep the resident set within the model's size +
    the limit (the doctor's peak RSS goal)."""
    limit = precision.UPCAST_LIMIT_BYTES
    assert precision.upcast_fits(limit, None)
    monkeypatch.setattr(precision, "resident_bytes", lambda: 4 << 30)
    assert precision.upcast_fits(7 << 30, 16 << 30)  # 4 + 7 <= 16 + 2
    assert not precision.upcast_fits(15 << 30, 16 << 30)  # 4 + 15 > 18
    assert not precision.upcast_fits(3 << 30, None)  # no model size known: the plain limit
    monkeypatch.setattr(precision, "resident_bytes", lambda: None)
    assert not precision.upcast_fits(3 << 30, 16 << 30)


def test_load_dtype_keeps_float32_unless_it_does_not_fit():
    shapes = {"a": (1000, 1000)}  # 4 MB in float32
    assert precision.load_dtype(shapes, memory=10 << 20) == "float32"
    assert precision.load_dtype(shapes, memory=6 << 20) == "auto"
