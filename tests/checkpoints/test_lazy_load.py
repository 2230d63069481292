"""The lazy loader (issue 36 item 1): ``from_pretrained`` builds the model on the meta device
and materialises one stored tensor at a time in the target dtype.

- the loaded tensors (parameters and buffers, RoPE tables included) are bit-identical, in
  value and dtype, to an eager reference load (the whole model built on the CPU, every tensor
  read at once by safetensors, copied in: what ``checkpoints/io.py`` did before);
- every parameter owns contiguous memory of its own (a tied head shares its embedding's) and
  nothing is left on the meta device;
- each stored tensor is read once, and a ~200 MB bfloat16 folder loads with a peak resident
  memory of at most the model's size + 10 % over the process before the load (measured in a
  subprocess: ``bench/load_bench.py``).
"""

from __future__ import annotations

import json

import pytest
import torch

from transformer_math.checkpoints import files
from transformer_math.checkpoints.adapters import ADAPTERS
from transformer_math.checkpoints.io import (
    config_from_hf,
    expected_shapes,
    from_meta,
    from_pretrained,
    read_config,
    read_tensors,
    save_meta,
    save_pretrained,
    stored_tensors,
)
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.transformer import Transformer

LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8}
LONGROPE = {"rope_type": "longrope", "rope_theta": 10000.0,
            "short_factor": [1.0, 1.1, 1.3, 1.6], "long_factor": [1.0, 2.0, 3.0, 5.0]}


def _eager(path, dtype: torch.dtype, like: Transformer) -> Transformer:
    """The reference load: a CPU-built model, all tensors read at once, copied in (its RoPE
    computed in the precision the loader chose for ``like``)."""
    config, info = config_from_hf(read_config(path))
    adapter = ADAPTERS.get(info.family)
    tensors = {adapter.canonical(k): v for k, v in read_tensors(path).items()}
    with no_init_draws():
        model = Transformer(config)
    for p in model.parameters():
        p.data = p.data.to(dtype)
    own = model.state_dict()
    with torch.no_grad():
        for rule in adapter.rules(config):
            for name, t in zip(rule.ours, rule.load(tensors[rule.theirs]), strict=True):
                own[name].copy_(t.to(dtype))
    if model.rotary is not None:
        model.rotary.set_precision(like.rotary.precision)
    return model


def _tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters(remove_duplicate=False)),
            **dict(model.named_buffers(remove_duplicate=False))}


def _assert_identical(got: torch.nn.Module, want: torch.nn.Module) -> None:
    a, b = _tensors(got), _tensors(want)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert torch.equal(a[name], b[name]), name


def _assert_materialised(model: torch.nn.Module) -> None:
    storages: dict[int, str] = {}
    for name, p in model.named_parameters():  # each shared Parameter once
        assert not p.is_meta and p.is_contiguous(), name
        assert p.storage_offset() == 0
        assert p.untyped_storage().nbytes() == p.numel() * p.element_size(), name
        assert p.untyped_storage().data_ptr() not in storages, (name, storages)
        storages[p.untyped_storage().data_ptr()] = name
    for module in model.modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor):
                assert not value.is_meta, (type(module).__name__, attr)
    assert not any(b.is_meta for b in model.buffers())


