"""The depth, residual, norm and induction checks of the doctor (``doctor/depth_probes.py``).

Each check flags its planted bug and stays silent on healthy models: random-init Llama-like and
GPT-2-like project models (3 seeds, depths 2 and 6, Pre- and Post-LN) and tiny checkpoints saved
by ``transformers`` (random and briefly trained), through both engines.
"""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math import bugs
from transformer_math.diagnostics.jacobian import jacobian_matrix
from transformer_math.doctor import Options, Severity, subject_for
from transformer_math.doctor import depth_probes as dp
from transformer_math.doctor.checks import CHECKS
from transformer_math.doctor.engines import ProjectEngine

NAMES = ("depth.gradients", "depth.residual-path", "norm.statistics", "norm.placement-probe",
         "icl.induction")


def run(target, *, engine: str = "project", **options):
    """Run this module's five checks only (the other modules' checks are not needed)."""
    from transformer_math.doctor import run_checks

    options.setdefault("probe_len", 32)
    subject = subject_for(target, Options(**options), engine=engine)
    return run_checks(subject, [CHECKS[n] for n in NAMES], target="t")


def assert_silent(diagnosis) -> None:
    assert not diagnosis.flagged, [(f.check, f.summary) for f in diagnosis.flagged]
    assert not diagnosis.skipped, diagnosis.skipped
    assert {f.check for f in diagnosis.findings} == set(NAMES)


def test_checks_registered() -> None:
    for name in NAMES:
        assert CHECKS[name].kind == "dynamic"
    assert CHECKS["depth.gradients"].manual_rows == (7,)
    assert CHECKS["icl.induction"].manual_rows == (4,)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("layers", [2, 6])
def test_healthy_random_project_models_are_silent(make_project_model, kind: str,
                                                  layers: int) -> None:
    for seed in (0, 1, 2):
        diagnosis = run(make_project_model(kind, seed, num_layers=layers))
        assert_silent(diagnosis)
        assert len(diagnosis.figures["depth.gradients"]["norms"]) == layers + 1
        assert len(diagnosis.figures["depth.jacobian"]["norms"]) == layers + 1
        (icl,) = diagnosis.by_check("icl.induction")
        assert icl.severity == Severity.INFO and icl.measured < 0.1  # no induction head


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_healthy_post_ln_models_are_silent(make_project_model, kind: str) -> None:
    assert_silent(run(make_project_model(kind, 0, num_layers=6, norm_placement="post")))


# (bug, model kind, depth, placement) -> the checks that must flag it (as measured: see the
# module docstrings; residual.dropped leaves the gradient norms of the RMSNorm model in band,
# the norm at every block input restores the scale, but not the LayerNorm model's)
PLANTED = [
    ("residual.dropped", "llama", 2, "pre", {"depth.residual-path", "norm.placement-probe"}),
    ("residual.dropped", "gpt2", 6, "pre", {"depth.residual-path", "norm.placement-probe"}),
    ("residual.dropped", "llama", 2, "post", {"depth.residual-path", "norm.placement-probe"}),
    ("norm.pre-ln-as-post-ln", "llama", 6, "pre", {"norm.placement-probe"}),
    ("norm.pre-ln-as-post-ln", "gpt2", 2, "pre", {"norm.placement-probe"}),
    ("norm.layernorm-no-centering", "gpt2", 2, "pre", {"norm.statistics"}),
    ("norm.layernorm-no-centering", "gpt2", 6, "post", {"norm.statistics"}),
]


@pytest.mark.parametrize(("bug", "kind", "layers", "placement", "expected"), PLANTED)
def test_planted_bugs_are_flagged(make_project_model, bug: str, kind: str, layers: int,
                                  placement: str, expected: set[str]) -> None:
    model = make_project_model(kind, 0, num_layers=layers, norm_placement=placement)
    with bugs.plant(bug):
        diagnosis = run(model)
    flagged = set(diagnosis.flagged_checks())
    assert expected <= flagged, (bug, flagged)
    for f in diagnosis.flagged:
        if f.check in expected:  # the statistical residual score warns, the others are errors
            assert f.severity == (Severity.WARNING if f.check == "depth.residual-path"
                                  else Severity.ERROR)
            assert f.threshold is not None and f.measured is not None


def test_no_residual_gradients_vanish_in_layernorm_model(make_project_model) -> None:
    """Manual row 7 planted: without the identity path the per-layer gradient rate of the
    GPT-2-like model leaves [1/10, 10] (healthy: within e^{+-1.2} over the sweep)."""
    model = make_project_model("gpt2", 0, num_layers=6, init="gpt2")
    with bugs.plant("residual.dropped"):
        diagnosis = run(model)
    grads = diagnosis.by_check("depth.gradients")
    assert any(f.flagged for f in grads), [f.summary for f in grads]


def test_placement_probe_names_what_the_block_computes(make_project_model) -> None:
    model = make_project_model("llama", 0, num_layers=2)
    with bugs.plant("norm.pre-ln-as-post-ln"):
        (f,) = run(model).by_check("norm.placement-probe")
    assert f.severity == Severity.ERROR and "'post'" in f.summary
    with bugs.plant("residual.dropped"):
        (f,) = run(model).by_check("norm.placement-probe")
    assert "'pre, no residual'" in f.summary


# ------------------------------------------------------------------ estimators


