"""Latency of a loaded checkpoint (``nn.transformer.Transformer``, generation by
``nn/generation.py``) against Hugging Face ``transformers`` on the same weights: ratio =
t_ours / t_HF (below 1: ours is faster).

Both models are the same random Llama (GQA, default RoPE), GPT-2, Qwen2 (q/k/v biases),
Mistral (sliding window 64, so the forward over 128 tokens is windowed), Gemma (4 heads of
head_dim 64 on width 256, MQA) or Phi-3 (fused projections), built in the factory and loaded
with ``checkpoints.io.from_pretrained`` from a temporary ``save_pretrained`` directory, float32,
CPU, in inference mode. Sizes are "small" so that one call takes milliseconds:

- ``checkpoints.<family>-forward`` (llama, gpt2, qwen2, mistral, gemma, phi3): one forward
  pass over (B, T) = (2, 128) tokens (full logits);
- ``checkpoints.<family>-decode``: greedy generation of 128 new tokens after a 512-token
  prompt with the KV cache, batch 1 (issue 36 item 3; HF ``generate(do_sample=False)`` with the
  same number of tokens forced via ``min_new_tokens``); per-token latency is the time / 128 (the
  prefill of 512 tokens is part of both members' time). Until issue 36 the decode benchmarks
  measured 32 tokens after 8, where the per-token Python overhead dominated.

Two environment variables change the decode benchmarks (issue 36 item 3: "at 1B, bfloat16
and float32, batch 1, 128 new tokens after 512"), as ``TMATH_LOAD_BENCH_SIZE`` does the load's:

- ``TMATH_DECODE_BENCH_DTYPE``: ``float32`` (default) or ``bfloat16``: both models in that
  dtype (ours loaded with ``from_pretrained(dtype=...)``, transformers' ``.to(dtype)``);
- ``TMATH_DECODE_BENCH_SIZE``: ``small`` (default, the 4-layer models above) or ``1b``: the
  Llama benchmark only (``checkpoints.llama-decode``) on a random bfloat16 folder of the
  published Llama-3.2-1B config (``load_bench.SIZES["1b"]``: 1.24e9 parameters, 2.5 GB of disk
  in a temporary directory), loaded by both libraries in the chosen dtype, 2 timed repeats
  after 1 warm-up (about 60 s per float32 generate on 2 CPU cores, 7.5 minutes in all). The
  other families refuse ``1b`` with an error naming the variable.

No target ratio: the numbers are reported (``tmath bench``). ``transformers`` is imported when a
benchmark is built, not at import time (it is a dev dependency).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.checkpoints.io import from_pretrained
from transformer_math.nn.init import private_rng

BATCH, SEQ_LEN = 2, 128
PROMPT_LEN, NEW_TOKENS = 512, 128
VOCAB = 1024
MAX_POSITIONS = 1024  # >= PROMPT_LEN + NEW_TOKENS (GPT-2's learned table cannot extrapolate)
SIZE_VARIABLE = "TMATH_DECODE_BENCH_SIZE"
DTYPE_VARIABLE = "TMATH_DECODE_BENCH_DTYPE"
DECODE_SIZES = ("small", "1b")
DECODE_DTYPES = ("float32", "bfloat16")


def decode_settings(family: str) -> tuple[str, str]:
    """(size, dtype) of the decode benchmark of ``family`` from the environment (module
    docstring); a value outside :data:`DECODE_SIZES` / :data:`DECODE_DTYPES`, or ``1b`` for a
    family other than llama, raises ValueError naming the variable."""
    size = os.environ.get(SIZE_VARIABLE, "small")
    dtype = os.environ.get(DTYPE_VARIABLE, "float32")
    if size not in DECODE_SIZES:
        raise ValueError(f"{SIZE_VARIABLE} must be one of {DECODE_SIZES}, got {size!r}")
    if dtype not in DECODE_DTYPES:
        raise ValueError(f"{DTYPE_VARIABLE} must be one of {DECODE_DTYPES}, got {dtype!r}")
    if size == "1b" and family != "llama":
        raise ValueError(f"{SIZE_VARIABLE}=1b is the Llama-3.2-1B config: only "
                         f"checkpoints.llama-decode runs it, not {family!r}")
    return size, dtype


_DECODERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 64}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 64, "num_attention_heads": 4,
                                                   "num_key_value_heads": 1}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
}


def _reference(family: str) -> Any:
    import transformers

    with private_rng(0):  # transformers initialises from torch's global RNG; fork and restore it
        if family == "llama":
            cfg = transformers.LlamaConfig(
                vocab_size=VOCAB, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                num_attention_heads=8, num_key_value_heads=4,
                max_position_embeddings=MAX_POSITIONS,
                bos_token_id=None, eos_token_id=None, pad_token_id=None)
            return transformers.LlamaForCausalLM(cfg).eval()
        if family in _DECODERS:
            config_cls, model_cls, extra = _DECODERS[family]
            kw = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=688,
                      num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                      max_position_embeddings=MAX_POSITIONS, bos_token_id=None,
                      eos_token_id=None,
                      pad_token_id=None)
            cfg = getattr(transformers, config_cls)(**{**kw, **extra})
            return getattr(transformers, model_cls)(cfg).eval()
        cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=256, n_layer=4, n_head=8,
                                      n_positions=MAX_POSITIONS, bos_token_id=None,
                                      eos_token_id=None)
        return transformers.GPT2LMHeadModel(cfg).eval()


def _pair(family: str) -> tuple[Any, Any]:
    hf_model = _reference(family)
    with tempfile.TemporaryDirectory() as tmp:
        hf_model.save_pretrained(tmp)
        ours = from_pretrained(tmp)
    return hf_model, ours


def _forward(family: str) -> Benchmark:
    hf_model, ours = _pair(family)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ_LEN), generator=torch.Generator().manual_seed(0))

    def baseline() -> object:
        with torch.inference_mode():
            return hf_model(ids).logits

    def candidate() -> object:
        with torch.inference_mode():
            return ours(ids).logits

    return Benchmark(
        name=f"checkpoints.{family}-forward",
        description=f"Transformer vs transformers {family}: forward (B, T) = ({BATCH}, "
        f"{SEQ_LEN}), d 256, 4 layers, float32",
        baseline=baseline, candidate=candidate, repeats=9, warmup=2,
    )


def _decode_pair(family: str, size: str, dtype: str) -> tuple[Any, Any, int, Any]:
    """(transformers' model, ours, vocabulary size, what must outlive the benchmark)."""
    torch_dtype = getattr(torch, dtype)
    if size == "small":
        hf_model = _reference(family)
        with tempfile.TemporaryDirectory() as tmp:
            hf_model.save_pretrained(tmp)
            ours = from_pretrained(tmp, dtype=dtype)
        return hf_model.to(torch_dtype), ours, VOCAB, None
    import transformers

    from transformer_math.bench.load_bench import SIZES, make_llama_folder

    keep = tempfile.TemporaryDirectory(prefix="tmath-decode-")
    folder = make_llama_folder(Path(keep.name) / "llama", size)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype)
    return hf_model.eval(), from_pretrained(folder, dtype=dtype), SIZES[size]["vocab_size"], keep