CASES = {
    "llama-llama3-tied": lambda ref, p: ref.llama(p, rope=LLAMA3, tie_word_embeddings=True),
    "gpt2": lambda ref, p: ref.gpt2(p),
    "phi3-longrope": lambda ref, p: ref.family("phi3", p, rope_parameters=LONGROPE,
                                               max_position_embeddings=64,
                                               original_max_position_embeddings=16),
    "gemma": lambda ref, p: ref.family("gemma", p),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_lazy_load_is_bit_identical_to_an_eager_load(tmp_path, ref, case, dtype):
    CASES[case](ref, tmp_path)
    got = from_pretrained(tmp_path, dtype=dtype)
    want = _eager(tmp_path, getattr(torch, dtype), got)
    _assert_identical(got, want)
    _assert_materialised(got)
    ids = ref.tokens(2, 12)
    with torch.no_grad():
        assert torch.equal(got(ids).logits, want(ids))


def test_sharded_bfloat16_folder_keeps_its_dtype_and_reads_each_tensor_once(
        tmp_path, ref, monkeypatch):
    ref.llama(tmp_path / "hf", rope=LLAMA3)
    model = from_pretrained(tmp_path / "hf", dtype="bfloat16")
    save_pretrained(model, tmp_path / "sharded", max_shard_bytes=4000)
    assert len(json.loads((tmp_path / "sharded" / "model.safetensors.index.json").read_text())[
        "weight_map"]) > 3
    reads: list[str] = []
    real = files.read_tensor

    def counted(path, entry, start, name=None):
        reads.append(f"{name}:{entry.begin}")
        return real(path, entry, start, name)

    monkeypatch.setattr("transformer_math.checkpoints.io.read_tensor", counted)
    back = from_pretrained(tmp_path / "sharded")
    assert len(reads) == len(set(reads)) == len(stored_tensors(tmp_path / "sharded").shapes)
    assert next(back.parameters()).dtype == torch.bfloat16
    _assert_identical(back, model)
    _assert_materialised(back)


def test_meta_layout_loads_lazily_too(tmp_path, ref):
    ref.llama(tmp_path / "hf")
    model = from_pretrained(tmp_path / "hf")
    save_meta(model, tmp_path / "meta")
    back = from_meta(tmp_path / "meta", dtype="bfloat16")
    _assert_materialised(back)
    for (name, a), b in zip(back.named_parameters(), model.parameters(), strict=True):
        assert a.dtype == torch.bfloat16
        assert torch.equal(a, b.to(torch.bfloat16)), name


def _zero_llama_folder(path, **sizes) -> int:
    """A bfloat16 Llama folder of zeros (config.json + model.safetensors, no model built);
    returns the bytes of its weights."""
    from safetensors.torch import save_file

    hf = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "rms_norm_eps": 1e-5,
          "rope_theta": 10000.0, "max_position_embeddings": 256, "dtype": "bfloat16",
          "tie_word_embeddings": False, **sizes}
    path.mkdir()
    (path / "config.json").write_text(json.dumps(hf))
    config, info = config_from_hf(hf)
    shapes = expected_shapes(config, ADAPTERS.get(info.family).rules(config))
    tensors = {k: torch.zeros(s, dtype=torch.bfloat16) for k, s in shapes.items()}
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    return sum(t.numel() * 2 for t in tensors.values())


def test_peak_memory_of_a_load_is_one_model(tmp_path):
    from transformer_math.bench.load_bench import measure_load

    size = _zero_llama_folder(
        tmp_path / "big", hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, vocab_size=32000)
    _zero_llama_folder(tmp_path / "tiny", hidden_size=32, intermediate_size=48,
                       num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                       vocab_size=64)
    assert size > 200e6
    got = measure_load(tmp_path / "big", "project", first=tmp_path / "tiny", timeout=300)
    assert got["model_bytes"] >= size
    if not got["hwm_reset"]:
        pytest.skip("/proc/self/clear_refs cannot reset the peak RSS here")
    # the old loader (a float32 model, then every stored tensor at once) needed ~3x the size
    assert got["extra"] <= 1.10 * got["model_bytes"], got



def test_load_benchmark_size_is_checked(monkeypatch):
    from transformer_math.bench import harness, load_bench

    assert "load.llama" in [b.name for b in harness.all_benchmarks()]
    monkeypatch.setenv(load_bench.SIZE_VARIABLE, "huge")
    with pytest.raises(ValueError, match="TMATH_LOAD_BENCH_SIZE"):
        load_bench.load_llama()


def test_streamed_random_folder_loads_in_both_libraries(tmp_path):
    import transformers

    from transformer_math.bench.load_bench import write_random_llama_folder

    root = write_random_llama_folder(tmp_path / "m", "small", shard_bytes=20_000_000)
    assert len(list(root.glob("model-*.safetensors"))) > 2
    ours = from_pretrained(root)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(root, dtype="auto")
    assert next(ours.parameters()).dtype == torch.bfloat16
    ids = torch.randint(0, 32000, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b = ours(ids).logits.float(), theirs(ids).logits.float()
    assert float((a - b).abs().max() / b.abs().max()) < 6e-2