def test_hutchinson_trace_and_rms_gain_match_the_exact_jacobian(make_project_model) -> None:
    """The probe estimates against the Jacobian formed exactly (B = 1, T = 6, d = 32)."""
    model = make_project_model("gpt2", 0, num_layers=2)
    engine = ProjectEngine(model)
    ids = torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(0))
    h0 = engine.embed(ids).detach()
    _, states = engine.run_embedded(h0)

    def block0(h: torch.Tensor) -> torch.Tensor:
        return model.layers[0](h)

    def stack(h: torch.Tensor) -> torch.Tensor:
        return engine.run_embedded(h)[1][-1]

    exact = jacobian_matrix(block0, states[0].detach())
    n = exact.shape[0]
    est = dp.block_traces(engine, ids, torch.Generator().manual_seed(1), probes=64)
    assert est["traces"][0] == pytest.approx(float(exact.trace()) / n, abs=0.03)
    full = jacobian_matrix(stack, h0)
    rms = float(full.norm()) / math.sqrt(n)
    gains = [dp.depth_measurements(engine, ids, torch.Generator().manual_seed(s))["jacobian"][-1]
             for s in range(16)]
    assert sum(gains) / len(gains) == pytest.approx(rms, rel=0.1)


# ------------------------------------------------------------------ checkpoints, both engines


def _engines() -> list[str]:
    return ["project", "transformers"]


@pytest.mark.parametrize("engine", _engines())
def test_healthy_random_checkpoints_are_silent(hf_llama_random: str, hf_gpt2_random: str,
                                               engine: str) -> None:
    for path in (hf_llama_random, hf_gpt2_random):
        assert_silent(run(path, engine=engine))


@pytest.mark.parametrize("engine", _engines())
def test_healthy_trained_checkpoints_are_silent(hf_llama_trained: str, hf_gpt2_trained: str,
                                                engine: str) -> None:
    for path in (hf_llama_trained, hf_gpt2_trained):
        assert_silent(run(path, engine=engine))


@pytest.mark.parametrize("engine", _engines())
def test_gemma_norm_offset_is_silent(hf_factory, tmp_path, engine: str) -> None:
    """Gemma stores w and scales by 1 + w (transformers); the project's adapter stores 1 + w.
    The check measures the affine part on the module, so both are silent with w far from 0."""
    model = hf_factory.build("gemma", 0)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
    path = hf_factory.save(model, tmp_path / "gemma")
    diagnosis = run(path, engine=engine)
    assert_silent(diagnosis)
    (f,) = diagnosis.by_check("norm.statistics")
    assert f.measured < 1e-5


def test_measured_affine_reads_gemma_gain(hf_factory) -> None:
    model = hf_factory.build("gemma", 0)
    norm = model.model.layers[0].input_layernorm
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(-0.5, 0.5, norm.weight.shape[0]))
    gain, shift = dp._measured_affine(norm, norm.weight.shape[0], torch.float32,
                                      torch.device("cpu"))
    assert torch.allclose(gain, 1.0 + norm.weight.double(), atol=1e-5)
    assert float(shift.abs().max()) < 1e-6


# ------------------------------------------------------------------ induction


def test_hand_built_induction_circuit_is_found_and_removed_by_the_planted_mask() -> None:
    """Planted positive: the project's hand-built 2-layer induction circuit (no training);
    attention.causal-blocks-previous then removes its previous-token head, and with it the
    induction head (measured: previous-token 1.00 -> 0.00, induction 0.85 -> 0.04)."""
    from transformer_math.experiments.induction_heads import hand_built_induction_model

    model = hand_built_induction_model(64, 32)
    (f,) = run(model).by_check("icl.induction")
    assert f.severity == Severity.OK and f.measured >= dp.INDUCTION_MIN
    assert f.details["loss_drop"] > 1.0
    assert max(max(h) for h in f.details["previous_token"]) > 0.9
    with bugs.plant("attention.causal-blocks-previous"):
        (g,) = run(model).by_check("icl.induction")
    assert g.severity == Severity.INFO and g.measured < 0.1
    assert max(max(h) for h in g.details["previous_token"]) < 0.05


def test_one_layer_model_gets_info_not_warning(make_project_model) -> None:
    diagnosis = run(make_project_model("llama", 0, num_layers=1))
    assert not diagnosis.flagged
    (f,) = diagnosis.by_check("icl.induction")
    assert f.severity == Severity.INFO and "one-layer" in f.meaning


def test_context_past_training_is_said(make_project_model) -> None:
    model = make_project_model("llama", 0)  # max_seq_len 64
    diagnosis = run(model, context=256)
    found = diagnosis.by_check("icl.induction")
    assert len(found) == 2 and not diagnosis.flagged
    assert "past the trained length 64" in found[1].summary


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_transformers_engine_flags_a_block_without_residual(hf_factory, kind: str) -> None:
    """residual.dropped has no site in transformers' code; the same fault is made there by a
    forward hook that subtracts each decoder layer's input from its output (h + f -> f)."""
    model = hf_factory.build(kind, 0)

    def drop(module, args, kwargs, output):
        h = args[0] if args else kwargs["hidden_states"]
        if isinstance(output, tuple):
            return (output[0] - h, *output[1:])
        return output - h

    layers = model.model.layers if kind == "llama" else model.transformer.h
    for layer in layers:
        layer.register_forward_hook(drop, with_kwargs=True)
    diagnosis = run(model, engine="transformers")
    assert {"depth.residual-path", "norm.placement-probe"} <= set(diagnosis.flagged_checks())
    (f,) = diagnosis.by_check("norm.placement-probe")
    assert "'pre, no residual'" in f.summary
