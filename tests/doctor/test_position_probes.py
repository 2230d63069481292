"""The position and cache probes (doctor/position_probes.py): silent on healthy models, loud on
the planted bugs they target (issue 17)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from transformer_math import bugs
from transformer_math.doctor import CHECKS, Options, Severity, Subject, examine, load_checks
from transformer_math.doctor.engines import ProjectEngine
from transformer_math.doctor.position_probes import (
    beyond_table,
    paper_alibi_slopes,
    paper_sinusoid,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

MINE = ["cache.consistency", "rope.relativity", "position.beyond-table", "alibi.slopes",
        "position.sinusoid-table", "position.permutation"]

bugs.load_all()


def _config(kind: str = "llama", **overrides: Any) -> TransformerConfig:
    if kind == "llama":
        kw: dict[str, Any] = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                                  num_kv_heads=2, max_seq_len=64, position="rope",
                                  norm="rmsnorm", feedforward="swiglu", attention_bias=False,
                                  mlp_bias=False)
    elif kind == "gpt2":
        kw = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, max_seq_len=48,
                  position="learned")
    elif kind == "set":
        kw = dict(input_size=3, output_size=2, hidden_size=32, num_layers=2, num_heads=4,
                  causal=False, position="none", max_seq_len=64)
    else:
        raise ValueError(kind)
    kw.update(overrides)
    return TransformerConfig(**kw)


def _model(kind: str = "llama", seed: int = 0, bug: str | None = None, **overrides: Any) -> Any:
    """Built inside the plant: RoPE fills its cos/sin cache at build time."""
    if bug is None:
        return build_transformer(_config(kind, **overrides), seed).eval()
    with bugs.plant(bug):
        return build_transformer(_config(kind, **overrides), seed).eval()


def _examine(model: Any, checks: list[str], bug: str | None = None, **options: Any) -> Any:
    if bug is None:
        return examine(model, checks=checks, **options)
    with bugs.plant(bug):
        return examine(model, checks=checks, **options)


def _silent(diagnosis: Any) -> None:
    flagged = [(f.check, str(f.severity), f.summary) for f in diagnosis.flagged]
    assert not flagged, flagged
    crashed = [f.summary for f in diagnosis.findings if f.details.get("crashed")]
    assert not crashed, crashed


# ----------------------------------------------------------------------------- references
def test_registered_with_kind_and_manual_rows() -> None:
    load_checks()
    for name in MINE:
        assert CHECKS[name].kind == "dynamic"
        assert CHECKS[name].description
    assert CHECKS["position.beyond-table"].manual_rows == (2,)
    assert CHECKS["position.permutation"].manual_rows == (3,)


def test_paper_alibi_slopes() -> None:
    assert paper_alibi_slopes(8) == pytest.approx([2.0 ** -k for k in range(1, 9)])
    assert paper_alibi_slopes(4) == pytest.approx([2.0 ** -k for k in (2, 4, 6, 8)])
    # Press et al.'s get_slopes: closest power of two, then every other slope of the next one
    assert paper_alibi_slopes(3) == pytest.approx([2 ** -4, 2 ** -8, 2 ** -2])
    assert paper_alibi_slopes(6) == pytest.approx(
        [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3])
    assert paper_alibi_slopes(1) == pytest.approx([2 ** -8])


def test_paper_sinusoid() -> None:
    pe = paper_sinusoid(torch.arange(3), 4)
    assert pe[0].tolist() == pytest.approx([0.0, 1.0, 0.0, 1.0])
    assert pe[1].tolist() == pytest.approx([torch.sin(torch.tensor(1.0)).item(),
                                            torch.cos(torch.tensor(1.0)).item(),
                                            torch.sin(torch.tensor(0.01)).item(),
                                            torch.cos(torch.tensor(0.01)).item()], abs=1e-7)
    halves = paper_sinusoid(torch.arange(3), 4, layout="halves")
    assert halves[0].tolist() == pytest.approx([0.0, 0.0, 1.0, 1.0])


# --------------------------------------------------------------------------------- healthy
def test_healthy_project_models_are_silent(project_models: dict[str, Any]) -> None:
    for name, model in project_models.items():
        d = examine(model, checks=MINE)
        _silent(d)
        ran = {f.check for f in d.findings}
        assert "cache.consistency" in ran, name
        cache = [f for f in d.by_check("cache.consistency")]
        assert all(f.measured is not None and f.measured < 1e-4 for f in cache), name
        if name.startswith("llama"):
            (rel,) = d.by_check("rope.relativity")
            assert rel.severity == Severity.OK and rel.measured < 1e-4
        else:
            (rel,) = d.by_check("rope.relativity")
            assert rel.severity == Severity.INFO  # absolute code: nothing to test
            (table,) = d.by_check("position.beyond-table")
            assert table.severity == Severity.OK and "refused" in table.summary


@pytest.mark.parametrize("kind, overrides, checks", [
    ("llama", dict(position="alibi"), ["alibi.slopes", "cache.consistency"]),
    ("llama", dict(position="alibi", num_heads=3, num_kv_heads=3, hidden_size=24),
     ["alibi.slopes"]),
    ("gpt2", dict(position="sinusoidal"), ["position.sinusoid-table", "cache.consistency"]),
    ("set", {}, ["position.permutation", "position.sinusoid-table"]),
    ("llama", dict(rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 32}),
     ["cache.consistency", "rope.relativity"]),
])
def test_healthy_variants_are_silent(kind: str, overrides: dict[str, Any],
                                     checks: list[str]) -> None:
    for seed in (0, 1, 2):
        d = examine(_model(kind, seed, **overrides), checks=checks)
        _silent(d)
        assert d.findings
        assert all(f.severity == Severity.OK for f in d.findings), d.findings


def test_healthy_set_model_declared(make_project_model: Any) -> None:
    d = examine(_model("set"), checks=["position.permutation"], set_model=True)
    (f,) = d.findings
    assert f.severity == Severity.OK and f.measured < 1e-5
    token_set = _model("llama", causal=False, position="none")
    d = examine(token_set, checks=["position.permutation"])  # implicitly a set model
    assert d.findings[0].severity == Severity.OK
    d = examine(make_project_model("gpt2"), checks=["position.permutation"])
    assert "position.permutation" in d.skipped  # not declared a set model


def test_healthy_hf_checkpoints_are_silent_on_both_engines(
        hf_checkpoints: dict[str, str]) -> None:
    for name, path in hf_checkpoints.items():
        for engine in ("project", "transformers"):
            d = examine(path, checks=MINE, engine=engine)
            _silent(d)
            (cache,) = d.by_check("cache.consistency")
            assert cache.measured < 1e-4, (name, engine)
            if name.startswith("gpt2"):  # HF GPT-2's IndexError is a refusal, not a crash
                (table,) = d.by_check("position.beyond-table")
                assert table.severity == Severity.OK and "refused" in table.summary
            else:
                (rel,) = d.by_check("rope.relativity")
                assert rel.severity == Severity.OK, (name, engine, rel.summary)


# --------------------------------------------------------------------------------- planted
PLANTED = [
    ("attention.causal-top-left", "llama", {}, "cache.consistency", Severity.ERROR),
    ("attention.causal-top-left", "gpt2", {}, "cache.consistency", Severity.ERROR),
    ("position.kv-positions-restart", "llama", {}, "cache.consistency", Severity.ERROR),
    ("position.kv-positions-restart", "gpt2", {}, "cache.consistency", Severity.ERROR),
    ("position.kv-positions-restart", "llama", dict(position="alibi"), "cache.consistency",
     Severity.ERROR),
    ("rope.rotation-sign", "llama", {}, "rope.relativity", Severity.ERROR),
    ("rope.rotation-sign", "llama", dict(hidden_size=64, max_seq_len=2048),
     "rope.relativity", Severity.ERROR),
    ("alibi.odd-head-slopes", "llama", dict(position="alibi", num_heads=3, num_kv_heads=3,
                                            hidden_size=24), "alibi.slopes", Severity.ERROR),
    ("alibi.odd-head-slopes", "llama", dict(position="alibi", num_heads=6, num_kv_heads=6,
                                            hidden_size=48), "alibi.slopes", Severity.ERROR),
    ("alibi.odd-head-slopes", "llama", dict(position="alibi", num_heads=12, num_kv_heads=12,
                                            hidden_size=96), "alibi.slopes", Severity.ERROR),
    ("sinusoid.frequency-exponent", "gpt2", dict(position="sinusoidal"),
     "position.sinusoid-table", Severity.ERROR),
    ("position.learned-silent-clamp", "gpt2", {}, "position.beyond-table", Severity.WARNING),
    ("attention.implicit-causal", "set", {}, "position.permutation", Severity.ERROR),
]


@pytest.mark.parametrize("bug, kind, overrides, check, severity", PLANTED)
def test_planted_bug_is_flagged(bug: str, kind: str, overrides: dict[str, Any], check: str,
                                severity: Severity) -> None:
    model = _model(kind, 0, bug, **overrides)
    d = _examine(model, [check], bug, probe_len=16)  # the healthy side: the tests above
    worst = max(f.severity for f in d.by_check(check))
    assert worst == severity, [f.summary for f in d.findings]


def test_learned_clamp_is_behind_the_model_guard() -> None:
    """With the clamp planted the model still refuses (Transformer.hidden_states checks the
    length first); the check says the model refuses and warns about the module."""
    d = _examine(_model("gpt2"), ["position.beyond-table"], "position.learned-silent-clamp")
    by_subject = {f.subject: f for f in d.findings}
    assert by_subject[""].severity == Severity.OK and "refused" in by_subject[""].summary
    assert by_subject["embed_positions"].severity == Severity.WARNING


def test_an_engine_that_runs_past_its_table_is_an_error() -> None:
    """An engine that accepts positions past its declared table gets an ERROR (here the table
    is declared 32 rows while the model holds 48: it runs 36 tokens silently)."""
    engine = ProjectEngine(_model("gpt2"))
    engine.max_positions = 32
    subject = Subject(engine.config, Options(), engine=engine)
    found = beyond_table(subject)
    assert found[0].severity == Severity.ERROR
    assert found[0].measured > 0  # a code was added, not row 31 reused


@pytest.mark.parametrize("overrides, cause", [
    (dict(position="learned"), "position code"),
    (dict(position="sinusoidal"), "position code"),
    (dict(causal=True), "causal mask"),
])
def test_set_model_with_order_information_is_an_error(overrides: dict[str, Any],
                                                      cause: str) -> None:
    d = examine(_model("set", **overrides), checks=["position.permutation"], set_model=True)
    (f,) = d.findings
    assert f.severity == Severity.ERROR and f.measured > 1e-2
    assert cause in f.meaning


def test_set_model_with_untrained_zero_table_warns() -> None:
    model = _model("set", position="learned", position_init_std=0.0)
    d = examine(model, checks=["position.permutation"], set_model=True)
    (f,) = d.findings
    assert f.severity == Severity.WARNING and f.measured < 1e-5
    assert "position code" in f.meaning


# ------------------------------------------------------------- length-dependent RoPE caches
@pytest.mark.parametrize("scaling", [
    {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 32},
    {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0, 2.0, 4.0, 8.0],
     "factor": 4.0, "original_max_position_embeddings": 32},
])
def test_length_dependent_rope_cache_warns_past_the_original_context(
        scaling: dict[str, Any]) -> None:
    d = examine(_model("llama", max_seq_len=128, rope_scaling=scaling),
                checks=["cache.consistency"])
    by_subject = {f.subject: f for f in d.by_check("cache.consistency")}
    assert by_subject[""].severity == Severity.OK  # within L0 the cache is exact
    past = by_subject["past original context"]
    assert past.severity == Severity.WARNING and past.measured > 1e-2
    assert "re-rotate" in past.fix


def test_hf_dynamic_ntk_cache_on_both_engines(hf_factory: Any, tmp_path: Any) -> None:
    path = hf_factory.checkpoint(tmp_path / "dyn", "llama", max_position_embeddings=64,
                                 rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4,
                                                  "factor": 4.0})
    numbers = {}
    for engine in ("project", "transformers"):
        d = examine(path, checks=["cache.consistency"], engine=engine)
        past = [f for f in d.findings if f.subject == "past original context"]
        assert len(past) == 1 and past[0].severity == Severity.WARNING, d.findings
        numbers[engine] = past[0].measured
    assert numbers["project"] == pytest.approx(numbers["transformers"], rel=1e-2)


# ------------------------------------------------------------------- not caught, by design
def test_cos_sin_swap_is_a_reparametrisation_relativity_cannot_see() -> None:
    """(sin, cos) for (cos, sin) rotates each plane by pi/2 - m theta: the pi/2 cancels in q.k,
    the direction flips. The bugged model equals the healthy one with the second channel of
    every plane of W_q and W_k negated, so no single-model probe can tell them apart."""
    ids = torch.randint(0, 64, (2, 24), generator=torch.Generator().manual_seed(0))
    healthy = _model("llama")
    bugged = _model("llama", bug="rope.cos-sin-swapped")
    with torch.no_grad():
        assert float((bugged(ids) - healthy(ids)).abs().max()) > 1e-2  # not output-identical
    flipped = copy.deepcopy(healthy)
    d_k = flipped.config.dim_per_head
    with torch.no_grad():
        for layer in flipped.layers:
            for proj, heads in ((layer.attn.q_proj, 4), (layer.attn.k_proj, 2)):
                proj.weight.view(heads, d_k, -1)[:, d_k // 2:] *= -1
    with bugs.plant("rope.cos-sin-swapped"), torch.no_grad():
        assert torch.allclose(bugged(ids), flipped(ids), atol=1e-5)
    d = _examine(bugged, ["rope.relativity"], "rope.cos-sin-swapped")
    assert d.findings[0].severity == Severity.OK


def test_relativity_scope() -> None:
    d = examine(_model("llama", position="alibi"), checks=["rope.relativity"])
    assert "rope.relativity" in d.skipped
    d = examine(_model("gpt2", position="sinusoidal"), checks=["rope.relativity"])
    assert d.findings[0].severity == Severity.INFO


def test_engines_without_scores_use_log_weights() -> None:
    """An engine that gives only the softmax weights (scores None): the log weights carry the
    same logits up to a per-row constant, and both probes still separate healthy from bugged."""
    from transformer_math.doctor.engines import AttentionRecord
    from transformer_math.doctor.position_probes import alibi_slopes_check, rope_relativity

    class WeightsOnly(ProjectEngine):
        def attention(self, ids: torch.Tensor, **kw: Any) -> list[AttentionRecord]:
            return [AttentionRecord(r.weights, None) for r in super().attention(ids, **kw)]

    def judge(fn: Any, model: Any, bug: str | None = None) -> Severity:
        engine = WeightsOnly(model)
        subject = Subject(model.config, Options(), engine=engine)
        if bug is None:
            return fn(subject)[0].severity
        with bugs.plant(bug):
            return fn(subject)[0].severity

    long = dict(max_seq_len=2048)
    assert judge(rope_relativity, _model("llama", **long)) == Severity.OK
    assert judge(rope_relativity, _model("llama", bug="rope.rotation-sign", **long),
                 "rope.rotation-sign") == Severity.ERROR
    three = dict(position="alibi", num_heads=3, num_kv_heads=3, hidden_size=24)
    assert judge(alibi_slopes_check, _model("llama", **three)) == Severity.OK
    assert judge(alibi_slopes_check, _model("llama", bug="alibi.odd-head-slopes", **three),
                 "alibi.odd-head-slopes") == Severity.ERROR
