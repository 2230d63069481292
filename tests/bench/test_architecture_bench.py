"""The architecture benchmarks: registered, and the LM step is a Transformer preset."""

from __future__ import annotations

from transformer_math.bench.architecture_bench import _train_step
from transformer_math.bench.harness import all_benchmarks
from transformer_math.nn.transformer import Transformer
from transformer_math.theory.parameter_count import predicted_parameter_count


def test_benchmarks_registered() -> None:
    names = {b.name for b in all_benchmarks()}
    assert {
        "architecture.tiled-vs-reference.n1k",
        "architecture.tiled-vs-sdpa.n4k",
        "architecture.lm-train-step",
    } <= names


def test_lm_train_step_models_differ_only_in_backend() -> None:
    (a, _), (b, _) = _train_step("sdpa"), _train_step("tiled")
    assert isinstance(a, Transformer) and a.config.attention_backend == "sdpa"
    assert a.config == b.config.__class__(**{**b.config.__dict__, "attention_backend": "sdpa"})
    assert a.parameter_breakdown()["total"] == predicted_parameter_count(a.config)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert p.equal(q)  # the same seed draws the same weights for both arms
