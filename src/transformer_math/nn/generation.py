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

Repetition penalty (CTRL, Keskar et al. 2019; transformers' ``RepetitionPenaltyLogitsProcessor``):
before the sampling warpers, the logit z of every token already in the row (prompt and generated
tokens, the left padding excluded) becomes z / p if z > 0 else z * p, in float32.

RoPE whose frequencies switch with the length (``RotaryEmbedding.frequency_switch``): with
LongRoPE (Phi-3), once the sequence (prompt + generated, padding included) first exceeds
``original_max_position_embeddings`` = L0 while the cache holds at most L0 positions, the cache is
dropped and the whole sequence is run again (one uncached step of length L0 + 1): every key is
then rotated with the long factors, as transformers' Phi-3 ``prepare_inputs_for_generation``
does, and later steps are cached again. Dynamic NTK keeps each cached key under the base of its
own step, as transformers does (no rebuild).

Defaults (:func:`resolve_settings`): a model carrying a ``generation_config`` (a checkpoint's
``generation_config.json``, ``checkpoints/generation_config.py``) supplies every setting the
call leaves out, as transformers' ``generate`` does: ``do_sample`` (greedy unless set),
``temperature``, ``top_k`` (50 when sampling and unset), ``top_p``, ``repetition_penalty``,
``max_new_tokens`` (else ``max_length`` minus the prompt, else 20 minus the prompt), the eos
ids and ``pad_token_id``. Without one the defaults are greedy, no penalty, no eos, and
``max_new_tokens`` is required.

The model contract: ``model(input_ids, attention_mask=..., caches=...) -> logits (B, T, V)``,
``model.new_caches()`` and ``model.config`` with ``vocab_size`` (and ``max_seq_len``/``position``
for models whose position table cannot extrapolate).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.rope import can_read_values
from transformer_math.nn.position import POSITIONS

_PLUMBING = "tests/checkpoints/test_plumbing_bugs.py::"
TEMPERATURE_AFTER_FILTERS = declare_bug(
    "generation.temperature-after-filters",
    "top-k and top-p choose the kept tokens from the unscaled logits and the temperature is "
    "applied afterwards (transformers: temperature, then top-k, then top-p), so the nucleus "
    "is that of softmax(z), not of softmax(z / T)",
    module=__name__, seen_in="sampling loops that warp in the order the options are listed",
    test=_PLUMBING + "test_sampling_applies_temperature_before_top_k_and_top_p")
FINISHED_ROWS_CONTINUE = declare_bug(
    "generation.finished-rows-continue",
    "a row that emitted eos keeps sampling real tokens instead of pad_token_id while the other "
    "rows of the batch finish",
    module=__name__, seen_in="batched decoding loops that check eos only to stop the batch",
    test=_PLUMBING + "test_finished_rows_continue_with_padding")
REPETITION_PENALTY_INVERTED = declare_bug(
    "generation.repetition-penalty-inverted",
    "the repetition penalty multiplies positive logits by p and divides negative ones by p "
    "(the CTRL rule inverted): seen tokens become more likely instead of less",
    module=__name__, seen_in="z * p written for 'penalise' without the sign case",
    test=_PLUMBING + "test_repetition_penalty_lowers_seen_tokens")


def _check_options(vocab: int, max_new_tokens: int, temperature: float | None,
                   top_k: int | None, top_p: float | None) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or (
            max_new_tokens < 0):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if temperature is not None and not temperature >= 0.0:
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
    probs = sampling_probs(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    return torch.multinomial(probs, 1, generator=generator)


def sampling_probs(logits: Tensor, *, temperature: float, top_k: int | None = None,
                   top_p: float | None = None) -> Tensor:
    """The distribution (B, V) sampling draws from: softmax(z / temperature) restricted to the
    ``top_k`` largest and then to the nucleus of mass ``top_p``, renormalised (transformers'
    warper order: temperature, top-k, top-p)."""
    late = planted(TEMPERATURE_AFTER_FILTERS)  # planted bug: filters on the unscaled logits
    scaled = logits.float() if late else logits.float() / temperature
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
    if late:
        scaled = scaled / temperature
    return torch.softmax(scaled, dim=-1)


def penalize_repeats(logits: Tensor, seen: Tensor, penalty: float) -> Tensor:
    """Logits (B, V) in float32 with the entries of ``seen`` (B, V) bool divided by ``penalty``
    where positive and multiplied by it where negative (CTRL's repetition penalty)."""
    z = logits.float()
    if planted(REPETITION_PENALTY_INVERTED):  # planted bug: the two cases swapped
        return torch.where(seen, torch.where(z < 0, z / penalty, z * penalty), z)
    return torch.where(seen, torch.where(z < 0, z * penalty, z / penalty), z)


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
    repetition_penalty: float = 1.0,
    seen: Tensor | None = None,
    logits_to_keep: int | None = None,
) -> Tensor:
    """One decoding step: feed ``step`` (B, T) (continuing ``caches`` if given; the mask covers
    every key so far) and return the next token (B, 1). ``seen`` (B, V) bool: the tokens the
    ``repetition_penalty`` applies to. The model may return the logits or an output with
    ``.logits`` (a loaded checkpoint's ``CausalLMOutput``). ``logits_to_keep`` (None: not
    passed) is given to a model whose forward takes it (:func:`accepts_logits_to_keep`);
    :func:`generate` passes 1, as transformers' generate does, so a prefill runs the LM head
    at its last position only.

    Greedy decoding reads nothing back to the host, so ``torch.compile(decode_step,
    fullgraph=True)`` compiles it with the KV caches (their appends are replayed as side
    effects); the loop of :func:`generate` (stopping at eos) stays in Python.
    """
    keep = {} if logits_to_keep is None else {"logits_to_keep": logits_to_keep}
    if caches is None:
        out = model(step, attention_mask=attention_mask, **keep)
    else:
        out = model(step, attention_mask=attention_mask, caches=caches, **keep)
    logits = getattr(out, "logits", out)[:, -1]
    if seen is not None and repetition_penalty != 1.0:
        logits = penalize_repeats(logits, seen, repetition_penalty)
    return choose_next_token(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                             generator=generator)  # (B, 1)


def accepts_logits_to_keep(model: Any) -> bool:
    """Whether ``model``'s forward names a ``logits_to_keep`` parameter (transformers'
    generate asks the same of the model's signature); models of the bare contract do not."""
    forward = getattr(model, "forward", None)
    if forward is None:
        return False
    try:
        return "logits_to_keep" in inspect.signature(forward).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


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

class _Unset:
    """The default of a :func:`generate` argument the call leaves to the model's generation
    config (distinct from an explicit None, e.g. ``eos_token_id=None``: never stop)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def resolve_settings(model: Any, prompt_length: int, given: dict[str, Any]) -> dict[str, Any]:
    """The decoding settings of one :func:`generate` call: the arguments ``given`` (``UNSET``
    where the call left them out) over ``model.generation_config`` (if the model has one; see
    the module docstring), over the plain defaults. Returns ``temperature`` (0: greedy),
    ``top_k``, ``top_p``, ``repetition_penalty``, ``max_new_tokens``, ``eos_token_id``,
    ``pad_token_id``."""
    gen = getattr(model, "generation_config", None)
    base: dict[str, Any] = {"do_sample": False, "temperature": 1.0, "top_k": None,
                            "top_p": None, "repetition_penalty": 1.0, "max_new_tokens": None,
                            "max_length": None, "eos_token_id": None, "pad_token_id": None}
    if gen is not None:
        gen.check_supported()
        base.update(gen.resolved())
    explicit = {k: v for k, v in given.items() if v is not UNSET}
    do_sample = explicit.pop("do_sample", None)
    if do_sample is not None and not isinstance(do_sample, bool):
        raise ValueError(f"do_sample must be True, False or None, got {do_sample!r}")
    if do_sample is None:
        do_sample = (explicit["temperature"] > 0 if isinstance(explicit.get("temperature"),
                                                               int | float)
                     else base["do_sample"])
    out = {**base, **explicit}
    if do_sample and out["temperature"] == 0:
        raise ValueError("temperature must be > 0 when sampling (do_sample=True), got 0")
    if not do_sample:
        out["temperature"], out["top_k"], out["top_p"] = 0.0, None, None
    elif "top_k" not in explicit and out["top_k"] is not None:
        out["top_k"] = min(out["top_k"], model.config.vocab_size)  # transformers clips it too
    if out["max_new_tokens"] is None:
        if out["max_length"] is None:
            raise ValueError("max_new_tokens is required (the model has no generation config "
                             "that sets max_new_tokens or max_length)")
        out["max_new_tokens"] = max(0, out["max_length"] - prompt_length)
    del out["do_sample"], out["max_length"]
    penalty = out["repetition_penalty"]
    if isinstance(penalty, bool) or not isinstance(penalty, int | float) or not penalty > 0:
        raise ValueError(f"repetition_penalty must be a number > 0, got {penalty!r}")
    return out


def _seen_tokens(tokens: Tensor, attention_mask: Tensor | None, vocab: int) -> Tensor:
    """(B, V) bool: the tokens of each row, its left padding (before the mask's first 1)
    excluded, as transformers' repetition penalty counts them."""
    ids = tokens
    if attention_mask is not None:
        lead = (attention_mask != 0).int().argmax(dim=1, keepdim=True)
        pos = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
        ids = tokens.masked_fill(pos < lead, vocab)
    seen = torch.zeros(tokens.shape[0], vocab + 1, dtype=torch.bool, device=tokens.device)
    return seen.scatter_(1, ids, True)[:, :vocab]


def _cache_rebuild_length(model: Any) -> int | None:
    """The length L0 at which cached generation drops its KV cache once and recomputes every
    key (a rotary embedding whose frequencies switch there, ``rebuilds_cache_at_switch``:
    LongRoPE), or None."""
    rotary = getattr(model, "rotary", None)
    if rotary is None or not getattr(rotary, "rebuilds_cache_at_switch", False):
        return None
    return rotary.frequency_switch


@torch.no_grad()
def generate(
    model: Any,
    input_ids: Tensor,
    max_new_tokens: int | None = UNSET,
    *,
    attention_mask: Tensor | None = None,
    do_sample: bool | None = UNSET,
    temperature: float = UNSET,
    top_k: int | None = UNSET,
    top_p: float | None = UNSET,
    repetition_penalty: float = UNSET,
    generator: torch.Generator | None = None,
    eos_token_id: int | list[int] | None = UNSET,
    pad_token_id: int | None = UNSET,
    use_cache: bool = True,
) -> Tensor:
    """Continue ``input_ids`` (B, T0) by up to ``max_new_tokens``; returns (B, T0 + n).

    Arguments left out come from ``model.generation_config`` when the model has one
    (:func:`resolve_settings`); ``temperature`` > 0 without ``do_sample`` means sampling,
    ``temperature=0`` greedy."""
    config = model.config
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2 or input_ids.shape[1] == 0:
        raise ValueError(f"input_ids must have shape (batch, seq>=1), got "
                         f"{tuple(getattr(input_ids, 'shape', ()))}")
    given = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
    _check_options(config.vocab_size, 0 if max_new_tokens in (UNSET, None) else max_new_tokens,
                   *(None if v is UNSET else v for v in given.values()))  # the call's own
    settings = resolve_settings(model, input_ids.shape[1], {
        "max_new_tokens": UNSET if max_new_tokens is None else max_new_tokens,
        "do_sample": do_sample, "temperature": temperature, "top_k": top_k, "top_p": top_p,
        "repetition_penalty": repetition_penalty, "eos_token_id": eos_token_id,
        "pad_token_id": pad_token_id})
    max_new_tokens, temperature = settings["max_new_tokens"], settings["temperature"]
    top_k, top_p = settings["top_k"], settings["top_p"]
    eos_token_id, pad_token_id = settings["eos_token_id"], settings["pad_token_id"]
    penalty = float(settings["repetition_penalty"])
    _check_options(config.vocab_size, max_new_tokens, temperature, top_k, top_p)
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
    seen = (_seen_tokens(input_ids, attention_mask, config.vocab_size) if penalty != 1.0
            else None)
    if attention_mask is not None and can_read_values(attention_mask) and bool(
            attention_mask.all()):
        attention_mask = None  # no padding: the same positions and keys, and no mask to build
    # (every layer of every step would otherwise combine and scan an all-ones padding mask)
    mask = None if attention_mask is None else attention_mask.long()
    was_training = model.training
    model.eval()
    tokens, step = input_ids, input_ids
    caches = model.new_caches() if use_cache else None
    rebuild_at = _cache_rebuild_length(model) if use_cache else None
    keep = 1 if accepts_logits_to_keep(model) else None  # the head at the last position only
    finished = torch.zeros(b, dtype=torch.bool, device=input_ids.device)
    eos_t = torch.tensor(eos, dtype=torch.long, device=input_ids.device)
    try:
        for _ in range(max_new_tokens):
            if (rebuild_at is not None and caches is not None and tokens.shape[1] > rebuild_at
                    and 0 < caches[0].seq_len <= rebuild_at):
                # the sequence now passes the LongRoPE switch: keys cached with the short
                # factors are dropped and the whole sequence is run again with the long ones
                # (transformers' Phi-3 prepare_inputs_for_generation), once
                caches, step = model.new_caches(), tokens
            nxt = decode_step(model, step if use_cache else tokens, attention_mask=mask,
                              caches=caches, temperature=temperature, top_k=top_k,
                              top_p=top_p, generator=generator, repetition_penalty=penalty,
                              seen=seen, logits_to_keep=keep)  # (B, 1)
            if not planted(FINISHED_ROWS_CONTINUE):  # planted bug: finished rows go on
                nxt = torch.where(finished.unsqueeze(1), torch.full_like(nxt, pad), nxt)
            if seen is not None:
                seen = seen.scatter(1, nxt, True)
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
