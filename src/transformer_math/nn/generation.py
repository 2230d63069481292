"""Autoregressive generation for every causal model of the project (one implementation).

Math (Radford et al. 2019; Holtzman et al. 2020 for nucleus sampling): at each step the model
gives logits z for the next token; greedy decoding takes argmax z; sampling draws from
softmax(z / temperature) restricted to the ``top_k`` largest logits and/or to the smallest set of
tokens whose probability mass reaches ``top_p`` (the most likely token is always kept).

With a KV cache each step feeds only the new token: its key and value are appended to every
layer's cache and its query attends to all cached positions (bottom-right causal alignment), so
cached and uncached decoding give the same tokens up to rounding (``use_cache=False`` is that
reference). Left padding: ``attention_mask`` (1 = token, 0 = pad) masks padded keys and positions
count real tokens only, so a left-padded row continues exactly as the unpadded prompt. A row that
emitted an ``eos_token_id`` continues with ``pad_token_id`` (default: the first eos id); decoding
stops once every row has finished (Hugging Face ``generate`` semantics).

The model contract: ``model(input_ids, attention_mask=..., caches=...) -> logits (B, T, V)``,
``model.new_caches()`` and ``model.config`` with ``vocab_size`` (and ``max_seq_len``/``position``
for models whose position table cannot extrapolate).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from transformer_math.functional.rope import can_read_values
from transformer_math.nn.position import POSITIONS


def _check_options(vocab: int, max_new_tokens: int, temperature: float, top_k: int | None,
                   top_p: float | None) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or (
            max_new_tokens < 0):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if not temperature >= 0.0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)
                              or not 1 <= top_k <= vocab):
        raise ValueError(f"top_k must be an int in [1, {vocab}], got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


def choose_next_token(logits: Tensor, *, temperature: float = 0.0, top_k: int | None = None,
                      top_p: float | None = None, generator: torch.Generator | None = None
                      ) -> Tensor:
    """The next token (B, 1) from last-position logits (B, V): greedy, or sampled."""
    if temperature == 0.0:
        return logits.argmax(dim=-1, keepdim=True)
    scaled = logits.float() / temperature
    if top_k is not None:
        kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs  # mass of the strictly more likely tokens
        drop_sorted = mass_before >= top_p  # the first token has mass_before 0: always kept
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator)


def decode_step(
    model: Any,
    step: Tensor,
    *,
    attention_mask: Tensor | None = None,
    caches: list[Any] | None = None,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """One decoding step: feed ``step`` (B, T) (continuing ``caches`` if given; the mask covers
    every key so far) and return the next token (B, 1).

    Greedy decoding reads nothing back to the host, so ``torch.compile(decode_step,
    fullgraph=True)`` compiles it with the KV caches (their appends are replayed as side
    effects); the loop of :func:`generate` (stopping at eos) stays in Python.
    """
    if caches is None:
        logits = model(step, attention_mask=attention_mask)[:, -1]
    else:
        logits = model(step, attention_mask=attention_mask, caches=caches)[:, -1]
    return choose_next_token(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                             generator=generator)  # (B, 1)


@torch.no_grad()

def _check_token_ids(vocab_size: int, eos: list[int], pad: int, pad_given: bool) -> None:
    """The special ids generation writes or compares against must be token ids of this vocabulary
    (issue 40.6): a pad id outside it would fail mid-generation in the embedding, with an error
    that blames ``input_ids``."""
    for i, e in enumerate(eos):
        if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < vocab_size:
            raise ValueError(f"eos_token_id[{i}] must be a token id in 0..{vocab_size - 1}, "
                             f"got {e!r}")
    if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < vocab_size:
        name = "pad_token_id" if pad_given else "pad_token_id (defaulted to eos_token_id)"
        raise ValueError(f"{name} must be a token id in 0..{vocab_size - 1}, got {pad!r}")

def generate(
    model: Any,
    input_ids: Tensor,
    max_new_tokens: int,
    *,
    attention_mask: Tensor | None = None,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    eos_token_id: int | list[int] | None = None,
    pad_token_id: int | None = None,
    use_cache: bool = True,
) -> Tensor:
    """Continue ``input_ids`` (B, T0) by up to ``max_new_tokens``; returns (B, T0 + n)."""
    config = model.config
    _check_options(config.vocab_size, max_new_tokens, temperature, top_k, top_p)
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2 or input_ids.shape[1] == 0:
        raise ValueError(f"input_ids must have shape (batch, seq>=1), got "
                         f"{tuple(getattr(input_ids, 'shape', ()))}")
    position = getattr(config, "position", "none")
    if not POSITIONS.metadata(position)["extrapolates"] and (
            input_ids.shape[1] + max_new_tokens > config.max_seq_len):
        raise ValueError(f"prompt length {input_ids.shape[1]} + max_new_tokens "
                         f"{max_new_tokens} exceeds max_seq_len={config.max_seq_len}")
    if attention_mask is not None and tuple(attention_mask.shape) != tuple(input_ids.shape):
        raise ValueError(f"attention_mask must have the shape of input_ids "
                         f"{tuple(input_ids.shape)}, got {tuple(attention_mask.shape)}")
    eos = ([] if eos_token_id is None else
           [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id))
    pad = pad_token_id if pad_token_id is not None else (eos[0] if eos else 0)
    _check_token_ids(config.vocab_size, eos, pad, pad_token_id is not None)
    b = input_ids.shape[0]
    if attention_mask is not None and can_read_values(attention_mask) and bool(
            attention_mask.all()):
        attention_mask = None  # no padding: the same positions and keys, and no mask to build
    # (every layer of every step would otherwise combine and scan an all-ones padding mask)
    mask = None if attention_mask is None else attention_mask.long()
    was_training = model.training
    model.eval()
    tokens, step = input_ids, input_ids
    caches = model.new_caches() if use_cache else None
    finished = torch.zeros(b, dtype=torch.bool, device=input_ids.device)
    eos_t = torch.tensor(eos, dtype=torch.long, device=input_ids.device)
    try:
        for _ in range(max_new_tokens):
            nxt = decode_step(model, step if use_cache else tokens, attention_mask=mask,
                              caches=caches, temperature=temperature, top_k=top_k,
                              top_p=top_p, generator=generator)  # (B, 1)
            nxt = torch.where(finished.unsqueeze(1), torch.full_like(nxt, pad), nxt)
            tokens = torch.cat([tokens, nxt], dim=1)
            if mask is not None:
                mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
            step = nxt
            if eos:
                finished |= torch.isin(nxt.squeeze(1), eos_t)
                if bool(finished.all()):
                    break
    finally:
        model.train(was_training)
    return tokens
