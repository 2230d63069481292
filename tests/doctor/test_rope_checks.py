"""The RoPE checks of the doctor (``doctor/rope_static.py``): each flags its planted case and
stays silent on healthy project models and transformers checkpoints."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from transformer_math import bugs
from transformer_math.doctor import CHECKS, Options, Severity, Subject, examine, load_checks
from transformer_math.doctor.rope_static import (
    base_lower_bound,
    discrimination_sum,
    men_fit,
    reference_frequencies,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

ROPE_CHECKS = ("rope.wavelengths", "rope.base-bound", "rope.scaling-params", "rope.tables")
L0 = 32
PAIRS = 4  # hidden 32, 4 heads: head dim 8


def scaling(kind: str) -> dict[str, Any] | None:
    """Correct scaling configs of each type (project names), L0 = 32, 4 rotary pairs."""
    return {
        "default": None,
        "linear": {"rope_type": "linear", "factor": 4.0},
        "dynamic": {"rope_type": "dynamic", "factor": 2.0,
                    "original_max_position_embeddings": 128},
        "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": L0},
        "llama3": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": L0},
        "longrope": {"rope_type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3],
                     "long_factor": [1.0, 3.0, 5.0, 7.0], "original_max_position_embeddings": L0,
                     "factor": 4.0},
    }[kind]


def project(kind: str = "default", *, seed: int = 0, max_seq_len: int = 128,
            **overrides: Any) -> Any:
    kw: dict[str, Any] = dict(vocab_size=64, hidden_size=32, num_layers=1, num_heads=4,
                              num_kv_heads=2, max_seq_len=max_seq_len, position="rope",
                              norm="rmsnorm", feedforward="swiglu", rope_scaling=scaling(kind))
    kw.update(overrides)
    return build_transformer(TransformerConfig(**kw), seed).eval()


def flagged(diagnosis: Any) -> list[tuple[str, str, str]]:
    return [(f.check, str(f.severity), f.summary) for f in diagnosis.flagged]


def worst(diagnosis: Any, check: str) -> Severity:
    return max((f.severity for f in diagnosis.by_check(check)), default=Severity.OK)


# ----------------------------------------------------------------------------- healthy models


@pytest.mark.parametrize("kind", ["default", "linear", "dynamic", "yarn", "llama3", "longrope"])
def test_healthy_project_models_are_silent(kind: str) -> None:
    for seed in (0, 1):
        d = examine(project(kind, seed=seed), checks=list(ROPE_CHECKS))
        assert flagged(d) == []
        assert d.skipped.keys() <= {"rope.scaling-params"}  # default: no scaling to judge
        assert d.by_check("rope.tables") and d.by_check("rope.wavelengths")
        fig = d.figures["rope.wavelengths"]
        assert len(fig["wavelengths"]) == PAIRS and fig["context"] == 128


def test_gpt2_and_learned_positions_are_skipped(hf_gpt2_random: str) -> None:
    gpt2 = build_transformer(TransformerConfig(vocab_size=64, hidden_size=32, num_layers=1,
                                               num_heads=4, max_seq_len=64, position="learned",
                                               norm="layernorm", feedforward="gelu"), 0)
    for target, engine in ((gpt2, "project"), (hf_gpt2_random, "project"),
                           (hf_gpt2_random, "transformers")):
        d = examine(target, checks=list(ROPE_CHECKS), engine=engine)
        assert d.findings == [] and set(d.skipped) == set(ROPE_CHECKS)


def test_healthy_hf_checkpoints_both_engines(hf_llama_random: str, hf_factory: Any,
                                             tmp_path: Path) -> None:
    """transformers-saved Llama checkpoints (default, yarn, llama3, linear, dynamic scaling):
    silent on the project engine and on transformers' own implementation."""
    paths = {"default": hf_llama_random}
    ropes = {
        "yarn": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                  "original_max_position_embeddings": 16}, 64),
        "llama3": ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 4.0,
                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 16}, 64),
        "linear": ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}, 64),
        "dynamic": ({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, 64),
    }
    for name, (rope, n_max) in ropes.items():
        paths[name] = hf_factory.checkpoint(tmp_path / name, "llama", 0, rope_parameters=rope,
                                            max_position_embeddings=n_max)
    for name, path in paths.items():
        engines = ("project", "transformers") if name in ("default", "yarn", "llama3") else (
            "project",)
        for engine in engines:
            d = examine(path, checks=list(ROPE_CHECKS), engine=engine)
            assert flagged(d) == [], (name, engine)
            tables = d.by_check("rope.tables")
            assert tables and all(f.severity == Severity.OK for f in tables), (name, engine)


