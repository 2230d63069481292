"""Healthy reference models for the doctor tests, built once per session (no network).

``hf_llama_random`` / ``hf_gpt2_random``: tiny ``transformers`` checkpoints with HF's own
initialisation (``initializer_range`` 0.02: what a freshly initialised real checkpoint looks
like; NOT the 0.15 redraw of ``tests/checkpoints/conftest.py``, which exists to expose wrong
weight mappings). ``hf_llama_trained`` / ``hf_gpt2_trained``: the same shapes briefly trained
(AdamW lr 5e-3, 150 steps of 16 sequences of 32 tokens at random position offsets) on
sequences made of a random block of 2..6 tokens repeated, the task an induction head solves
(predict the token that followed the previous occurrence of the current token), so a model
that has started to learn looks like one. Held-out loss measured (18:20 UTC, seed 0): Llama
4.162 -> 2.871, GPT-2 4.167 -> 3.250 (uniform over 61 tokens: 4.11); 9-25 s each on the
shared 2-core machine, depending on load. Each is a directory path
(str) holding ``config.json``, ``model.safetensors`` and ``generation_config.json``, loadable by
both engines.

Sizes: vocab 64, hidden 32, 2 layers, 4 heads (Llama: 2 KV heads, SwiGLU 64), 64 positions.

``project_models``: healthy project :class:`Transformer` s (llama-like and gpt2-like, seeds 0, 1,
2, the project's default init). ``make_project_model(kind, seed, **overrides)`` builds one more;
``hf_factory`` builds and saves further HF checkpoints (e.g. with RoPE scaling) for a test's
own ``tmp_path``; ``hf_training_losses`` has the loss before/after training of each trained
fixture. Tests cannot import this module (``--import-mode=importlib``): use the fixtures.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

VOCAB = 64
HIDDEN = 32
LAYERS = 2
HEADS = 4
KV_HEADS = 2
POSITIONS = 64
TRAIN_STEPS = 150
TRAIN_BATCH = 16
TRAIN_LENGTH = 32
TRAIN_LR = 5e-3
KMIN, KMAX = 2, 6

_LOSSES: dict[str, dict[str, float]] = {}


def llama_config(**overrides: Any) -> Any:
    kw: dict[str, Any] = dict(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        max_position_embeddings=POSITIONS, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
        initializer_range=0.02, tie_word_embeddings=False)
    kw.update(overrides)
    return transformers.LlamaConfig(**kw)


def gpt2_config(**overrides: Any) -> Any:
    kw: dict[str, Any] = dict(
        vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=POSITIONS,
        bos_token_id=0, eos_token_id=0, initializer_range=0.02,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    kw.update(overrides)
    return transformers.GPT2Config(**kw)


def build_hf(kind: str, seed: int = 0, **overrides: Any) -> Any:
    """A tiny HF causal LM (``kind`` "llama" or "gpt2", or a family name "qwen2", "mistral",
    "gemma", "phi3") with HF's own init drawn under ``seed`` (the global RNG is forked, so
    other tests' draws are unchanged), eager attention, eval mode."""
    if kind == "llama":
        config = llama_config(**overrides)
        cls = transformers.LlamaForCausalLM
    elif kind == "gpt2":
        config = gpt2_config(**overrides)
        cls = transformers.GPT2LMHeadModel
    else:
        names = {"qwen2": "Qwen2", "mistral": "Mistral", "gemma": "Gemma", "phi3": "Phi3"}
        if kind not in names:
            raise ValueError(f"unknown kind {kind!r}")
        kw: dict[str, Any] = dict(
            vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64,
            num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
            max_position_embeddings=POSITIONS, rms_norm_eps=1e-5, bos_token_id=1,
            eos_token_id=2, initializer_range=0.02)
        if kind == "gemma":
            kw.update(head_dim=HIDDEN // HEADS, hidden_act="gelu_pytorch_tanh")
        if kind == "phi3":
            kw.update(pad_token_id=0)
        kw.update(overrides)
        config = getattr(transformers, names[kind] + "Config")(**kw)
        cls = getattr(transformers, names[kind] + "ForCausalLM")
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
    return model.eval()


def save_hf(model: Any, path: Path) -> str:
    model.save_pretrained(path)
    return str(path)


def repeated_blocks(batch: int, length: int, generator: torch.Generator,
                    low: int = 3) -> torch.Tensor:
    """(batch, length) sequences, each a random block of 4..16 tokens in [low, VOCAB) repeated
    to the length: from the second copy on every token is predictable from the previous
    occurrence of the current token (induction)."""
    rows = []
    for _ in range(batch):
        k = int(torch.randint(KMIN, KMAX + 1, (1,), generator=generator))
        block = torch.randint(low, VOCAB, (k,), generator=generator)
        rows.append(block.repeat(math.ceil(length / k))[:length])
    return torch.stack(rows)


def train_hf(model: Any, *, steps: int = TRAIN_STEPS, seed: int = 0, lr: float = TRAIN_LR,
             batch: int = TRAIN_BATCH, length: int = TRAIN_LENGTH) -> dict[str, float]:
    """AdamW on :func:`repeated_blocks` (next-token cross-entropy on every position); returns
    the loss on a fixed held-out batch (positions 0 .. length - 1) before and after, and the
    steps. Each batch sits at a random position offset (``position_ids``), so every one of the
    model's positions is trained although the sequences are shorter (half the cost of full
    length). Deterministic: data and offsets from a seeded generator, no dropout."""
    g = torch.Generator().manual_seed(1000 + seed)
    held_out = repeated_blocks(32, length, torch.Generator().manual_seed(99))
    max_offset = max(0, int(getattr(model.config, "n_positions", 0)
                            or model.config.max_position_embeddings) - length)

    def held_out_loss() -> float:
        model.eval()
        with torch.no_grad():
            return float(model(held_out, labels=held_out).loss)

    before = held_out_loss()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    for _ in range(steps):
        ids = repeated_blocks(batch, length, g)
        offset = int(torch.randint(0, max_offset + 1, (1,), generator=g))
        positions = (offset + torch.arange(length)).expand(batch, -1)
        loss = model(ids, labels=ids, position_ids=positions).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    after = held_out_loss()
    model.eval()
    return {"before": before, "after": after, "steps": float(steps)}


def _trained(kind: str, path: Path) -> str:
    model = build_hf(kind, seed=0)
    _LOSSES[kind] = train_hf(model, seed=0)
    return save_hf(model, path)


@pytest.fixture(scope="session")
def hf_llama_random(tmp_path_factory: pytest.TempPathFactory) -> str:
    with _one_thread():
        return save_hf(build_hf("llama", seed=0), tmp_path_factory.mktemp("hf_llama_random"))


@pytest.fixture(scope="session")
def hf_gpt2_random(tmp_path_factory: pytest.TempPathFactory) -> str:
    with _one_thread():
        return save_hf(build_hf("gpt2", seed=0), tmp_path_factory.mktemp("hf_gpt2_random"))


@pytest.fixture(scope="session")
def hf_llama_trained(tmp_path_factory: pytest.TempPathFactory) -> str:
    with _one_thread():
        return _trained("llama", tmp_path_factory.mktemp("hf_llama_trained"))


@pytest.fixture(scope="session")
def hf_gpt2_trained(tmp_path_factory: pytest.TempPathFactory) -> str:
    with _one_thread():
        return _trained("gpt2", tmp_path_factory.mktemp("hf_gpt2_trained"))


@pytest.fixture(scope="session")
def hf_checkpoints(hf_llama_random: str, hf_gpt2_random: str, hf_llama_trained: str,
                   hf_gpt2_trained: str) -> dict[str, str]:
    """All four healthy checkpoints by name (for parametrised no-false-alarm tests)."""
    return {"llama-random": hf_llama_random, "gpt2-random": hf_gpt2_random,
            "llama-trained": hf_llama_trained, "gpt2-trained": hf_gpt2_trained}


@pytest.fixture(scope="session")
def hf_training_losses(hf_llama_trained: str, hf_gpt2_trained: str) -> dict[str, dict]:
    """{"llama"|"gpt2": {"before", "after", "steps"}} of the trained fixtures."""
    return {k: dict(v) for k, v in _LOSSES.items()}


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """One torch thread while building a session fixture (pytest builds session fixtures before
    the per-test autouse fixture of tests/conftest.py sets one thread)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------------------ project models


def project_config(kind: str = "llama", **overrides: Any) -> Any:
    """The project's TransformerConfig of a tiny llama-like (RoPE, RMSNorm, SwiGLU, GQA, no
    biases) or gpt2-like (learned positions, LayerNorm, GELU, biases, tied embeddings) model."""
    from transformer_math.nn.config import TransformerConfig

    if kind == "llama":
        kw: dict[str, Any] = dict(
            vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS,
            num_kv_heads=KV_HEADS, intermediate_size=64, max_seq_len=POSITIONS,
            position="rope", norm="rmsnorm", feedforward="swiglu", attention_bias=False,
            mlp_bias=False)
    elif kind == "gpt2":
        kw = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS,
                  max_seq_len=POSITIONS, position="learned", norm="layernorm",
                  feedforward="gelu", tie_embeddings=True)
    else:
        raise ValueError(f"kind must be 'llama' or 'gpt2', got {kind!r}")
    kw.update(overrides)
    return TransformerConfig(**kw)


def project_model(kind: str = "llama", seed: int = 0, **overrides: Any) -> Any:
    """A healthy project Transformer (eval mode), parameters drawn from ``seed`` only."""
    from transformer_math.nn.transformer import build_transformer

    return build_transformer(project_config(kind, **overrides), seed).eval()


@pytest.fixture(scope="session")
def project_models() -> dict[str, Any]:
    """{"llama-s0", "llama-s1", "llama-s2", "gpt2-s0", "gpt2-s1", "gpt2-s2"} -> healthy project
    Transformers (the project's default init). Shared: do not modify them in place."""
    return {f"{kind}-s{seed}": project_model(kind, seed)
            for kind in ("llama", "gpt2") for seed in (0, 1, 2)}


@pytest.fixture(scope="session")
def make_project_model() -> Any:
    """``make_project_model(kind="llama"|"gpt2", seed=0, **TransformerConfig overrides)``."""
    return project_model


@pytest.fixture(scope="session")
def hf_factory() -> SimpleNamespace:
    """Builders for further HF checkpoints: ``build(kind, seed, **config overrides)`` (a model),
    ``save(model, path)`` (-> str path), ``checkpoint(path, kind, seed, **overrides)`` (both),
    ``train(model, steps=..)`` (-> losses), ``tokens(batch, length, seed)``,
    ``repeated_blocks(batch, length, generator)``, ``project_config(kind, **overrides)``,
    ``transformers`` (the module). Llama RoPE scaling: ``rope_parameters={"rope_type": "yarn",
    "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16}``."""

    def checkpoint(path: Path, kind: str = "llama", seed: int = 0, **overrides: Any) -> str:
        return save_hf(build_hf(kind, seed, **overrides), path)

    def tokens(batch: int, length: int, seed: int = 1) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, VOCAB, (batch, length), generator=g)

    return SimpleNamespace(build=build_hf, save=save_hf, checkpoint=checkpoint, train=train_hf,
                           tokens=tokens, repeated_blocks=repeated_blocks,
                           project_config=project_config, project_model=project_model,
                           transformers=transformers, vocab=VOCAB, positions=POSITIONS)
