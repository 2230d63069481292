"""The doctor under a budget (``doctor/budget.py``, issue 36 item 2): the planner's order, the
layer sampling (shared weights, layer numbers of the loaded model, what was sampled stated),
budget skips reported, and the guarantee that sampling cannot hide a bug present in every
layer: each zoo bug below, planted, is newly flagged by its check on a sampled run of the
6-layer zoo model (layers 0, 2, 5 of 6, probes of 32 tokens) as it is on the full run.
"""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.cli import app
from transformer_math.doctor import budget as budgets
from transformer_math.doctor import examine, select_checks, zoo
from transformer_math.doctor.findings import Finding, Severity


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("5m", 300.0),
                                                ("1.5h", 5400.0), (" 2 min ", 120.0), (7, 7.0)])
def test_parse_budget(text, seconds):
    assert budgets.parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "-1", "0", "1e3", "m", True])
def test_parse_budget_refuses_and_names_the_option(text):
    with pytest.raises(ValueError, match="--budget"):
        budgets.parse_budget(text)


def test_static_checks_first_then_dynamic_by_value():
    ordered = budgets.order_checks(select_checks())
    kinds = [c.kind for c in ordered]
    assert kinds == sorted(kinds, key=lambda k: k != "static")
    dynamic = [c.name for c in ordered if c.kind == "dynamic"]
    assert dynamic[:2] == ["attention.causal-leakage", "cache.consistency"]
    assert dynamic.index("attention.recompute") < dynamic.index("attention.saturation")
    assert set(dynamic) <= set(budgets.COST_UNITS)  # every dynamic check has a cost estimate


def test_a_per_layer_check_costs_in_proportion_to_the_probed_layers():
    """depth.gradients takes one Jacobian per layer (8B, 32 layers: 19.3 forward passes
    measured): its estimate scales with the layers probed; the others do not."""
    base = budgets.COST_UNITS["depth.gradients"]
    assert budgets.units("depth.gradients", 32) == base * 32 / budgets.CALIBRATION_LAYERS
    assert budgets.units("depth.gradients", 2) == base  # never below the calibration
    assert budgets.units("attention.recompute", 32) == budgets.COST_UNITS["attention.recompute"]
    depth = next(c for c in select_checks() if c.name == "depth.gradients")
    plan = budgets.Plan(seconds=60.0, forward_s=0.5, probed_layers=32)
    assert plan.estimate(depth) == 0.5 * base * 8
    plan.probed_layers = 3  # a sampled run probes three layers
    assert plan.estimate(depth) == 0.5 * base


def test_sample_layers_keeps_first_and_last():
    assert budgets.sample_layers(16) == (0, 8, 15)
    assert budgets.sample_layers(32, 4) == (0, 10, 21, 31)
    assert budgets.sample_layers(6) == (0, 2, 5)
    assert budgets.sample_layers(2) == (0, 1)


def test_sampled_model_shares_weights_and_leaves_the_model_alone():
    model = zoo.zoo_model("deep-6").build()
    sub = budgets.sampled_model(model, (0, 5))
    assert len(model.layers) == 6 and model.config.num_layers == 6
    assert sub.config.num_layers == 2 and sub.layers[1] is model.layers[5]
    assert sub.embed_tokens is model.embed_tokens
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        h = model.embed(ids, None, torch.arange(8)[None])
        for i in (0, 5):
            h = model.layers[i](h)
        want = model.lm_head(model.final_norm(h))
        assert torch.allclose(sub(ids), want, atol=1e-6)


def test_relabel_maps_layer_numbers_back_and_states_the_sample():
    plan = budgets.Plan(60.0, layers=(0, 8, 15), num_layers=16, probe_len=32)
    f = Finding("attention.recompute", Severity.ERROR, "layer 2: error 0.5; per layer 0.25",
                subject="layer 1")
    got = budgets.relabel(f, plan)
    assert got.subject == "layer 8"
    assert got.summary.startswith("layer 15: error 0.5; per layer 0.25 [sampled layers 0, 8, 15")
    assert got.details["sampled"] == {"layers": [0, 8, 15], "of": 16, "probe_len": 32}


