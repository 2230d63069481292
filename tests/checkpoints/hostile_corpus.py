"""A corpus of hostile and careless checkpoint folders, built in code, and a runner that tries
every folder under an address-space limit (``tests/checkpoints/test_hostile.py`` runs this file
in ONE subprocess and asserts on its output).

Usage: ``python hostile_corpus.py WORKDIR`` prints one JSON line per folder::

    {"name": ..., "kind": "bad" | "good", "ok": bool, "type": exception class, "msg": ...,
     "inspect_code": exit code of ``tmath inspect``, "inspect_err": its stderr,
     "outside_opened": [sentinel paths Python opened]}

Order of the runner (the brief of issue 15): import torch first, then cap the address space at
(current ``VmSize``) + 2 GiB with ``RLIMIT_AS``, then build and try every folder. A folder that
makes the loader allocate more than that fails with MemoryError (reported, never a crash).

Each entry of :data:`EXPECTED` names the folder, the loader (``hf`` or ``meta``), the exception
class(es) it must raise and a substring its message must contain (lower case).
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch  # first: its address space is the baseline of the limit

GIB = 1 << 30


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def limit_address_space(extra: int = 2 * GIB) -> int:
    """Cap RLIMIT_AS at the current address space + ``extra``; returns the cap."""
    cap = _vm_size() + extra
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return cap


# ------------------------------------------------------------------------------ building blocks


def _tiny_llama(seed: int = 0) -> Any:
    from transformer_math.checkpoints.adapters.llama import preset
    from transformer_math.nn.transformer import Transformer

    torch.manual_seed(seed)
    return Transformer(preset(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                              num_kv_heads=2, intermediate_size=48, max_seq_len=32)).eval()


def _tiny_gpt2(seed: int = 0) -> Any:
    from transformer_math.checkpoints.adapters.gpt2 import preset
    from transformer_math.nn.transformer import Transformer

    torch.manual_seed(seed)
    return Transformer(preset(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                              intermediate_size=128, max_seq_len=48)).eval()


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.update(values)


def _header(path: Path) -> tuple[dict[str, Any], bytes]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _write_header(path: Path, header: dict[str, Any], data: bytes,
                  length: int | None = None) -> None:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + data)


def _edit_header(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    header, data = _header(path)
    change(header)
    _write_header(path, header, data)


def _first_weight(header: dict[str, Any]) -> str:
    return sorted(k for k in header if k != "__metadata__")[0]


class _Exploit:
    """A pickle that would create ``path`` when unpickled without ``weights_only``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.path}",))


# ------------------------------------------------------------------------------ the corpus


