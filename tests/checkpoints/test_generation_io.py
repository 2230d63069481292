"""Generation through ``nn/generation.py`` on loaded checkpoints, checkpoint errors,
save_pretrained round trips and Meta-layout import."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_math.checkpoints.io import (
    from_meta,
    from_pretrained,
    meta_state_dict,
    save_meta,
    save_pretrained,
)
from transformer_math.nn.generation import choose_next_token
from transformer_math.nn.position import RotaryEmbedding

TOL = 1e-5


@pytest.fixture
def llama_dir(tmp_path, ref):
    hf_model = ref.llama(tmp_path / "ref")
    return tmp_path / "ref", hf_model


def test_cached_generation_equals_uncached(llama_dir, ref):
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(3, 4)
    assert torch.equal(ours.generate(prompt, 10), ours.generate(prompt, 10, use_cache=False))


def test_an_all_ones_mask_is_the_same_as_no_mask(llama_dir, ref):
    """generate drops an attention mask without padding (no mask is built per layer and step):
    the tokens equal those of the masked path, which a one-token left pad still takes."""
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(3, 4)
    ones = torch.ones_like(prompt)
    assert torch.equal(ours.generate(prompt, 10, attention_mask=ones), ours.generate(prompt, 10))
    padded = torch.cat([torch.zeros_like(prompt[:, :1]), prompt], dim=1)
    mask = torch.cat([torch.zeros_like(ones[:, :1]), ones], dim=1)
    assert torch.equal(ours.generate(padded, 10, attention_mask=mask)[:, 1:],
                       ours.generate(prompt, 10))


def test_sampling_top_k_and_temperature(llama_dir, ref):
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(2, 4)
    greedy = ours.generate(prompt, 6)
    # top_k = 1 leaves only the arg-max, whatever the temperature
    assert torch.equal(ours.generate(prompt, 6, temperature=2.0, top_k=1,
                                     generator=torch.Generator().manual_seed(0)), greedy)
    # eos_token_id=None: no row stops (a loaded model stops at its eos by default)
    a = ours.generate(prompt, 6, temperature=1.0, top_k=5, eos_token_id=None,
                      generator=torch.Generator().manual_seed(3))
    b = ours.generate(prompt, 6, temperature=1.0, top_k=5, eos_token_id=None,
                      generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)  # explicit generator: reproducible
    # each sampled token is among the 5 most likely under the (uncached) model
    with torch.no_grad():
        logits = ours(a[:, :-1]).logits[:, prompt.shape[1] - 1:]
    top5 = logits.topk(5, dim=-1).indices
    assert (top5 == a[:, prompt.shape[1]:].unsqueeze(-1)).any(-1).all()


def test_sampling_top_p(llama_dir, ref):
    """Nucleus sampling (Holtzman et al. 2020): every sampled token lies in the smallest set of
    most likely tokens whose probability reaches top_p; a tiny top_p leaves only the arg-max."""
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(2, 4)
    assert torch.equal(ours.generate(prompt, 6, temperature=1.0, top_p=1e-6,
                                     generator=torch.Generator().manual_seed(0)),
                       ours.generate(prompt, 6))
    top_p, n0 = 0.6, prompt.shape[1]
    got = ours.generate(prompt, 8, temperature=1.0, top_p=top_p, eos_token_id=None,
                        generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        probs = torch.softmax(ours(got[:, :-1]).logits[:, n0 - 1:], dim=-1)  # (B, 8, V)
    chosen = probs.gather(-1, got[:, n0:].unsqueeze(-1))
    mass_above = (probs * (probs > chosen)).sum(-1)  # mass of strictly more likely tokens
    assert (mass_above < top_p).all()
    # the nucleus is a strict subset here, so the test could fail: some token is excluded
    assert ((probs.sort(-1, descending=True).values.cumsum(-1) < top_p).sum(-1) + 1
            < probs.shape[-1]).all()


def test_eos_stops_the_row_and_pads(llama_dir, ref):
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(2, 4)
    free = ours.generate(prompt, 8)
    eos = int(free[0, 4 + 2])  # row 0 emits this token at step 3
    got = ours.generate(prompt, 8, eos_token_id=eos, pad_token_id=63)
    first = int((free[0, 4:] == eos).nonzero()[0])
    assert torch.equal(got[0, :4 + first + 1], free[0, :4 + first + 1])
    assert (got[0, 4 + first + 1:] == 63).all()
    row1 = free[1, 4:]
    if not (row1 == eos).any():  # row 1 never finishes: decoding runs the full 8 steps
        assert got.shape[1] == 12 and torch.equal(got[1], free[1])
    # all rows finished -> decoding stops early
    alone = ours.generate(prompt[:1], 8, eos_token_id=eos)
    assert alone.shape[1] == 4 + first + 1


def test_generation_uses_the_shared_sampler(llama_dir, ref):
    """One sampling implementation: generate's first sampled token equals choose_next_token on
    the model's last-position logits with the same generator state."""
    ours = from_pretrained(llama_dir[0])
    prompt = ref.tokens(2, 4)
    got = ours.generate(prompt, 1, temperature=0.7, top_k=7, top_p=0.9,
                        generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        logits = ours(prompt).logits[:, -1]
    expected = choose_next_token(logits, temperature=0.7, top_k=7, top_p=0.9,
                                 generator=torch.Generator().manual_seed(11))
    assert torch.equal(got[:, -1:], expected)


@pytest.mark.parametrize("kwargs, match", [
    ({"temperature": -1.0}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 65}, "top_k"),
    ({"top_p": 0.0}, "top_p"),
    ({"top_p": 1.5}, "top_p"),
])
def test_generation_rejects_bad_options(llama_dir, ref, kwargs, match):
    ours = from_pretrained(llama_dir[0])
    with pytest.raises(ValueError, match=match):
        ours.generate(ref.tokens(1, 3), 2, **kwargs)


