"""Engines: how the doctor runs a model. One interface, two implementations.

The dynamic checks never touch a model directly; they call an :class:`Engine`, so the same check
examines the project's own :class:`~transformer_math.nn.transformer.Transformer`
(:class:`ProjectEngine`, read through its hook points, ``nn/hooks.py``) and the reference
implementation a user deploys (``engines_transformers.TransformersEngine``: Hugging Face
``transformers`` with eager attention and ``output_attentions=True``), and the two can be
compared on the same weights.

Conventions of every method: token ids are LongTensors (B, T); ``attention_mask`` (B, T) is the
HF one (1 = token, 0 = padding); returned tensors are float32 on the CPU, detached unless the
method says otherwise; nothing is cached between calls (each call is one or more fresh forward
passes).

Both engines load a checkpoint folder in :data:`LOAD_DTYPE` (float32, whatever the folder
stores), so that they compare the same numbers and the checks' tolerances, set in float32,
hold for either; the project engine falls back to the stored dtype when a float32 copy would
not fit in memory (``doctor/precision.py``: what is then computed in float32 and how).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.checkpoints.pretrained import logits_of
from transformer_math.nn.hooks import run_with_cache

LOAD_DTYPE = torch.float32
"""The parameter dtype both engines load a checkpoint folder in."""


@dataclass(frozen=True)
class AttentionRecord:
    """One layer's attention on one input.

    ``weights`` (B, H, T, S): the softmax weights (rows sum to 1 over the allowed keys);
    ``scores`` (B, H, T, S): the pre-softmax logits after the scale (and the mask: forbidden
    entries are -inf or a large negative number), or None when the engine cannot give them; the
    row-wise spread of the logits over the allowed keys equals that of ``log(weights)`` (softmax
    is shift invariant), which :func:`logits_from_weights` uses.
    """

    weights: Tensor
    scores: Tensor | None = None


def logits_from_weights(weights: Tensor, floor: float = 1e-30) -> Tensor:
    """log(weights) with zeros floored at log(floor): the logits up to a per-row constant."""
    return torch.log(weights.float().clamp_min(floor))


class Engine(ABC):
    """The interface the dynamic checks use (subclasses implement every method).

    Attributes: ``name`` ("project" or "transformers"), ``num_layers``, ``num_heads``,
    ``num_kv_heads``, ``head_dim``, ``hidden_size``, ``vocab_size`` (None for vector inputs),
    ``input_width`` (the last axis of :meth:`embed`'s output and of vector inputs), ``causal``,
    ``max_positions`` (the longest sequence the model accepts, None when unbounded).
    """

    name = "engine"
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int | None
    input_width: int
    causal: bool
    max_positions: int | None
    supports_cache: bool = True

    @abstractmethod
    def logits(self, ids: Tensor, *, attention_mask: Tensor | None = None,
               position_ids: Tensor | None = None) -> Tensor:
        """(B, T, V) float32 output of one forward pass."""
        ...

    @abstractmethod
    def attention(self, ids: Tensor, *, attention_mask: Tensor | None = None,
                  position_ids: Tensor | None = None) -> list[AttentionRecord]:
        """One :class:`AttentionRecord` per layer, in order."""
        ...

    @abstractmethod
    def cached_logits(self, ids: Tensor, prefix: int, step: int = 1) -> Tensor:
        """(B, T, V): ``ids[:, :prefix]`` in one forward pass, then the later tokens ``step`` at
        a time (blocks of several new tokens test the causal alignment under a cache) through
        the engine's KV cache; the logits of every position, concatenated."""
        ...

    @abstractmethod
    def embed(self, ids: Tensor) -> Tensor:
        """(B, T, input_width): what :meth:`run_embedded` takes so that
        ``run_embedded(embed(ids))`` equals a forward pass on ``ids`` (positions added inside)."""
        ...

    @abstractmethod
    def run_embedded(self, inputs: Tensor) -> tuple[Tensor, list[Tensor]]:
        """(output (B, T, V or d), [h_0, ..., h_L]) WITH autograd: ``h_0`` the residual stream
        entering the first block, ``h_l`` the stream after block l (each (B, T, d)), so that
        gradients and Jacobians can be taken with respect to any of them."""
        ...

    @abstractmethod
    def rotary_tables(self, seq_len: int) -> tuple[Tensor, Tensor, str] | None:
        """(cos, sin, layout) as the engine applies them to a sequence of ``seq_len`` tokens at
        positions 0 .. seq_len - 1: cos and sin (seq_len, rotary_dim) float32 including any
        attention factor on them, layout ``"half"`` (pairs (i, i + d/2)) or ``"interleaved"``
        (pairs (2i, 2i + 1)); None for a model without RoPE."""
        ...


class ProjectEngine(Engine):
    """The project's :class:`Transformer`, read through its hook points."""

    name = "project"

    def __init__(self, model: nn.Module) -> None:
        from transformer_math.nn.transformer import Transformer

        if not isinstance(model, Transformer):
            raise TypeError(f"ProjectEngine needs a transformer_math Transformer, got "
                            f"{type(model).__name__}")
        self.model = model.eval()
        c = model.config
        self.config = c
        self.num_layers = c.num_layers
        self.num_heads = c.num_heads
        self.num_kv_heads = c.kv_heads
        self.head_dim = c.dim_per_head
        self.hidden_size = c.hidden_size
        self.vocab_size = c.vocab_size
        self.input_width = c.hidden_size if c.input_size is None else c.input_size
        self.causal = bool(c.causal)
        self.max_positions = c.max_seq_len if c.position == "learned" else None
        self._device = next(model.parameters()).device

    def _ids(self, ids: Tensor) -> Tensor:
        return ids.to(self._device)

    @torch.no_grad()
    def logits(self, ids: Tensor, *, attention_mask: Tensor | None = None,
               position_ids: Tensor | None = None) -> Tensor:
        out = self.model(self._ids(ids), attention_mask=_opt(attention_mask, self._device),
                         position_ids=_opt(position_ids, self._device))
        return logits_of(out).float().cpu()

    @torch.no_grad()
    def attention(self, ids: Tensor, *, attention_mask: Tensor | None = None,
                  position_ids: Tensor | None = None) -> list[AttentionRecord]:
        kwargs = dict(attention_mask=_opt(attention_mask, self._device),
                      position_ids=_opt(position_ids, self._device))
        try:  # the scores exist only for exact softmax backends
            _, cache = run_with_cache(self.model, self._ids(ids),
                                      names=["layers.*.attn.hook_scores",
                                             "layers.*.attn.hook_pattern"], **kwargs)
        except ValueError as exc:
            if "hook_scores" not in str(exc):
                raise
            _, cache = run_with_cache(self.model, self._ids(ids),
                                      names="layers.*.attn.hook_pattern", **kwargs)
        records = []
        for layer in range(self.num_layers):
            weights = cache.get(f"layers.{layer}.attn.hook_pattern")
            if weights is None:
                raise ValueError(f"layer {layer} gave no attention pattern (a backend without "
                                 "weights, or a layer without attention)")
            scores = cache.get(f"layers.{layer}.attn.hook_scores")
            records.append(AttentionRecord(weights.float().cpu(),
                                           None if scores is None else scores.float().cpu()))
        return records

    @torch.no_grad()
    def cached_logits(self, ids: Tensor, prefix: int, step: int = 1) -> Tensor:
        ids = self._ids(ids)
        check_cached_args(ids, prefix, step)
        caches = self.model.new_caches()
        outs = [logits_of(self.model(ids[:, :prefix], caches=caches))]
        for t in range(prefix, ids.shape[1], step):
            outs.append(logits_of(self.model(ids[:, t:t + step], caches=caches)))
        return torch.cat(outs, dim=1).float().cpu()

    def embed(self, ids: Tensor) -> Tensor:
        model = self.model
        if model.embed_tokens is None:
            raise ValueError("this model takes vectors, not token ids")
        h = model.embed_tokens(self._ids(ids))
        if self.config.embedding_scale != 1.0:  # as Transformer._embed does
            h = h * torch.tensor(self.config.embedding_scale, device=h.device).to(h.dtype)
        return h

    def run_embedded(self, inputs: Tensor) -> tuple[Tensor, list[Tensor]]:
        n = self.num_layers
        names = [f"layers.{i}.hook_resid_pre" for i in range(n)] + [
            f"layers.{n - 1}.hook_resid_post"]
        out, cache = run_with_cache(self.model, inputs_embeds=inputs.to(self._device),
                                    names=names, detach=False)
        return logits_of(out), [cache[name] for name in names]

    @torch.no_grad()
    def rotary_tables(self, seq_len: int) -> tuple[Tensor, Tensor, str] | None:
        rotary = self.model.rotary
        if rotary is None:
            return None
        positions = torch.arange(seq_len, device=self._device)
        cos, sin = rotary(positions, seq_len)
        return cos.float().cpu(), sin.float().cpu(), rotary.layout


def check_cached_args(ids: Tensor, prefix: int, step: int) -> None:
    if not 1 <= prefix <= ids.shape[1]:
        raise ValueError(f"prefix must be in [1, {ids.shape[1]}], got {prefix}")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")


def _opt(t: Tensor | None, device: torch.device) -> Tensor | None:
    return None if t is None else t.to(device)