@pytest.fixture
def forced_sampling(monkeypatch):
    """Sample whatever the speed: the plan treats any run as too long for the budget."""
    monkeypatch.setattr(budgets, "PLAN_SHARE", 0.0)


def test_tiny_budget_skips_dynamic_checks_and_says_so():
    model = zoo.zoo_model("llama-gqa").build()
    dg = examine(model, budget=1e-4)
    dynamic = [c.name for c in select_checks() if c.kind == "dynamic"]
    assert dg.budget is not None and set(dg.budget["skipped"]) == set(dynamic)
    assert all(dg.skipped[name].startswith("budget: needs ~") for name in dynamic)
    assert json.loads(json.dumps(dg.to_json()))["budget"]["seconds"] == 1e-4


def test_sampled_run_states_what_it_sampled(forced_sampling):
    model = zoo.zoo_model("deep-6").build()
    dg = examine(model, budget=1e6, checks=["attention.recompute", "cache.consistency",
                                            "norm.placement"])
    assert dg.budget["sampled"] == {"layers": [0, 2, 5], "of": 6, "probe_len": 32}
    assert dg.budget["skipped"] == []
    for f in dg.findings:
        if f.check == "norm.placement":  # static: the whole config, nothing sampled
            assert "sampled" not in f.details
        else:
            assert f.details["sampled"]["layers"] == [0, 2, 5]
            assert "[sampled layers 0, 2, 5 of 6, probe length 32]" in f.summary


EVERY_LAYER_BUGS = {  # bug present in every layer -> the check that flags it
    "attention.causal-top-left": "cache.consistency",
    "attention.gqa-tiled": "attention.recompute",
    "residual.dropped": "depth.residual-path",
    "rope.rotation-sign": "rope.relativity",
}


def _worst(check: str, planted: str | None, **kw) -> int:
    with bugs.plant(*([planted] if planted else [])):
        model = zoo.zoo_model("deep-6").build()  # built under the bug (construction sites)
        dg = examine(model, checks=[check], **kw)
    return max((int(f.severity) for f in dg.findings if f.check == check), default=0)


@pytest.mark.parametrize("bug", sorted(EVERY_LAYER_BUGS))
def test_layer_sampling_cannot_hide_a_bug_present_in_every_layer(forced_sampling, bug):
    check = EVERY_LAYER_BUGS[bug]
    full = _worst(check, bug) > _worst(check, None)
    sampled = _worst(check, bug, budget=1e6) > _worst(check, None, budget=1e6)
    assert full, f"{check} does not flag {bug} on the full run (the premise)"
    assert sampled, f"{check} misses {bug} on layers {budgets.sample_layers(6)} of 6"
    assert _worst(check, bug, budget=1e6) >= int(Severity.WARNING)


def test_cli_budget_option(hf_llama_random):
    runner = CliRunner()
    result = runner.invoke(app, ["doctor", hf_llama_random, "--budget", "0.001s"])
    assert result.exit_code in (0, 1), result.output
    assert "skipped by the budget: " in result.output
    bad = runner.invoke(app, ["doctor", hf_llama_random, "--budget", "soon"])
    assert bad.exit_code == 2 and "--budget" in bad.output and "Traceback" not in bad.output


def test_time_spent_before_the_checks_counts():
    from transformer_math.doctor import run_checks, subject_for
    from transformer_math.doctor.checks import Options

    subject = subject_for(zoo.zoo_model("llama-gqa").build(), Options())
    dg = run_checks(subject, select_checks(), target="m", budget=10.0, already_spent=20.0)
    assert dg.budget["load_s"] == 20.0
    assert {c.name for c in select_checks() if c.kind == "dynamic"} == set(dg.budget["skipped"])