def build(work: Path) -> dict[str, Path]:
    """Write every folder of the corpus under ``work``; returns name -> folder."""
    from transformer_math.checkpoints.io import save_meta, save_pretrained

    work.mkdir(parents=True, exist_ok=True)
    outside = work / "outside"
    outside.mkdir()
    llama, gpt2 = _tiny_llama(), _tiny_gpt2()
    save_pretrained(llama, outside / "llama")                 # a valid checkpoint outside
    (outside / "x.safetensors").write_bytes((outside / "llama/model.safetensors").read_bytes())
    (outside / "config.json").write_bytes((outside / "llama/config.json").read_bytes())
    folders: dict[str, Path] = {}

    def new(name: str, family: str = "llama", shards: int | None = None) -> Path:
        root = work / name
        if family == "meta":
            save_meta(llama, root)
        else:
            save_pretrained(llama if family == "llama" else gpt2, root,
                            max_shard_bytes=shards)
        folders[name] = root
        return root

    def index_of(root: Path) -> Path:
        return root / "model.safetensors.index.json"

    def shard_name(root: Path, name: str) -> None:
        def change(d: dict[str, Any]) -> None:
            first = sorted(d["weight_map"])[0]
            d["weight_map"][first] = name
        _edit_json(index_of(root), change)

    # -- good direction
    new("good_llama")
    new("good_gpt2", "gpt2")
    new("good_llama_sharded", shards=20000)
    new("good_meta", "meta")
    r = new("good_symlink_inside", shards=20000)  # a shard linked to a file inside: fine
    target = sorted(r.glob("model-*.safetensors"))[0]
    os.rename(target, r / "blob.bin")
    os.symlink("blob.bin", target)

    # -- files outside the folder
    for name, entry in (("shard_dotdot", "../outside/x.safetensors"),
                        ("shard_absolute_passwd", "/etc/passwd"),
                        ("shard_proc_environ", "/proc/self/environ"),
                        ("shard_absolute_outside", str(outside / "x.safetensors")),
                        ("shard_subfolder", "sub/model.safetensors"),
                        ("shard_dot", "."),
                        ("shard_nul", "a\x00b.safetensors"),
                        ("shard_missing_outside", "../outside/nope.safetensors")):
        shard_name(new(name, shards=20000), entry)
    r = new("shard_symlink_outside", shards=20000)
    first = sorted(r.glob("model-*.safetensors"))[0]
    first.unlink()
    os.symlink(outside / "x.safetensors", first)
    r = new("shard_symlink_relative_outside", shards=20000)
    first = sorted(r.glob("model-*.safetensors"))[0]
    first.unlink()
    os.symlink("../outside/x.safetensors", first)
    r = new("single_symlink_outside")
    (r / "model.safetensors").unlink()
    os.symlink(outside / "llama/model.safetensors", r / "model.safetensors")
    r = new("config_symlink_outside")
    (r / "config.json").unlink()
    os.symlink(outside / "config.json", r / "config.json")
    r = new("config_symlink_passwd")
    (r / "config.json").unlink()
    os.symlink("/etc/passwd", r / "config.json")
    r = new("index_symlink_outside", shards=20000)
    index_of(r).rename(outside / f"{r.name}.index.json")
    os.symlink(outside / f"{r.name}.index.json", index_of(r))
    r = new("bin_symlink_outside")
    (r / "model.safetensors").unlink()
    torch.save(_tiny_llama().state_dict(), outside / "sd.bin")
    os.symlink(outside / "sd.bin", r / "pytorch_model.bin")
    r = new("meta_symlink_outside", "meta")
    (r / "consolidated.00.pth").unlink()
    os.symlink(outside / "sd.bin", r / "consolidated.00.pth")
    r = new("folder_symlink_loop", shards=20000)
    first = sorted(r.glob("model-*.safetensors"))[0]
    first.unlink()
    os.symlink(first.name, first)

    # -- the index file
    r = new("index_bad_json", shards=20000)
    index_of(r).write_text("{not json")
    r = new("index_not_object", shards=20000)
    index_of(r).write_text("[1, 2]")
    r = new("index_weight_map_list", shards=20000)
    _edit_json(index_of(r), _set(weight_map=["a", "b"]))
    shard_name(new("index_value_int", shards=20000), 5)  # type: ignore[arg-type]
    r = new("index_shard_lacks_tensor", shards=20000)

    def misplace(d: dict[str, Any]) -> None:
        files = sorted(set(d["weight_map"].values()))
        here = d["weight_map"]["lm_head.weight"]
        d["weight_map"]["lm_head.weight"] = files[1] if here == files[0] else files[0]
    _edit_json(index_of(r), misplace)

    # -- config values of the wrong type
    cfg = "config.json"
    for name, family, values in (
            ("tie_string_false", "llama", {"tie_word_embeddings": "false"}),
            ("tie_int", "llama", {"tie_word_embeddings": 0}),
            ("attention_bias_string", "llama", {"attention_bias": "true"}),
            ("layers_float", "llama", {"num_hidden_layers": 2.0}),
            ("layers_bool", "llama", {"num_hidden_layers": True}),
            ("layers_string", "llama", {"num_hidden_layers": "2"}),
            ("vocab_negative", "llama", {"vocab_size": -64}),
            ("eps_string", "llama", {"rms_norm_eps": "1e-5"}),
            ("eps_nan", "llama", {"rms_norm_eps": float("nan")}),
            ("theta_inf", "llama", {"rope_parameters": {"rope_type": "default",
                                                        "rope_theta": float("inf")}}),
            ("max_pos_string", "llama", {"max_position_embeddings": "32"}),
            ("act_list", "llama", {"hidden_act": ["silu"]}),
            ("gpt2_tie_string", "gpt2", {"tie_word_embeddings": "false"}),
            ("gpt2_n_embd_float", "gpt2", {"n_embd": 32.5}),
            ("gpt2_eps_string", "gpt2", {"layer_norm_epsilon": "1e-5"}),
            ("gpt2_n_inner_string", "gpt2", {"n_inner": "128"}),
            ("eos_string", "llama", {"eos_token_id": "2"}),
            ("dtype_int", "llama", {"dtype": 5}),
            ("model_type_list", "llama", {"model_type": ["llama"]}),
            ("architectures_string", "llama", {"model_type": None,
                                               "architectures": "LlamaForCausalLM"}),
            ("kv_heads_not_dividing", "llama", {"num_key_value_heads": 3}),
            ("partial_rotary_tiny", "llama", {"rope_parameters": {
                "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.01}}),
            # config bombs: sizes the headers do not hold
            ("bomb_layers", "llama", {"num_hidden_layers": 10**6}),
            ("bomb_layers_huge", "llama", {"num_hidden_layers": 10**12}),
            ("bomb_vocab_2_26", "llama", {"vocab_size": 2**26}),
            ("bomb_vocab_2_20", "llama", {"vocab_size": 2**20}),
            ("bomb_hidden_1e9", "llama", {"hidden_size": 10**9}),
            ("bomb_hidden_2_20", "llama", {"hidden_size": 2**20, "head_dim": 8}),
            ("bomb_head_dim", "llama", {"head_dim": 2**20}),
            ("bomb_heads", "llama", {"num_attention_heads": 2**20, "num_key_value_heads": 2**20,
                                     "head_dim": 2**20}),
            ("bomb_ffn", "llama", {"intermediate_size": 2**20}),
            ("bomb_all", "llama", {"vocab_size": 2**20, "hidden_size": 2**20,
                                   "num_hidden_layers": 2**20, "intermediate_size": 2**20}),
            ("bomb_gpt2_positions", "gpt2", {"n_positions": 2**20}),
            ("bomb_gpt2_layers", "gpt2", {"n_layer": 10**6}),
            # rope_scaling / rope_parameters
            ("rope_factor_string", "llama", {"rope_parameters": {
                "rope_type": "linear", "factor": "2", "rope_theta": 10000.0}}),
            ("rope_factor_negative", "llama", {"rope_parameters": {
                "rope_type": "linear", "factor": -2.0, "rope_theta": 10000.0}}),
            ("rope_factor_inf", "llama", {"rope_parameters": {
                "rope_type": "linear", "factor": float("inf"), "rope_theta": 10000.0}}),
            ("rope_list", "llama", {"rope_parameters": [1, 2]}),
            ("rope_legacy_string", "llama", {"rope_parameters": None,
                                             "rope_scaling": {"type": "linear", "factor": "2"}}),
            ("rope_legacy_list", "llama", {"rope_parameters": None, "rope_scaling": ["linear"]}),
            ("rope_type_list", "llama", {"rope_parameters": {"rope_type": ["linear"],
                                                             "factor": 2.0}}),
            ("rope_unknown_key", "llama", {"rope_parameters": {"rope_type": "linear",
                                                               "factor": 2.0, "bogus": 1}}),
            ("rope_yarn_string", "llama", {"rope_parameters": {
                "rope_type": "yarn", "factor": 2.0, "beta_fast": "32",
                "original_max_position_embeddings": 16}}),
    ):
        _edit_json(new(name, family) / cfg, _set(**values))
    r = new("config_bad_json")
    (r / cfg).write_text("{")
    r = new("config_list")
    (r / cfg).write_text("[]")
    r = new("config_missing_key")
    _edit_json(r / cfg, lambda d: d.pop("hidden_size"))
    r = new("config_deep_nesting")
    (r / cfg).write_text("[" * 200_000)
    r = new("config_fifo")
    (r / cfg).unlink()
    os.mkfifo(r / cfg)
    r = new("config_directory")
    (r / cfg).unlink()
    (r / cfg).mkdir()

    # -- forged safetensors headers and broken files
    st = "model.safetensors"
    r = new("st_empty")
    (r / st).write_bytes(b"")
    r = new("st_tiny")
    (r / st).write_bytes(b"\x01\x02\x03")
    r = new("st_header_len_huge")
    header, data = _header(r / st)
    _write_header(r / st, header, data, length=2**62)
    r = new("st_header_len_past_file")
    header, data = _header(r / st)
    _write_header(r / st, header, data, length=len(json.dumps(header)) + len(data) + 64)
    r = new("st_header_not_json")
    (r / st).write_bytes(struct.pack("<Q", 8) + b"not json" + b"\0" * 16)
    r = new("st_header_list")
    (r / st).write_bytes(struct.pack("<Q", 8) + b"[1,2,3] ")
    r = new("st_truncated")
    raw = (r / st).read_bytes()
    (r / st).write_bytes(raw[: len(raw) // 2])
    r = new("st_offsets_past_file")

    def past(h: dict[str, Any]) -> None:
        h[_first_weight(h)]["data_offsets"] = [0, 2**40]
    _edit_header(r / st, past)
    r = new("st_offsets_overlap")

    def overlap(h: dict[str, Any]) -> None:
        names = sorted(k for k in h if k != "__metadata__")
        h[names[1]]["data_offsets"] = h[names[0]]["data_offsets"]
    _edit_header(r / st, overlap)
    r = new("st_dtype_int")

    def int_dtype(h: dict[str, Any]) -> None:
        h[_first_weight(h)]["dtype"] = "I32"
    _edit_header(r / st, int_dtype)
    r = new("st_dtype_bogus")

    def bogus_dtype(h: dict[str, Any]) -> None:
        h[_first_weight(h)]["dtype"] = "Q9"
    _edit_header(r / st, bogus_dtype)
    r = new("st_shape_bytes_mismatch")

    def wrong_shape(h: dict[str, Any]) -> None:
        h["model.embed_tokens.weight"]["shape"] = [2**20, 2**20]
    _edit_header(r / st, wrong_shape)
    r = new("st_shape_negative")

    def negative(h: dict[str, Any]) -> None:
        h["model.norm.weight"]["shape"] = [-32]
    _edit_header(r / st, negative)
    r = new("st_shape_string")

    def string_shape(h: dict[str, Any]) -> None:
        h["model.norm.weight"]["shape"] = ["32"]
    _edit_header(r / st, string_shape)
    r = new("st_fifo")
    (r / st).unlink()
    os.mkfifo(r / st)
    r = new("st_header_deep_nesting")
    deep = b"[" * 100_000
    (r / st).write_bytes(struct.pack("<Q", len(deep)) + deep)
    r = new("st_directory")
    (r / st).unlink()
    (r / st).mkdir()
    r = new("st_bad_shard", shards=20000)
    sorted(r.glob("model-*.safetensors"))[0].write_bytes(b"\0" * 100)
    r = new("bin_garbage")
    (r / st).unlink()
    (r / "pytorch_model.bin").write_bytes(b"PK\x03\x04 this is not a zip" * 10)
    r = new("bin_pickle_exploit")
    (r / st).unlink()
    torch.save({"x": _Exploit(str(work / "PWNED"))}, r / "pytorch_model.bin")
    r = new("bin_int_tensor")
    (r / st).unlink()
    from transformer_math.checkpoints.io import export_state_dict
    sd = export_state_dict(llama)
    sd["model.norm.weight"] = torch.ones(32, dtype=torch.int32)
    torch.save(sd, r / "pytorch_model.bin")

    # -- Meta layout
    for name, values in (("meta_dim_string", {"dim": "32"}),
                         ("meta_layers_bomb", {"n_layers": 10**6}),
                         ("meta_layers_float", {"n_layers": 2.0}),
                         ("meta_eps_string", {"norm_eps": "1e-5"}),
                         ("meta_heads_bomb", {"n_heads": 2**20, "n_kv_heads": 2**20})):
        _edit_json(new(name, "meta") / "params.json", _set(**values))
    r = new("meta_params_bad_json", "meta")
    (r / "params.json").write_text("{{")
    return folders


#: name -> (loader, exception class names, a lower-case substring of the message)
EXPECTED: dict[str, tuple[str, tuple[str, ...], str]] = {
    "shard_dotdot": ("hf", ("ValueError",), "../outside/x.safetensors"),
    "shard_absolute_passwd": ("hf", ("ValueError",), "/etc/passwd"),
    "shard_proc_environ": ("hf", ("ValueError",), "/proc/self/environ"),
    "shard_absolute_outside": ("hf", ("ValueError",), "plain file name"),
    "shard_subfolder": ("hf", ("ValueError",), "sub/model.safetensors"),
    "shard_dot": ("hf", ("ValueError",), "plain file name"),
    "shard_nul": ("hf", ("ValueError",), "plain file name"),
    "shard_missing_outside": ("hf", ("ValueError",), "../outside/nope.safetensors"),
    "shard_symlink_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "shard_symlink_relative_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "single_symlink_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "config_symlink_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "config_symlink_passwd": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "index_symlink_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "bin_symlink_outside": ("hf", ("ValueError",), "outside the checkpoint folder"),
    "meta_symlink_outside": ("meta", ("ValueError",), "outside the checkpoint folder"),
    "folder_symlink_loop": ("hf", ("ValueError",), "symbolic links"),
    "index_bad_json": ("hf", ("ValueError",), "not valid json"),
    "index_not_object": ("hf", ("ValueError",), "json object"),
    "index_weight_map_list": ("hf", ("ValueError",), "weight_map"),
    "index_value_int": ("hf", ("ValueError",), "must be a file name string"),
    "index_shard_lacks_tensor": ("hf", ("ValueError",), "lm_head.weight"),
    "tie_string_false": ("hf", ("ValueError",), "tie_word_embeddings"),
    "tie_int": ("hf", ("ValueError",), "tie_word_embeddings"),
    "attention_bias_string": ("hf", ("ValueError",), "attention_bias"),
    "layers_float": ("hf", ("ValueError",), "num_hidden_layers"),
    "layers_bool": ("hf", ("ValueError",), "num_hidden_layers"),
    "layers_string": ("hf", ("ValueError",), "num_hidden_layers"),
    "vocab_negative": ("hf", ("ValueError",), "vocab_size"),
    "eps_string": ("hf", ("ValueError",), "rms_norm_eps"),
    "eps_nan": ("hf", ("ValueError",), "rms_norm_eps"),
    "theta_inf": ("hf", ("ValueError",), "rope_theta"),
    "max_pos_string": ("hf", ("ValueError",), "max_position_embeddings"),
    "act_list": ("hf", ("ValueError",), "hidden_act"),
    "gpt2_tie_string": ("hf", ("ValueError",), "tie_word_embeddings"),
    "gpt2_n_embd_float": ("hf", ("ValueError",), "n_embd"),
    "gpt2_eps_string": ("hf", ("ValueError",), "layer_norm_epsilon"),
    "gpt2_n_inner_string": ("hf", ("ValueError",), "n_inner"),
    "eos_string": ("hf", ("ValueError",), "eos_token_id"),
    "dtype_int": ("hf", ("ValueError",), "dtype"),
    "model_type_list": ("hf", ("ValueError",), "model_type"),
    "architectures_string": ("hf", ("ValueError",), "architectures"),
    "kv_heads_not_dividing": ("hf", ("ValueError",), "num_kv_heads (3)"),
    "partial_rotary_tiny": ("hf", ("ValueError",), "partial_rotary_factor 0.01"),
    "bomb_layers": ("hf", ("ValueError",), "num_hidden_layers"),
    "bomb_layers_huge": ("hf", ("ValueError",), "num_hidden_layers"),
    "bomb_vocab_2_26": ("hf", ("ValueError",), "vocab_size"),
    "bomb_vocab_2_20": ("hf", ("ValueError",), "model.embed_tokens.weight"),
    "bomb_hidden_1e9": ("hf", ("ValueError",), "hidden_size"),
    "bomb_hidden_2_20": ("hf", ("ValueError",), "model.embed_tokens.weight"),
    "bomb_head_dim": ("hf", ("ValueError",), "q_proj"),
    "bomb_heads": ("hf", ("ValueError",), "more than max_parameters"),
    "bomb_ffn": ("hf", ("ValueError",), "gate_proj"),
    "bomb_all": ("hf", ("ValueError",), "more than max_parameters"),
    "bomb_gpt2_positions": ("hf", ("ValueError",), "wpe"),
    "bomb_gpt2_layers": ("hf", ("ValueError",), "n_layer"),
    "rope_factor_string": ("hf", ("ValueError",), "factor"),
    "rope_factor_negative": ("hf", ("ValueError",), "factor"),
    "rope_factor_inf": ("hf", ("ValueError",), "factor"),
    "rope_list": ("hf", ("ValueError",), "rope_parameters"),
    "rope_legacy_string": ("hf", ("ValueError",), "factor"),
    "rope_legacy_list": ("hf", ("ValueError",), "rope_scaling"),
    "rope_type_list": ("hf", ("ValueError",), "rope_type"),
    "rope_unknown_key": ("hf", ("ValueError",), "bogus"),
    "rope_yarn_string": ("hf", ("ValueError",), "beta_fast"),
    "config_bad_json": ("hf", ("ValueError",), "not valid json"),
    "config_list": ("hf", ("ValueError",), "json object"),
    "config_missing_key": ("hf", ("ValueError",), "hidden_size"),
    "config_deep_nesting": ("hf", ("ValueError",), "not valid json"),
    "config_fifo": ("hf", ("ValueError",), "not a regular file"),
    "config_directory": ("hf", ("ValueError", "FileNotFoundError"), "config.json"),
    "st_empty": ("hf", ("ValueError",), "model.safetensors"),
    "st_tiny": ("hf", ("ValueError",), "model.safetensors"),
    "st_header_len_huge": ("hf", ("ValueError",), "header"),
    "st_header_len_past_file": ("hf", ("ValueError",), "header"),
    "st_header_not_json": ("hf", ("ValueError",), "header"),
    "st_header_list": ("hf", ("ValueError",), "header"),
    "st_truncated": ("hf", ("ValueError",), "model.safetensors"),
    "st_offsets_past_file": ("hf", ("ValueError",), "data_offsets"),
    "st_offsets_overlap": ("hf", ("ValueError",), "data_offsets"),
    "st_dtype_int": ("hf", ("ValueError",), "floating point"),
    "st_dtype_bogus": ("hf", ("ValueError",), "dtype"),
    "st_shape_bytes_mismatch": ("hf", ("ValueError",), "model.embed_tokens.weight"),
    "st_shape_negative": ("hf", ("ValueError",), "shape"),
    "st_shape_string": ("hf", ("ValueError",), "shape"),
    "st_fifo": ("hf", ("ValueError",), "not a regular file"),
    "st_header_deep_nesting": ("hf", ("ValueError",), "header"),
    "st_directory": ("hf", ("ValueError",), "not a regular file"),
    "st_bad_shard": ("hf", ("ValueError",), "safetensors"),
    "bin_garbage": ("hf", ("ValueError",), "pytorch_model.bin"),
    "bin_pickle_exploit": ("hf", ("ValueError",), "weights only load failed"),
    "bin_int_tensor": ("hf", ("ValueError",), "floating point"),
    "meta_dim_string": ("meta", ("ValueError",), "dim"),
    "meta_layers_bomb": ("meta", ("ValueError",), "n_layers"),
    "meta_layers_float": ("meta", ("ValueError",), "n_layers"),
    "meta_eps_string": ("meta", ("ValueError",), "norm_eps"),
    "meta_heads_bomb": ("meta", ("ValueError",), "num_heads"),
    "meta_params_bad_json": ("meta", ("ValueError",), "not valid json"),
}
GOOD = {"good_llama": "hf", "good_gpt2": "hf", "good_llama_sharded": "hf", "good_meta": "meta",
        "good_symlink_inside": "hf"}


def _inspect(root: Path) -> tuple[int, str]:
    """``tmath inspect ROOT`` in process: (exit code, stderr)."""
    import contextlib
    import io

    from transformer_math.cli import app

    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            app(["inspect", str(root)], prog_name="tmath")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # an escaped traceback
            return -1, f"TRACEBACK {type(exc).__name__}: {exc}"[:600]
    return code, err.getvalue()


def run(work: Path, only: set[str] | None = None) -> None:
    """Build the corpus under ``work`` (after the address-space cap) and print one JSON line
    per folder (only the folders named in ``only`` when given)."""
    limit_address_space()
    sentinels = ("/etc/passwd", "/proc/self/environ", str(work / "outside"))
    opened: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(
                args[0], str | bytes | os.PathLike):
            p = os.fsdecode(args[0])
            if p.startswith(sentinels):
                opened.append(p)

    folders = build(work)
    from transformer_math.checkpoints.io import from_meta, from_pretrained

    sys.addaudithook(hook)
    reference = {"llama": _tiny_llama(), "gpt2": _tiny_gpt2()}
    ids = torch.arange(3, 19).reshape(2, 8)
    for name, root in folders.items():
        if only is not None and name not in only:
            continue
        loader = GOOD.get(name) or EXPECTED[name][0]
        opened.clear()
        start = time.perf_counter()
        line: dict[str, Any] = {"name": name, "kind": "good" if name in GOOD else "bad"}
        try:
            model = (from_meta if loader == "meta" else from_pretrained)(root)
            ref = reference["gpt2" if "gpt2" in name else "llama"]
            with torch.no_grad():
                diff = (model(ids).logits - ref(ids)).abs().max().item()
            line.update(ok=True, max_abs_diff=diff)
        except BaseException as exc:  # the record is the point
            line.update(ok=False, type=type(exc).__name__, msg=str(exc)[:500],
                        where=traceback.extract_tb(exc.__traceback__)[-1].filename)
        line["seconds"] = round(time.perf_counter() - start, 3)  # informative, never asserted
        line["outside_opened"] = sorted(set(opened))
        if loader == "hf":
            code, err = _inspect(root)
            line.update(inspect_code=code, inspect_err=err[-600:])
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    run(Path(sys.argv[1]), set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None)
