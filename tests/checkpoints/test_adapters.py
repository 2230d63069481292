"""The family adapters: one name table read both ways, registry metadata, file validation."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import transformer_math.checkpoints as checkpoints_pkg
from transformer_math.checkpoints.adapters import ADAPTERS, gpt2, llama
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.checkpoints.io import (
    config_from_hf,
    export,
    from_pretrained,
    save_pretrained,
)
from transformer_math.functional.rope_scaling import (
    ROPE_SCALING_FUNCTIONS,
    rope_parameter_names,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer, build_transformer

SIZES = dict(vocab_size=19, hidden_size=16, num_layers=2, num_heads=4, intermediate_size=24,
             max_seq_len=12)
PRESETS = {
    "llama": llama.preset(**SIZES, num_kv_heads=2),
    "llama-biases-tied": llama.preset(**SIZES, attention_bias=True, mlp_bias=True,
                                      tie_embeddings=True),
    "gpt2": gpt2.preset(**SIZES),
    "gpt2-untied-gelu": gpt2.preset(**SIZES, feedforward="gelu", tie_embeddings=False),
    "meta": llama.preset(**SIZES, num_kv_heads=1),
}


def _family(name: str) -> str:
    return name.split("-")[0]


def test_registry_metadata():
    hf = ("llama", "gpt2", "qwen2", "mistral", "gemma", "phi3")
    assert ADAPTERS.names() == (*hf, "meta")
    assert ADAPTERS.where(layout="hf") == hf
    assert ADAPTERS.metadata("llama")["architecture"] == "LlamaForCausalLM"
    assert ADAPTERS.metadata("gpt2")["model_type"] == "gpt2"
    with pytest.raises(ValueError, match="checkpoint family"):
        ADAPTERS.get("mamba")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_one_table_both_directions(name):
    """save then load through the same rules gives back every tensor; the table names every
    parameter of the model exactly once (a tied head is the embedding)."""
    config = PRESETS[name]
    rules = ADAPTERS.get(_family(name)).rules(config)
    model = build_transformer(config, 0)
    stored = export(model, rules)
    assert len(stored) == len(rules)
    ours = [o for r in rules for o in r.ours]
    expected = set(model.state_dict()) - ({"lm_head.weight"} if config.tie_embeddings else set())
    assert sorted(ours) == sorted(expected)
    own = model.state_dict()
    for rule in rules:
        for o, t in zip(rule.ours, rule.load(stored[rule.theirs]), strict=True):
            assert torch.equal(t, own[o]), (rule.theirs, o)


def test_gpt2_transforms():
    """Conv1D stores (in, out); c_attn packs q|k|v along the output axis."""
    config = PRESETS["gpt2"]
    model = build_transformer(config, 1)
    stored = export(model, gpt2.rules(config))
    w = stored["transformer.h.0.attn.c_attn.weight"]
    assert w.shape == (16, 48)
    assert torch.equal(w[:, 16:32], model.layers[0].attn.k_proj.weight.t())
    assert torch.equal(stored["transformer.h.1.mlp.c_fc.weight"],
                       model.layers[1].ffn.fc_in.weight.t())
    assert "lm_head.weight" not in stored  # tied


def test_meta_permutation_is_not_the_identity():
    config = PRESETS["meta"]
    model = build_transformer(config, 2)
    permuted = export(model, ADAPTERS.get("meta").rules(config))
    plain = export(model, ADAPTERS.get("meta").rules(config, permute_qk=False))
    assert not torch.equal(permuted["layers.0.attention.wq.weight"],
                           plain["layers.0.attention.wq.weight"])
    assert torch.equal(permuted["layers.0.attention.wv.weight"],
                       plain["layers.0.attention.wv.weight"])
    with pytest.raises(ValueError, match="Meta layout needs"):
        ADAPTERS.get("meta").rules(PRESETS["llama-biases-tied"])


def _llama_cfg(**rope) -> dict:
    return {"model_type": "llama", "vocab_size": 19, "hidden_size": 16, "num_hidden_layers": 1,
            "num_attention_heads": 4, "intermediate_size": 24, "max_position_embeddings": 32,
            "rope_parameters": {"rope_theta": 1e4, **rope}}


def test_rope_types_come_from_the_registry():
    accepted = ROPE_SCALING_FUNCTIONS.where(in_transformers=True)
    assert {"default", "linear", "dynamic", "yarn", "llama3", "longrope"} <= set(accepted)
    values = {"factor": 2.0, "original_max_position_embeddings": 16, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": True,
              "attention_factor": 1.0, "short_factor": [1.0] * 2, "long_factor": [2.0] * 2}
    for rope_type in accepted:
        params = {k: values[k] for k in rope_parameter_names(rope_type)}
        config, _ = config_from_hf(_llama_cfg(rope_type=rope_type, **params))
        if rope_type == "default":
            assert config.rope_scaling is None
        else:
            assert config.rope_scaling["rope_type"] == rope_type
    # registered in the project but not a transformers type: a checkpoint may not use it
    assert "ntk" in ROPE_SCALING_FUNCTIONS and "ntk" not in accepted
    with pytest.raises(ValueError, match=r"unsupported rope_type 'ntk'.*supported: \["):
        config_from_hf(_llama_cfg(rope_type="ntk", factor=2.0))


def test_shapes_are_validated_before_the_model_is_allocated(tmp_path: Path):
    """A config of ~4e11 parameters with a one-tensor file fails on the headers: the model is
    only ever built on the meta device before the check (the layer count is compared with the
    stored layer indices first)."""
    cfg = {"model_type": "llama", "vocab_size": 1 << 20, "hidden_size": 1 << 16,
           "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 1 << 16,
           "max_position_embeddings": 32}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    save_file({"model.norm.weight": torch.ones(1 << 16)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"num_hidden_layers in .*config.json is 2 but the "
                                         r"checkpoint stores no layer tensors"):
        from_pretrained(tmp_path)
    cfg["num_hidden_layers"] = 1  # the layer count fits: the missing tensors are listed
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    save_file({"model.norm.weight": torch.ones(1 << 16),
               "model.layers.0.input_layernorm.weight": torch.ones(1 << 16)},
              str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"10 missing tensor\(s\): \['lm_head.weight'"):
        from_pretrained(tmp_path)


@pytest.mark.parametrize("name", ["llama", "gpt2-untied-gelu"])
def test_save_a_fresh_preset_infers_its_family(tmp_path: Path, name: str):
    model = build_transformer(PRESETS[name], 3)
    assert not hasattr(model, "checkpoint_info")
    save_pretrained(model, tmp_path)
    again = from_pretrained(tmp_path)
    assert again.config == model.config
    assert again.checkpoint_info == CheckpointInfo(family=_family(name), dtype="float32")
    ids = torch.randint(0, 19, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(again(ids).logits, model(ids))


def test_a_config_no_family_expresses_is_not_saved(tmp_path: Path):
    odd = TransformerConfig(hidden_size=16, num_layers=1, num_heads=4, vocab_size=19,
                            position="rope", norm="layernorm", feedforward="gelu")
    with pytest.raises(ValueError, match=r"no checkpoint family fits.*norm='layernorm'"):
        save_pretrained(Transformer(odd), tmp_path)
    with pytest.raises(ValueError, match=r"not a gpt2 preset.*position='rope'"):
        save_pretrained(Transformer(odd), tmp_path, info=CheckpointInfo(family="gpt2"))
    assert not (tmp_path / "config.json").exists()


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_import_cycle():
    """io imports the adapters and nn; nothing imports io back (adapters, info) and nn does
    not import checkpoints."""
    root = Path(checkpoints_pkg.__file__).parent
    for path in [root / "info.py", *sorted((root / "adapters").glob("*.py"))]:
        assert "transformer_math.checkpoints.io" not in _imports(path), path.name
    nn_root = root.parent / "nn"
    for path in sorted(nn_root.glob("*.py")):
        assert not any(m.startswith("transformer_math.checkpoints") for m in _imports(path)), (
            path.name)
    assert not (root / "model.py").exists()
