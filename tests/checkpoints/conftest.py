"""Tiny random Hugging Face reference models for the checkpoint tests (no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

VOCAB = 64


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Redraw every parameter so that wrong mappings show: matrices N(0, 0.15^2), norm weights
    1 + N(0, 0.1^2), biases N(0, 0.05^2) (HF's init leaves norms at 1 and biases at 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.dim() >= 2:
                p.copy_(0.15 * noise)
            elif "norm" in name or "ln_" in name:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.05 * noise)


def llama(path: Path, *, rope: dict[str, Any] | None = None, seed: int = 0,
          **overrides: Any) -> Any:
    """Save a tiny random LlamaForCausalLM under ``path`` and return it (eval mode)."""
    kw: dict[str, Any] = dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
        rope_parameters=rope or {"rope_type": "default", "rope_theta": 10000.0},
    )
    kw.update(overrides)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw)).eval()
    randomise(model, seed)
    model.save_pretrained(path)
    return model


def gpt2(path: Path, *, seed: int = 0, **overrides: Any) -> Any:
    """Save a tiny random GPT2LMHeadModel under ``path`` and return it (eval mode)."""
    kw: dict[str, Any] = dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=48,
                              bos_token_id=0, eos_token_id=0)
    kw.update(overrides)
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**kw)).eval()
    randomise(model, seed)
    model.save_pretrained(path)
    return model


_DECODER = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def family(name: str, path: Path, *, seed: int = 0, **overrides: Any) -> Any:
    """Save a tiny random ``<Family>ForCausalLM`` (qwen2, mistral, gemma, phi3) under ``path``
    and return it (eval mode, eager attention)."""
    classes = {"qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
               "mistral": ("MistralConfig", "MistralForCausalLM"),
               "gemma": ("GemmaConfig", "GemmaForCausalLM"),
               "phi3": ("Phi3Config", "Phi3ForCausalLM")}
    config_cls, model_cls = (getattr(transformers, n) for n in classes[name])
    kw: dict[str, Any] = dict(_DECODER)
    if name == "gemma":
        kw.update(head_dim=16, hidden_act="gelu_pytorch_tanh")
    if name == "phi3":
        kw.update(pad_token_id=0)
    kw.update(overrides)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls.__name__)(config_cls(**kw)).eval()
    randomise(model, seed)
    model.save_pretrained(path)
    return model


def tokens(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (batch, length), generator=g)


@pytest.fixture
def ref() -> Any:
    """The factories above as one fixture (tests cannot import sibling modules under
    ``--import-mode=importlib``)."""
    from types import SimpleNamespace

    return SimpleNamespace(llama=llama, gpt2=gpt2, family=family, tokens=tokens,
                           randomise=randomise, transformers=transformers)