def test_trained_hf_checkpoints_are_silent(hf_llama_trained: str, hf_gpt2_trained: str) -> None:
    for path in (hf_llama_trained, hf_gpt2_trained):
        for engine in ("project", "transformers"):
            assert flagged(examine(path, checks=list(ROPE_CHECKS), engine=engine)) == []


# ----------------------------------------------------------------------------- rope.tables


@pytest.mark.parametrize(("bug", "kind", "subject"), [
    ("rope.inv-freq-exponent", "default", "angles"),
    ("rope.inv-freq-exponent", "yarn", "angles"),
    ("rope.cos-sin-swapped", "default", "angles"),
    ("rope.angles-in-bf16", "default", "angles"),
    ("rope.llama3-bands-swapped", "llama3", "angles"),
    ("rope.longrope-switch-off-by-one", "longrope", "angles"),
    ("rope.dynamic-fixed-factor", "dynamic", "angles"),
    ("rope.yarn-attention-factor-dropped", "yarn", "attention factor"),
    ("rope.yarn-attention-factor-squared", "yarn", "attention factor"),
])
def test_tables_flag_planted_bugs(bug: str, kind: str, subject: str) -> None:
    with bugs.plant(bug):  # the model is built inside: its cos/sin cache is the buggy one
        d = examine(project(kind), checks=["rope.tables"])
    found = {f.subject: f for f in d.by_check("rope.tables")}
    assert found[subject].severity == Severity.ERROR, found[subject].summary
    assert found[subject].measured > 100 * found[subject].threshold or subject != "angles"
    healthy = examine(project(kind), checks=["rope.tables"])
    assert flagged(healthy) == []


def test_tables_name_the_switch_length() -> None:
    with bugs.plant("rope.longrope-switch-off-by-one"):
        d = examine(project("longrope"), checks=["rope.tables"])
    angles = next(f for f in d.by_check("rope.tables") if f.subject == "angles")
    # only the table of exactly L0 tokens picks the wrong factors; pair 0 has factor 1 in both
    assert angles.details["differing_pairs"] == {str(L0): [1, 2, 3]}


def test_tables_ignore_bugs_outside_the_tables() -> None:
    """rope.rotation-sign lives in apply_rotary (the rotation, not the tables); the tables stay
    exact (other checks judge the rotation)."""
    with bugs.plant("rope.rotation-sign"):
        d = examine(project("default"), checks=["rope.tables"])
    assert flagged(d) == []


def test_reference_frequencies_are_the_closed_forms() -> None:
    inv, _ = reference_frequencies("default", 8, 10000.0, None, None)
    assert torch.allclose(inv, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64))
    inv, factor = reference_frequencies("yarn", 8, 10000.0, scaling("yarn"), None)
    assert factor == pytest.approx(0.1 * math.log(4.0) + 1.0)
    assert inv[0] == pytest.approx(1.0) and inv[-1] == pytest.approx(0.001 / 4.0)
    short, a = reference_frequencies("longrope", 8, 10000.0, scaling("longrope"), L0)
    long, _ = reference_frequencies("longrope", 8, 10000.0, scaling("longrope"), L0 + 1)
    assert short[1] == pytest.approx(0.1 / 1.1) and long[1] == pytest.approx(0.1 / 3.0)
    assert a == pytest.approx(math.sqrt(1 + math.log(4.0) / math.log(L0)))
    dyn, _ = reference_frequencies("dynamic", 8, 10000.0, scaling("dynamic"), 256)
    grown = 10000.0 * (2.0 * 256 / 128 - 1.0) ** (8 / 6)
    assert dyn[-1] == pytest.approx(grown ** (-6 / 8))


# ----------------------------------------------------------------------------- rope.wavelengths


