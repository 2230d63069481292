"""Loading a checkpoint folder: ``checkpoints.io.from_pretrained`` against transformers'
``AutoModelForCausalLM.from_pretrained`` on the same bfloat16 Llama folder (issue 36 item 1).

Two quantities, both as ratios project / transformers (below 1: the project needs less):

- wall time of one load, measured by the harness (alternating, in this process, the folder's
  pages in the OS cache for both after the warm-up);
- peak resident memory of one load, measured once per loader in a fresh subprocess
  (:func:`measure_load`): the process's high-water mark ``VmHWM`` (``proc(5)``) is reset
  after the imports (``/proc/self/clear_refs`` 5), so the peak minus the resident size
  before the load is what the load itself needed. It is reported with the model's size (its
  parameters' bytes): the project's loader materialises one tensor at a time
  (``checkpoints/io.py``), so its peak is the model plus one stored tensor.

The folder is a random ``LlamaForCausalLM`` made by transformers in a temporary directory
(never kept). ``TMATH_LOAD_BENCH_SIZE`` picks the config: ``small`` (default: the Llama-3.2-1B
layout scaled to ~50 MB, seconds) or ``1b`` (the published Llama-3.2-1B config,
``meta-llama/Llama-3.2-1B/config.json``: 1.24e9 parameters, 2.47 GB in bfloat16; making the
folder takes minutes and ~2.5 GB of disk). The ratio of peak RSS is in the description (it is
measured once, not timed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from transformer_math.bench.harness import Benchmark, benchmark

SIZE_VARIABLE = "TMATH_LOAD_BENCH_SIZE"

_LLAMA_32_1B: dict[str, Any] = {
    "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 8192},
}
_LLAMA_31_8B: dict[str, Any] = {
    **_LLAMA_32_1B, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "head_dim": 128, "tie_word_embeddings": False,
    "rope_parameters": {**_LLAMA_32_1B["rope_parameters"], "factor": 8.0},
}
SIZES: dict[str, dict[str, Any]] = {
    "8b": _LLAMA_31_8B,
    "1b": _LLAMA_32_1B,
    "small": {**_LLAMA_32_1B, "hidden_size": 512, "intermediate_size": 2048,
              "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
              "vocab_size": 32000},
}
"""Llama configs (transformers' ``LlamaConfig`` keyword arguments) by size name."""


def write_random_llama_folder(path: str | Path, size: str = "8b", seed: int = 0,
                              shard_bytes: int = 2 << 30) -> Path:
    """Save a random bfloat16 Llama of :data:`SIZES` ``[size]`` under ``path`` without ever
    holding the model: transformers' config and its meta-device model give the names and
    shapes, each tensor is drawn N(0, 0.02^2) (norm weights 1) from a seeded
    ``torch.Generator`` and written in shards of at most ``shard_bytes`` with an index, so the
    memory needed is one shard (the 8B folder of the doctor's closing run: 16 GB of disk)."""
    import json

    import torch
    import transformers
    from safetensors.torch import save_file

    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    config = transformers.LlamaConfig(**SIZES[size])
    config.dtype = "bfloat16"
    with torch.device("meta"):
        skeleton = transformers.LlamaForCausalLM(config)
    shapes = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    if config.tie_word_embeddings:
        shapes.pop("lm_head.weight", None)
    g = torch.Generator().manual_seed(seed)
    groups: list[list[str]] = [[]]
    size_now = 0
    for name in shapes:
        nbytes = 2 * int(torch.Size(shapes[name]).numel())
        if groups[-1] and size_now + nbytes > shard_bytes:
            groups.append([])
            size_now = 0
        groups[-1].append(name)
        size_now += nbytes
    weight_map = {}
    for k, names in enumerate(groups, start=1):
        shard = {}
        for name in names:
            if name.endswith("norm.weight"):
                shard[name] = torch.ones(shapes[name], dtype=torch.bfloat16)
            else:
                shard[name] = (0.02 * torch.randn(shapes[name], generator=g)).to(torch.bfloat16)
        fname = f"model-{k:05d}-of-{len(groups):05d}.safetensors"
        save_file(shard, str(root / fname), metadata={"format": "pt"})
        weight_map.update({name: fname for name in names})
        del shard
    config.save_pretrained(root)
    (root / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 2 * sum(torch.Size(s).numel() for s in shapes.values())},
         "weight_map": weight_map}, indent=2))
    return root


def make_llama_folder(path: str | Path, size: str = "small", seed: int = 0) -> Path:
    """Save a random bfloat16 ``LlamaForCausalLM`` of :data:`SIZES` ``[size]`` under ``path``
    (transformers' own initialisation, on a forked global RNG)."""
    import torch
    import transformers

    from transformer_math.nn.init import private_rng

    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    if size == "8b":  # transformers' own init would hold 16 GB at once
        return write_random_llama_folder(path, size, seed)
    with private_rng(seed):
        config = transformers.LlamaConfig(**SIZES[size])
        model = transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(path)
    del model
    return Path(path)