def _decode(family: str) -> Benchmark:
    size, dtype = decode_settings(family)
    hf_model, ours, vocab, keep = _decode_pair(family, size, dtype)
    prompt = torch.randint(0, vocab, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(prompt)

    def baseline() -> object:
        with torch.inference_mode():
            return hf_model.generate(prompt, attention_mask=mask, do_sample=False,
                                     max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                     pad_token_id=0)

    def candidate() -> object:
        with torch.inference_mode():  # eos None: never stop early (transformers: min_new_tokens)
            return ours.generate(prompt, NEW_TOKENS, eos_token_id=None)

    candidate.folder = keep  # type: ignore[attr-defined]  # the folder lives as the bench does
    shape = "4 layers x 256" if size == "small" else "Llama-3.2-1B config, 16 layers x 2048"
    return Benchmark(
        name=f"checkpoints.{family}-decode",
        description=f"Transformer vs transformers {family} ({shape}, {dtype}): greedy cached "
        f"decoding of {NEW_TOKENS} tokens after {PROMPT_LEN}, batch 1 (per-token = time / "
        f"{NEW_TOKENS})",
        baseline=baseline, candidate=candidate, repeats=7 if size == "small" else 2,
        warmup=1,
    )


@benchmark("checkpoints.llama-forward")
def llama_forward() -> Benchmark:
    return _forward("llama")


@benchmark("checkpoints.gpt2-forward")
def gpt2_forward() -> Benchmark:
    return _forward("gpt2")


@benchmark("checkpoints.llama-decode")
def llama_decode() -> Benchmark:
    return _decode("llama")


@benchmark("checkpoints.gpt2-decode")
def gpt2_decode() -> Benchmark:
    return _decode("gpt2")


def _register(family: str) -> None:
    benchmark(f"checkpoints.{family}-forward")(lambda: _forward(family))
    benchmark(f"checkpoints.{family}-decode")(lambda: _decode(family))


for _family in _DECODERS:
    _register(_family)