def test_unknown_architecture(llama_dir):
    path = llama_dir[0]
    cfg = json.loads((path / "config.json").read_text())
    cfg["model_type"], cfg["architectures"] = "mamba", ["MambaForCausalLM"]
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"unknown architecture.*'mamba'.*supported: llama"):
        from_pretrained(path)


def test_missing_unexpected_and_misshapen_tensors(llama_dir):
    path = llama_dir[0]
    original = load_file(str(path / "model.safetensors"))
    sd = dict(original)
    del sd["model.layers.1.mlp.up_proj.weight"]
    sd["model.layers.0.self_attn.extra.weight"] = torch.zeros(2)
    save_file(sd, str(path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"1 missing tensor\(s\): \['model.layers.1.mlp.up_proj"
                                         r".weight'\]; 1 unexpected tensor\(s\)"):
        from_pretrained(path)
    sd = dict(original)
    sd["model.layers.0.self_attn.k_proj.weight"] = torch.zeros(32, 32)
    save_file(sd, str(path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"k_proj.weight' has shape \(32, 32\), expected \(16, 32"):
        from_pretrained(path)


def test_missing_files_and_unsupported_options(tmp_path, llama_dir):
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        from_pretrained(tmp_path)
    path = llama_dir[0]
    (path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"no model\.safetensors"):
        from_pretrained(path)
    cfg = json.loads((path / "config.json").read_text())
    cfg["rope_parameters"] = {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e4,
                              "mscale": 0.7, "original_max_position_embeddings": 16}
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"unsupported parameters \['mscale'\]"):
        from_pretrained(path)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_save_pretrained_round_trip_through_hf(tmp_path, ref, family):
    import transformers

    hf_cls = transformers.LlamaForCausalLM if family == "llama" else transformers.GPT2LMHeadModel
    if family == "llama":
        ref.llama(tmp_path / "a", rope={"rope_type": "llama3", "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 16,
                                        "rope_theta": 10000.0})
    else:
        ref.gpt2(tmp_path / "a")
    ours = from_pretrained(tmp_path / "a")
    save_pretrained(ours, tmp_path / "b", max_shard_bytes=20_000)  # forces several shards
    assert (tmp_path / "b" / "model.safetensors.index.json").is_file()
    again = from_pretrained(tmp_path / "b")
    assert again.config == ours.config and again.checkpoint_info == ours.checkpoint_info
    save_pretrained(ours, tmp_path / "c")  # single file
    assert torch.equal(from_pretrained(tmp_path / "c")(ref.tokens(1, 5)).logits,
                       ours(ref.tokens(1, 5)).logits)
    reloaded = hf_cls.from_pretrained(tmp_path / "b").eval()
    ids = ref.tokens(2, 9)
    with torch.no_grad():
        base = ours(ids).logits
        assert torch.equal(again(ids).logits, base)
        assert (reloaded(ids).logits - base).abs().max() <= TOL


def test_meta_layout_import_needs_the_permutation(tmp_path, llama_dir, ref):
    path, hf_model = llama_dir
    ours = from_pretrained(path)
    meta = save_meta(ours, tmp_path / "meta")
    c = ours.config
    params = json.loads((meta / "params.json").read_text())
    assert params == {"dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "norm_eps": 1e-5,
                      "rope_theta": 10000.0, "max_seq_len": 32}
    assert from_meta(meta).config == c
    ids = ref.tokens(2, 12)
    with torch.no_grad():
        expected = hf_model(ids).logits
        permuted = from_meta(meta)(ids).logits
        unpermuted = from_meta(meta, permute_qk=False)(ids).logits
    assert (permuted - expected).abs().max() <= TOL
    assert (unpermuted - expected).abs().max() > 100 * TOL  # the interleaved layout read as half
    # independent check that the exported tensors really are Meta's layout: unpermuted, they
    # reproduce the reference when every attention uses the interleaved (RoFormer) rotation
    native = from_meta(meta, permute_qk=False)
    interleaved = RotaryEmbedding(c.dim_per_head, base=c.rope_theta, layout="interleaved")
    native.set_rotary(interleaved)
    with torch.no_grad():
        assert (native(ids).logits - expected).abs().max() <= TOL


def test_meta_state_dict_is_the_inverse_of_from_meta(tmp_path, llama_dir):
    ours = from_pretrained(llama_dir[0])
    meta = save_meta(ours, tmp_path / "meta")
    sd = torch.load(meta / "consolidated.00.pth", weights_only=True)
    assert sd.keys() == meta_state_dict(from_meta(meta)).keys()
    assert all(torch.equal(sd[k], v) for k, v in meta_state_dict(from_meta(meta)).items())
    sd["layers.0.attention.wq.weight"] = torch.zeros(8, 32)
    torch.save(sd, meta / "consolidated.00.pth")
    with pytest.raises(ValueError, match=r"wq.weight' has shape \(8, 32\), expected \(32, 32\) "
                                         r"from .*params.json"):
        from_meta(meta)


def test_legacy_gpt2_names_and_mask_buffers(tmp_path, ref):
    """Old GPT-2 files: no ``transformer.`` prefix and causal-mask buffers ``attn.bias``."""
    hf_model = ref.gpt2(tmp_path)
    sd = load_file(str(tmp_path / "model.safetensors"))
    legacy = {k.removeprefix("transformer."): v for k, v in sd.items()}
    legacy["h.0.attn.bias"] = torch.ones(1, 1, 48, 48)
    save_file(legacy, str(tmp_path / "model.safetensors"))
    ids = ref.tokens(1, 10)
    with torch.no_grad():
        assert (from_pretrained(tmp_path)(ids).logits - hf_model(ids).logits).abs().max() <= TOL