_CHILD = r"""
import json, sys, time
import torch
loader, path, dtype, first = sys.argv[1:5]
if loader == "transformers":
    import transformers
    from transformers import LlamaForCausalLM  # the modeling code, imported before the reset
    load = lambda: transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
else:
    from transformer_math.checkpoints.io import from_pretrained
    load = lambda: from_pretrained(path, dtype=dtype)
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1
if first:
    load_first = load
    path, keep = first, path
    load_first()
    path = keep
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    reset = True
except OSError:
    reset = False
before = status("VmRSS")
start = time.perf_counter()
model = load()
seconds = time.perf_counter() - start
peak = status("VmHWM")
seen, size = set(), 0
for t in [*model.parameters(), *model.buffers()]:
    if t.untyped_storage().data_ptr() not in seen:
        seen.add(t.untyped_storage().data_ptr())
        size += t.untyped_storage().nbytes()
with torch.no_grad():  # read every weight once: memory-mapped pages become resident
    for t in model.parameters():
        t.sum()
used = status("VmHWM")
print(json.dumps({"loader": loader, "before": before, "peak": peak, "seconds": seconds,
                  "model_bytes": size, "hwm_reset": reset, "used": used}))
"""


def measure_load(path: str | Path, loader: str = "project", dtype: str = "auto",
                 first: str | Path | None = None, timeout: float = 1800.0) -> dict[str, Any]:
    """One load of ``path`` by ``loader`` ("project" or "transformers") in a fresh Python
    process: ``before`` (resident bytes after the imports), ``peak`` (the high-water mark
    during the load, reset after the imports when the kernel allows: ``hwm_reset``),
    ``extra`` = peak - before, ``seconds``, ``model_bytes`` (every distinct parameter and
    buffer storage) and ``after_use`` = the high-water mark once every parameter was read,
    minus ``before`` (transformers keeps a matching-dtype safetensors tensor as a view of the
    memory-mapped file, whose pages become resident only when read). ``first``: a folder
    loaded (and dropped) before the measurement, so that the one-time imports of a first load
    (torch's meta-device kernels: ~0.1 GB) are not counted."""
    if loader not in ("project", "transformers"):
        raise ValueError(f"loader must be 'project' or 'transformers', got {loader!r}")
    done = subprocess.run([sys.executable, "-c", _CHILD, loader, str(path), dtype,
                           "" if first is None else str(first)],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {loader} load of {str(path)!r} failed: "
                           f"{done.stderr.strip()[-600:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["extra"] = result["peak"] - result["before"]
    result["after_use"] = result.pop("used") - result["before"]
    return result


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB"


@benchmark("load.llama")
def load_llama() -> Benchmark:
    size = os.environ.get(SIZE_VARIABLE, "small")
    if size not in SIZES or size == "8b":
        raise ValueError(f"{SIZE_VARIABLE} must be 'small' or '1b', got {size!r}")
    import transformers

    from transformer_math.checkpoints.io import from_pretrained

    tmp = tempfile.TemporaryDirectory(prefix="tmath-load-")
    folder = make_llama_folder(Path(tmp.name) / "llama", size)
    ours, theirs = measure_load(folder, "project"), measure_load(folder, "transformers")
    rss = ours["extra"] / theirs["extra"]
    description = (
        f"from_pretrained vs transformers, random Llama ({size}) bfloat16 folder, "
        f"model {_gb(ours['model_bytes'])}: peak RSS of the load {_gb(ours['extra'])} vs "
        f"{_gb(theirs['extra'])} (ratio {rss:.3f}; project / model size "
        f"{ours['extra'] / ours['model_bytes']:.3f}), once every weight was read "
        f"{_gb(ours['after_use'])} vs {_gb(theirs['after_use'])} (ratio "
        f"{ours['after_use'] / theirs['after_use']:.3f}; theirs are memory-mapped file pages); "
        f"one cold load {ours['seconds']:.3g} s vs {theirs['seconds']:.3g} s; ratio below = "
        "wall time of a warm load")

    def baseline() -> object:
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
        del model
        return None

    def candidate() -> object:
        model = from_pretrained(folder)
        del model
        return None

    candidate.folder = tmp  # type: ignore[attr-defined]  # the folder lives as long as the bench
    repeats = 5 if size == "small" else 3
    return Benchmark(name="load.llama", description=description, baseline=baseline,
                     candidate=candidate, repeats=repeats, warmup=1)
