"""The doctor's two engines agree on the same checkpoint.

``ProjectEngine`` (the project's Transformer loaded by ``checkpoints.io.from_pretrained``) and
``TransformersEngine`` (``transformers``' own implementation) are run on the healthy fixtures of
``conftest.py``: logits, attention weights and pre-softmax scores, cached decoding, the
embedded-input path with its hidden states, the rotary tables (default, YaRN, Llama 3 scaled)
and left padding must agree, so a check's number means the same on either engine.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from transformer_math.checkpoints.io import from_pretrained
from transformer_math.doctor import examine
from transformer_math.doctor.engines import Engine, ProjectEngine
from transformer_math.doctor.engines_transformers import TransformersEngine

TOL = 1e-5  # float32 on the CPU: measured max 1.9e-6 (trained Llama logits, T = 64)
NAMES = ["llama-random", "gpt2-random", "llama-trained", "gpt2-trained"]


@pytest.fixture(scope="module")
def engines(hf_checkpoints: dict[str, str]) -> dict[str, tuple[Engine, Engine]]:
    """name -> (ProjectEngine, TransformersEngine) on the same checkpoint."""
    return {name: (ProjectEngine(from_pretrained(path)), TransformersEngine.from_path(path))
            for name, path in hf_checkpoints.items()}


def ids_for(batch: int = 2, length: int = 40, seed: int = 5) -> torch.Tensor:
    return torch.randint(0, 64, (batch, length), generator=torch.Generator().manual_seed(seed))


def maxdiff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


@pytest.mark.parametrize("name", NAMES)
def test_attributes_agree(engines: dict[str, Any], name: str) -> None:
    project, hf = engines[name]
    assert hf.name == "transformers" and project.name == "project"
    for attr in ("num_layers", "num_heads", "num_kv_heads", "head_dim", "hidden_size",
                 "vocab_size", "input_width", "causal", "max_positions", "supports_cache"):
        assert getattr(hf, attr) == getattr(project, attr), attr
    assert hf.max_positions == (64 if name.startswith("gpt2") else None)


@pytest.mark.parametrize("name", NAMES)
def test_logits_and_attention_agree(engines: dict[str, Any], name: str) -> None:
    project, hf = engines[name]
    ids = ids_for()
    assert maxdiff(project.logits(ids), hf.logits(ids)) < TOL
    p_att, h_att = project.attention(ids), hf.attention(ids)
    assert len(p_att) == len(h_att) == project.num_layers
    allowed = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).tril()
    for p, h in zip(p_att, h_att, strict=True):
        assert h.weights.shape == p.weights.shape == (2, hf.num_heads, 40, 40)
        assert maxdiff(p.weights, h.weights) < TOL
        assert h.scores is not None and p.scores is not None
        assert maxdiff(p.scores[..., allowed], h.scores[..., allowed]) < TOL
        assert (h.scores[..., ~allowed] < -1e30).all()  # forbidden: a huge negative number


@pytest.mark.parametrize("name", NAMES)
def test_cached_logits_match_full_forward(engines: dict[str, Any], name: str) -> None:
    ids = ids_for(length=24)
    for engine in engines[name]:
        full = engine.logits(ids)
        for prefix, step in [(1, 1), (7, 3), (10, 5), (24, 1)]:
            cached = engine.cached_logits(ids, prefix, step)
            assert cached.shape == full.shape
            assert maxdiff(cached, full) < TOL, (engine.name, prefix, step)


@pytest.mark.parametrize("name", NAMES)
def test_run_embedded_matches_and_hidden_states_agree(engines: dict[str, Any],
                                                      name: str) -> None:
    project, hf = engines[name]
    ids = ids_for(length=16)
    p_out, p_states = project.run_embedded(project.embed(ids))
    h_in = hf.embed(ids).detach().requires_grad_(True)
    h_out, h_states = hf.run_embedded(h_in)
    assert maxdiff(h_out.detach(), hf.logits(ids)) < TOL
    assert maxdiff(h_out.detach(), p_out.detach()) < TOL
    assert len(h_states) == len(p_states) == hf.num_layers + 1
    for p, h in zip(p_states, h_states, strict=True):
        assert maxdiff(p.detach(), h.detach()) < TOL  # last: before the final norm in both
    # autograd through every state
    grads = torch.autograd.grad(h_out[:, -1].sum(), [h_in, *h_states])
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("name", NAMES)
def test_left_padding_matches_unpadded(engines: dict[str, Any], name: str) -> None:
    ids = ids_for(batch=2, length=20)
    pad = 5
    mask = torch.ones_like(ids)
    mask[0, :pad] = 0
    padded = ids.clone()
    padded[0, :pad] = 0
    for engine in engines[name]:
        out = engine.logits(padded, attention_mask=mask)
        assert torch.isfinite(out).all()
        assert maxdiff(out[0, pad:], engine.logits(ids[:1, pad:])[0]) < TOL, engine.name
        assert maxdiff(out[1], engine.logits(ids[1:])[0]) < TOL, engine.name
        att = engine.attention(padded, attention_mask=mask)
        for record in att:  # real queries give the pads no weight
            assert float(record.weights[0, :, pad:, :pad].abs().max()) < 1e-12
    p_out = engines[name][0].logits(padded, attention_mask=mask)
    h_out = engines[name][1].logits(padded, attention_mask=mask)
    assert maxdiff(p_out[0, pad:], h_out[0, pad:]) < TOL


ROPES = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "yarn": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
             "original_max_position_embeddings": 16},
    "llama3": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16},
}


@pytest.mark.parametrize("rope", sorted(ROPES))
def test_rotary_tables_agree(hf_factory: Any, tmp_path: Any, rope: str) -> None:
    path = hf_factory.checkpoint(tmp_path / rope, "llama", seed=3,
                                 rope_parameters=ROPES[rope])
    project = ProjectEngine(from_pretrained(path))
    hf = TransformersEngine.from_path(path)
    p_cos, p_sin, p_layout = project.rotary_tables(64)
    h_cos, h_sin, h_layout = hf.rotary_tables(64)
    assert p_layout == h_layout == "half"
    assert h_cos.shape == p_cos.shape == (64, hf.head_dim)
    assert maxdiff(p_cos, h_cos) < TOL and maxdiff(p_sin, h_sin) < TOL
    if rope == "yarn":  # the attention factor 0.1 ln(4) + 1 is on the tables
        assert abs(float(h_cos[0, 0]) - (0.1 * torch.log(torch.tensor(4.0)) + 1)) < 1e-6
    ids = ids_for(length=48)
    assert maxdiff(project.logits(ids), hf.logits(ids)) < TOL


def test_gpt2_has_no_rotary_tables(engines: dict[str, Any]) -> None:
    project, hf = engines["gpt2-random"]
    assert hf.rotary_tables(8) is None and project.rotary_tables(8) is None


@pytest.mark.parametrize("family", ["qwen2", "mistral", "gemma", "phi3"])
def test_other_families_agree(hf_factory: Any, tmp_path: Any, family: str) -> None:
    path = hf_factory.checkpoint(tmp_path / family, family, seed=4)
    project = ProjectEngine(from_pretrained(path))
    hf = TransformersEngine.from_path(path)
    ids = ids_for(length=24)
    logits = hf.logits(ids)
    assert maxdiff(project.logits(ids), logits) < TOL
    out, states = hf.run_embedded(hf.embed(ids))  # Gemma: sqrt(d) inside embed only
    assert maxdiff(out.detach(), logits) < TOL
    _, p_states = project.run_embedded(project.embed(ids))
    assert maxdiff(states[0].detach(), p_states[0].detach()) < TOL
    assert maxdiff(hf.cached_logits(ids, 8, 4), logits) < TOL


def test_sdpa_model_switched_to_eager(hf_factory: Any) -> None:
    model = hf_factory.build("llama", seed=0)
    model.config._attn_implementation = "sdpa"
    engine = TransformersEngine(model)
    assert model.config._attn_implementation == "eager"
    assert engine.attention(ids_for(length=8))[0].weights.shape == (2, 4, 8, 8)


def test_engine_refuses_non_hf_objects(project_models: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        TransformersEngine(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError):
        TransformersEngine(project_models["llama-s0"])


def _no_crash(diagnosis: Any) -> None:
    crashed = [f"{f.check}: {f.summary}" for f in diagnosis.findings
               if f.details.get("crashed")]
    assert not crashed, crashed


@pytest.mark.parametrize("name", ["llama-random", "gpt2-trained"])
def test_examine_checkpoint_with_transformers_engine(hf_checkpoints: dict[str, str],
                                                     name: str) -> None:
    diagnosis = examine(hf_checkpoints[name], engine="transformers")
    assert diagnosis.engine == "transformers"
    _no_crash(diagnosis)


def test_examine_transformers_model_object(hf_factory: Any) -> None:
    model = hf_factory.build("gpt2", seed=1)
    diagnosis = examine(model, engine="transformers")
    assert diagnosis.engine == "transformers"
    _no_crash(diagnosis)


def test_project_fixtures(project_models: dict[str, Any], hf_training_losses: dict) -> None:
    assert sorted(project_models) == ["gpt2-s0", "gpt2-s1", "gpt2-s2",
                                      "llama-s0", "llama-s1", "llama-s2"]
    ids = ids_for(length=16)
    for model in project_models.values():
        assert torch.isfinite(ProjectEngine(model).logits(ids)).all()
    for kind in ("llama", "gpt2"):  # the brief training lowered the held-out loss
        losses = hf_training_losses[kind]
        assert losses["after"] < losses["before"] - 0.5, (kind, losses)


def test_from_path_refuses_pickled_weights(hf_factory: Any, tmp_path: Any) -> None:
    """transformers would unpickle a pytorch_model.bin: the engine reads safetensors only."""
    model = hf_factory.build("llama", seed=0)
    path = hf_factory.save(model, tmp_path / "bin")
    (tmp_path / "bin" / "model.safetensors").unlink()
    torch.save(model.state_dict(), tmp_path / "bin" / "pytorch_model.bin")
    with pytest.raises(ValueError, match="safetensors"):
        TransformersEngine.from_path(path)