def test_wavelengths_warn_past_the_trained_length() -> None:
    model = project("default", max_seq_len=64)
    d = examine(model, checks=["rope.wavelengths"], context=1024)
    warn = [f for f in d.by_check("rope.wavelengths") if f.severity == Severity.WARNING]
    assert len(warn) == 1 and warn[0].measured == 1024 and warn[0].threshold == 64
    # pairs 2 and 3 (wavelengths 628 and 6283 > 64) never completed a rotation in training
    assert warn[0].details["unseen_pairs"] == [2, 3]
    info = [f for f in d.by_check("rope.wavelengths") if f.severity == Severity.INFO]
    assert info and info[0].measured == 2
    assert d.figures["rope.wavelengths"]["trained_length"] == 64
    assert flagged(examine(model, checks=["rope.wavelengths"], context=64)) == []


def test_wavelengths_with_scaling_use_factor_times_original() -> None:
    model = project("yarn", max_seq_len=128)  # 4 x 32
    assert flagged(examine(model, checks=["rope.wavelengths"], context=128)) == []
    d = examine(model, checks=["rope.wavelengths"], context=512)
    assert worst(d, "rope.wavelengths") == Severity.WARNING
    over = next(f for f in d.by_check("rope.wavelengths") if f.flagged)
    assert over.threshold == 128 and over.details["unseen_pairs"]


# ----------------------------------------------------------------------------- rope.base-bound


def test_base_bound_reproduces_men_et_al() -> None:
    """Men et al. 2024 Fig. 1 (d = 128): the 1K point reads about 4e3 on the log-log plot; the
    scan (10^(k/300) grid) gives 4.30e3, pinned here; the paper's fit 0.0424 L^1.628 gives 3.4e3
    there (their points scatter about the fit)."""
    b = base_lower_bound(1024, 128)
    assert b == pytest.approx(4.3e3, rel=0.03)
    assert 1.0 < b / men_fit(1024) < 1.5
    # Llama 2 (base 1e4, d 128): B_m first < 0 at m = 1707 < 4096; Llama 3 (5e5) holds to 8K
    i = torch.arange(64, dtype=torch.float64)
    assert discrimination_sum(10000.0 ** (-i / 64), 4096)[1] == 1707
    assert discrimination_sum(500000.0 ** (-i / 64), 8192)[0] >= 0


def test_base_bound_warns_only_for_a_stated_context() -> None:
    model = project("default", max_seq_len=128)  # d = 8, base 1e4: B_m < 0 from m = 91
    d = examine(model, checks=["rope.base-bound"])
    (f,) = d.by_check("rope.base-bound")
    assert f.severity == Severity.INFO and f.details["first_negative_m"] == 91
    assert f.details["b_min"] > 1e4
    (f,) = examine(model, checks=["rope.base-bound"], context=128).by_check("rope.base-bound")
    assert f.severity == Severity.WARNING and f.measured < 0 and f.threshold == 0
    # the bound's own base meets the condition (a scan: slightly above it may not, the
    # condition is not monotone in the base)
    big = project("default", max_seq_len=128, rope_theta=f.details["b_min"])
    (g,) = examine(big, checks=["rope.base-bound"], context=128).by_check("rope.base-bound")
    assert g.severity == Severity.OK
    # PI with factor 4 reads B at m / 4: 128 positions are fine again
    pi = project("linear", max_seq_len=128)
    assert flagged(examine(pi, checks=["rope.base-bound"], context=128)) == []


# ----------------------------------------------------------------------------- rope.scaling-params


def raw_llama(rope: dict[str, Any], n_max: int = 128, head_dim: int = 8) -> dict[str, Any]:
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
            "num_attention_heads": 32 // head_dim, "head_dim": head_dim,
            "max_position_embeddings": n_max, "rope_parameters": rope}


def judge(raw: dict[str, Any]) -> list[Any]:
    load_checks()
    subject = Subject(None, Options(), raw_config=raw, family="llama")
    return CHECKS["rope.scaling-params"].run(subject)


def severities(findings: list[Any]) -> dict[str, str]:
    return {f.subject: str(f.severity) for f in findings if f.flagged}


YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
        "original_max_position_embeddings": 32}


