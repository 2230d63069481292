"""What ``save_pretrained`` leaves in a directory: ``generation_config.json`` written and read
back (transformers' ``GenerationConfig`` reads it), and no stale weight files of an earlier save
(unsharded over sharded and back)."""

from __future__ import annotations

import json

import pytest
import torch

from transformer_math.checkpoints.io import from_pretrained, save_pretrained


def _files(path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_resaving_removes_stale_weights(tmp_path, ref):
    ref.llama(tmp_path / "ref")
    ours = from_pretrained(tmp_path / "ref")
    out = tmp_path / "out"
    save_pretrained(ours, out, max_shard_bytes=20_000)
    shards = [n for n in _files(out) if n.startswith("model-")]
    assert len(shards) > 1 and "model.safetensors.index.json" in _files(out)
    (out / "notes.txt").write_text("kept")  # not a weight file: left alone
    save_pretrained(ours, out)
    assert _files(out) == ["config.json", "generation_config.json", "model.safetensors",
                           "notes.txt"]
    save_pretrained(ours, out, max_shard_bytes=20_000)
    assert "model.safetensors" not in _files(out)
    assert [n for n in _files(out) if n.startswith("model-")] == shards
    ids = ref.tokens(2, 7)
    with torch.no_grad():
        assert torch.equal(from_pretrained(out)(ids).logits, ours(ids).logits)


def test_generation_config_written_and_read(tmp_path, ref):
    ref.llama(tmp_path / "ref")  # bos 1, eos 2; transformers writes generation_config.json
    assert (tmp_path / "ref" / "generation_config.json").exists()
    gen = json.loads((tmp_path / "ref" / "generation_config.json").read_text())
    gen["eos_token_id"] = [2, 5]  # the generation config is the one generate reads
    (tmp_path / "ref" / "generation_config.json").write_text(json.dumps(gen))
    ours = from_pretrained(tmp_path / "ref")
    assert ours.checkpoint_info.eos_token_id == (2, 5)
    save_pretrained(ours, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert written == {"bos_token_id": 1, "eos_token_id": [2, 5]}
    back = ref.transformers.GenerationConfig.from_pretrained(tmp_path / "out")
    assert (back.bos_token_id, back.eos_token_id) == (1, [2, 5])
    assert from_pretrained(tmp_path / "out").checkpoint_info.eos_token_id == (2, 5)


@pytest.mark.parametrize(("content", "match"), [
    ('{"eos_token_id": "2"}', "eos_token_id"),
    ('{"eos_token_id": [2, -1]}', "eos_token_id"),
    ("[1, 2]", "generation config"),
])
def test_bad_generation_config_refused(tmp_path, ref, content, match):
    ref.llama(tmp_path)
    (tmp_path / "generation_config.json").write_text(content)
    with pytest.raises(ValueError, match=match):
        from_pretrained(tmp_path)


def test_generate_defaults_eos_from_the_checkpoint(tmp_path, ref):
    """transformers stops where the checkpoint's eos says; so does ours without arguments."""
    hf_model = ref.llama(tmp_path)
    ours = from_pretrained(tmp_path)
    prompt = ref.tokens(1, 4)
    free = ours.generate(prompt, 25, eos_token_id=None)
    eos = int(free[0, 6])  # make the 3rd generated token the end of sequence
    gen = json.loads((tmp_path / "generation_config.json").read_text())
    gen["eos_token_id"] = eos
    (tmp_path / "generation_config.json").write_text(json.dumps(gen))
    ours = from_pretrained(tmp_path)
    hf_model = ref.transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        expected = hf_model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                     do_sample=False, max_new_tokens=25)
    got = ours.generate(prompt, max_new_tokens=25)
    assert torch.equal(got, expected) and got.shape[1] <= 7
    assert ours.generate(prompt, 25, eos_token_id=None).shape[1] == 29


def test_labels_give_the_shifted_cross_entropy(tmp_path, ref):
    hf_model = ref.llama(tmp_path)
    ours = from_pretrained(tmp_path)
    ids = ref.tokens(2, 9)
    labels = ids.clone()
    labels[0, :3] = -100
    with torch.no_grad():
        expected = hf_model(ids, labels=labels)
        out = ours(ids, labels=labels)
        plain = ours(ids)
    # a loaded checkpoint returns an output with .logits in every call, as transformers does
    assert plain.loss is None and torch.equal(out.logits, plain.logits)
    assert abs(float(out.loss) - float(expected.loss)) <= 1e-5
    assert ours(ids, return_dict=True).loss is None
    with pytest.raises(ValueError, match="labels"):
        ours(ids, labels=labels[:, :4])
