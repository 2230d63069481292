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

No target ratio: the numbers are reported (``tmath bench``). ``transformers`` is imported when a
benchmark is built, not at import time (it is a dev dependency).
"""

from __future__ import annotations

import tempfile
from typing import Any

import torch

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.checkpoints.io import from_pretrained
from transformer_math.nn.init import private_rng

BATCH, SEQ_LEN = 2, 128
PROMPT_LEN, NEW_TOKENS = 512, 128
VOCAB = 1024
MAX_POSITIONS = 1024  # >= PROMPT_LEN + NEW_TOKENS (GPT-2's learned table cannot extrapolate)


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


def _decode(family: str) -> Benchmark:
    hf_model, ours = _pair(family)
    prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(prompt)

    def baseline() -> object:
        with torch.inference_mode():
            return hf_model.generate(prompt, attention_mask=mask, do_sample=False,
                                     max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                     pad_token_id=0)

    def candidate() -> object:
        with torch.inference_mode():
            return ours.generate(prompt, NEW_TOKENS)

    return Benchmark(
        name=f"checkpoints.{family}-decode",
        description=f"Transformer vs transformers {family}: greedy cached decoding of "
        f"{NEW_TOKENS} tokens after {PROMPT_LEN} (per-token = time / {NEW_TOKENS})",
        baseline=baseline, candidate=candidate, repeats=7, warmup=1,
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