@pytest.mark.parametrize(("rope", "n_max", "expected"), [
    ({**YARN, "attention_factor": 1.0}, 128, {"attention_factor": "warning"}),
    ({**YARN, "attention_factor": (0.1 * math.log(4) + 1) ** 2}, 128,
     {"attention_factor": "warning"}),
    ({**YARN, "beta_fast": 1.0, "beta_slow": 32.0}, 128, {"beta_fast": "error"}),
    ({**YARN, "factor": 0.5}, 128, {"factor": "error"}),
    ({**YARN, "factor": 2.0}, 128, {"factor": "warning"}),  # max / original says 4
    ({**YARN, "mscale": 0.707}, 128, {"mscale": "warning"}),
    ({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}, 128,
     {"original_max_position_embeddings": "warning"}),
    ({"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 4.0,
      "high_freq_factor": 1.0, "original_max_position_embeddings": 32}, 256,
     {"low_freq_factor": "error"}),
    ({"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
      "original_max_position_embeddings": 32}, 256, {"high_freq_factor": "error"}),
    ({"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 256}, 256,
     {"original_max_position_embeddings": "warning"}),
    ({"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 3,
      "long_factor": [2.0] * 4, "original_max_position_embeddings": 32}, 128,
     {"short_factor": "error"}),
    ({"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 4,
      "long_factor": [2.0] * 4, "original_max_position_embeddings": 32,
      "attention_factor": 1.0}, 128, {"attention_factor": "warning"}),
    ({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0,
      "original_max_position_embeddings": 32}, 128,
     {"original_max_position_embeddings": "warning"}),
    ({"rope_type": "linear", "rope_theta": 1e4}, 128, {"factor": "error"}),
])
def test_scaling_params_flag_inconsistent_configs(rope: dict[str, Any], n_max: int,
                                                  expected: dict[str, str]) -> None:
    assert severities(judge(raw_llama(rope, n_max))) == expected


@pytest.mark.parametrize(("rope", "n_max", "head_dim"), [
    (YARN, 128, 8),
    ({**YARN, "attention_factor": 0.1 * math.log(4) + 1}, 128, 8),
    # Qwen2.5's documented YaRN: max_position_embeddings = original (declares no extension)
    ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 32768, 128),
    # Llama 3.1: max 131072 = 2 x factor x original (info, not a fault)
    ({"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, 131072, 128),
    ({"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 4,
      "long_factor": [2.0] * 4, "original_max_position_embeddings": 32}, 128, 8),
    ({"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, 128, 8),
    ({"rope_type": "linear", "rope_theta": 1e4, "factor": 4.0}, 128, 8),
])
def test_scaling_params_accept_healthy_configs(rope: dict[str, Any], n_max: int,
                                               head_dim: int) -> None:
    findings = judge(raw_llama(rope, n_max, head_dim))
    assert findings and severities(findings) == {}


def test_scaling_params_judge_a_config_the_loader_refuses(hf_factory: Any,
                                                          tmp_path: Path) -> None:
    """DeepSeek-style mscale keys are refused by the project's loader (load_error); the raw
    config is still judged, and the rest of the rope checks are skipped."""
    rope = {**YARN, "original_max_position_embeddings": 16, "mscale": 1.0}
    path = hf_factory.checkpoint(tmp_path / "yarn", "llama", 0, rope_parameters=rope,
                                 max_position_embeddings=64)
    cfg_file = Path(path) / "config.json"
    raw = json.loads(cfg_file.read_text())
    raw.setdefault("rope_parameters", {})["mscale"] = 1.0
    cfg_file.write_text(json.dumps(raw))
    d = examine(path, checks=list(ROPE_CHECKS), static_only=True)
    assert any(f.check == "checkpoint.loads" for f in d.findings)
    assert severities(d.by_check("rope.scaling-params")) == {"mscale": "warning"}
    assert {"rope.wavelengths", "rope.base-bound"} <= set(d.skipped)


def test_project_dynamic_with_its_own_original_is_silent() -> None:
    """The project's dynamic NTK honours original_max_position_embeddings (transformers' starts
    at max_position_embeddings: that warning is for config.json only)."""
    model = project("dynamic", rope_scaling={"rope_type": "dynamic", "factor": 4.0,
                                             "original_max_position_embeddings": 32})
    assert flagged(examine(model, checks=list(ROPE_CHECKS))) == []
