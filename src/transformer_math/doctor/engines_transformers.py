"""The doctor's second engine: Hugging Face ``transformers``' own implementation of a checkpoint.

:class:`TransformersEngine` runs a ``transformers`` causal LM (``LlamaForCausalLM``,
``GPT2LMHeadModel``, ``Qwen2``/``Mistral``/``Gemma``/``Phi3ForCausalLM``, ...) behind the
:class:`~transformer_math.doctor.engines.Engine` interface, with the same conventions as
:class:`~transformer_math.doctor.engines.ProjectEngine`, so that every dynamic check examines the
implementation a user deploys and the two engines can be compared on the same weights.

How each method reads the model:

- attention weights: HF's *eager* attention (the only implementation that returns them with
  ``output_attentions=True``); the model is switched to eager when built with another one
  (``set_attn_implementation("eager")``; this changes the model object it is given). The
  pre-softmax scores are recorded soundly: a ``TorchFunctionMode`` records the input of every
  ``softmax(..., dim=-1)`` call on a 4-d tensor during the forward (HF's eager attention calls
  ``nn.functional.softmax`` on the scaled, masked, soft-capped logits), and the records are kept
  only when there is exactly one per layer and ``softmax(scores)`` reproduces the returned
  weights (max abs difference < 1e-5); otherwise ``scores`` is None.
- padding: ``attention_mask`` is HF's (1 = token). When it is given without ``position_ids``,
  the positions count real tokens only, ``cumsum(mask) - 1``: what the project's
  ``Transformer.forward`` does and what HF's ``generate`` does (its position ids from the
  attention mask), so a left-padded row is comparable with the unpadded one. (A bare HF forward
  numbers the pads as positions, which shifts every real token.) Pads themselves get position
  1, as in the project model (``generate`` uses 0 in transformers 5, 1 in older releases); a
  pad's position reaches no real token, since its key is masked.
- hidden states: forward hooks on the decoder layers (``model.model.layers`` or GPT-2's
  ``model.transformer.h``): ``h_0`` is the input of the first layer (token embedding, plus
  ``wpe`` for GPT-2), ``h_l`` the output of layer l, so the last entry is the last block's
  output BEFORE the final norm, as in the project engine. (HF's ``output_hidden_states``
  replaces its last entry by the final-normed state; the hooks avoid that convention.)
- embeddings: ``get_input_embeddings()(ids)``, exactly what the forward computes from ids
  before anything else, so ``run_embedded(embed(ids))`` equals a forward on ``ids``. Gemma's
  ``sqrt(d)`` normaliser: current transformers applies it in the embedding module
  (``GemmaTextScaledWordEmbedding``), so ``embed`` includes it and ``inputs_embeds`` is not
  rescaled; older releases multiplied ``inputs_embeds`` by it inside ``GemmaModel.forward``
  (on both paths), where ``embed`` is unscaled and the forward scales it: the identity holds
  either way. ``h_0`` (below) is the scaled stream in both.
- KV cache: HF's own cache (``use_cache=True``, the cache object the model returns passed back
  in), with explicit ``position_ids`` ``past .. past + step - 1``.
- rotary tables: the model's ``rotary_emb(x, position_ids)``, which returns cos/sin already
  multiplied by the scaling's attention factor (YaRN, LongRoPE) and, for dynamic types, updated
  for the sequence length; HF rotates pairs (i, i + d/2): layout ``"half"``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from transformer_math.doctor.engines import (
    LOAD_DTYPE,
    AttentionRecord,
    Engine,
    check_cached_args,
)

SCORES_TOLERANCE = 1e-5
"""softmax(recorded scores) must match HF's returned weights to this max abs difference."""


class _SoftmaxRecorder(TorchFunctionMode):
    """Records the input of every ``softmax(x, dim=-1)`` on a 4-d tensor (the attention logits
    of an eager attention layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[Tensor] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in (torch.nn.functional.softmax, torch.softmax, torch.Tensor.softmax) and args:
            x = args[0]
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            if isinstance(x, Tensor) and x.dim() == 4 and dim in (-1, 3):
                self.inputs.append(x.detach())
        return func(*args, **kwargs)


def _first_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, tuple | list) and value and isinstance(value[0], Tensor):
        return value[0]
    raise TypeError(f"a decoder layer returned {type(value).__name__}, not a tensor")


class TransformersEngine(Engine):
    """A ``transformers`` causal LM behind the doctor's :class:`Engine` interface."""

    name = "transformers"

    def __init__(self, model: nn.Module) -> None:
        config = getattr(model, "config", None)
        if config is None or not hasattr(model, "get_input_embeddings"):
            raise TypeError(f"TransformersEngine needs a transformers PreTrainedModel, got "
                            f"{type(model).__name__}")
        if getattr(config, "is_encoder_decoder", False):
            raise TypeError("TransformersEngine runs decoder-only causal LMs, got an "
                            "encoder-decoder model")
        if getattr(config, "_attn_implementation", "eager") != "eager":
            if hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation("eager")
            else:  # older releases: the config attribute is read at every forward
                config._attn_implementation = "eager"
        self.model = model.eval()
        self.hf_config = config
        self.base = getattr(model, model.base_model_prefix, None) or model.base_model
        layers = getattr(self.base, "layers", None)
        if layers is None:
            layers = getattr(self.base, "h", None)
        if layers is None:
            raise TypeError(f"cannot find the decoder layers of {type(model).__name__} "
                            "(looked for .layers and .h on the base model)")
        self.layers: nn.ModuleList = layers
        self.num_layers = len(layers)
        self.num_heads = int(_cfg(config, "num_attention_heads", "n_head"))
        kv = _cfg(config, "num_key_value_heads", "n_head_kv", default=None)
        self.num_kv_heads = int(kv) if kv is not None else self.num_heads
        self.hidden_size = int(_cfg(config, "hidden_size", "n_embd"))
        head_dim = getattr(config, "head_dim", None)
        self.head_dim = int(head_dim) if head_dim else self.hidden_size // self.num_heads
        self.vocab_size = int(config.vocab_size)
        self.input_width = int(model.get_input_embeddings().weight.shape[1])
        self.causal = True
        self.rotary = getattr(self.base, "rotary_emb", None)
        # learned position tables bound the length (GPT-2's n_positions); RoPE models do not
        table = getattr(self.base, "wpe", None)
        self.max_positions = int(table.weight.shape[0]) if table is not None else None
        self.supports_cache = True
        parameter = next(model.parameters())
        self._device, self._dtype = parameter.device, parameter.dtype
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    @classmethod
    def from_path(cls, path: str | Path) -> TransformersEngine:
        """Load a checkpoint directory with ``AutoModelForCausalLM`` (local files only, no
        remote code, safetensors only, float32, eager attention). The doctor calls it only
        after the project's own config and header checks passed. A directory transformers
        refuses (e.g. weights only in ``pytorch_model.bin``, which it would unpickle) is a
        ValueError."""
        import transformers
        from transformers import AutoModelForCausalLM

        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_kw = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"  # renamed in 4.56
        try:
            model = AutoModelForCausalLM.from_pretrained(
                str(path), attn_implementation="eager", local_files_only=True,
                trust_remote_code=False, use_safetensors=True, **{dtype_kw: LOAD_DTYPE})
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"transformers cannot load {str(path)!r}: {exc} (the transformers "
                             "engine reads safetensors only; a pytorch_model.bin needs "
                             "--engine project)"[:500]) from None
        return cls(model)

    # -------------------------------------------------------------------------------- helpers

    def _forward(self, ids: Tensor | None = None, **kwargs: Any) -> Any:
        if ids is not None:
            kwargs["input_ids"] = ids.to(self._device)
        kwargs = {k: (v.to(self._device) if isinstance(v, Tensor) else v)
                  for k, v in kwargs.items() if v is not None}
        kwargs.setdefault("use_cache", False)
        return self.model(**kwargs, return_dict=True)

    @staticmethod
    def padding_positions(attention_mask: Tensor) -> Tensor:
        """(B, T) positions counting real tokens only: ``cumsum(mask) - 1`` (HF ``generate``'s
        and the project model's convention), pads at 1 (the project model's)."""
        keep = attention_mask.to(torch.bool)
        return (keep.long().cumsum(-1) - 1).masked_fill(~keep, 1)

    def _masks(self, attention_mask: Tensor | None, position_ids: Tensor | None
               ) -> dict[str, Tensor | None]:
        if attention_mask is not None and position_ids is None:
            position_ids = self.padding_positions(attention_mask)
        if position_ids is not None and position_ids.dim() == 1:
            position_ids = position_ids.unsqueeze(0)
        return {"attention_mask": attention_mask, "position_ids": position_ids}

    # ------------------------------------------------------------------------------ interface

    @torch.no_grad()
    def logits(self, ids: Tensor, *, attention_mask: Tensor | None = None,
               position_ids: Tensor | None = None) -> Tensor:
        out = self._forward(ids, **self._masks(attention_mask, position_ids))
        return out.logits.float().cpu()

    @torch.no_grad()
    def attention(self, ids: Tensor, *, attention_mask: Tensor | None = None,
                  position_ids: Tensor | None = None) -> list[AttentionRecord]:
        recorder = _SoftmaxRecorder()
        with recorder:
            out = self._forward(ids, output_attentions=True,
                                **self._masks(attention_mask, position_ids))
        weights = out.attentions
        if weights is None or len(weights) != self.num_layers or any(w is None for w in weights):
            raise ValueError("the model returned no attention weights (not eager attention?)")
        scores = recorder.inputs if len(recorder.inputs) == self.num_layers else None
        if scores is not None:
            for s, w in zip(scores, weights, strict=True):
                if s.shape != w.shape or not torch.isfinite(w).all() or float(
                        (torch.softmax(s.float(), dim=-1) - w.float()).abs().max()
                ) > SCORES_TOLERANCE:
                    scores = None
                    break
        return [AttentionRecord(w.float().cpu(),
                                None if scores is None else scores[i].float().cpu())
                for i, w in enumerate(weights)]

    @torch.no_grad()
    def cached_logits(self, ids: Tensor, prefix: int, step: int = 1) -> Tensor:
        check_cached_args(ids, prefix, step)
        b = ids.shape[0]

        def positions(start: int, stop: int) -> Tensor:
            return torch.arange(start, stop).unsqueeze(0).expand(b, -1)

        out = self._forward(ids[:, :prefix], position_ids=positions(0, prefix), use_cache=True)
        cache = _returned_cache(out)
        outs = [out.logits]
        for t in range(prefix, ids.shape[1], step):
            stop = min(t + step, ids.shape[1])
            out = self._forward(ids[:, t:stop], position_ids=positions(t, stop), use_cache=True,
                                **{self._cache_kw: cache})
            cache = _returned_cache(out)
            outs.append(out.logits)
        return torch.cat(outs, dim=1).float().cpu()

    def embed(self, ids: Tensor) -> Tensor:
        return self.model.get_input_embeddings()(ids.to(self._device))

    def run_embedded(self, inputs: Tensor) -> tuple[Tensor, list[Tensor]]:
        states: list[Tensor | None] = [None] * (self.num_layers + 1)

        def before_first(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
                         ) -> None:
            states[0] = args[0] if args else kwargs["hidden_states"]

        def after(index: int) -> Callable[..., None]:
            def hook(module: nn.Module, args: Any, output: Any) -> None:
                states[index + 1] = _first_tensor(output)
            return hook

        handles = [self.layers[0].register_forward_pre_hook(before_first, with_kwargs=True)]
        handles += [layer.register_forward_hook(after(i)) for i, layer in enumerate(self.layers)]
        try:
            out = self.model(inputs_embeds=inputs.to(self._device), use_cache=False,
                             return_dict=True)
        finally:
            for handle in handles:
                handle.remove()
        if any(s is None for s in states):
            raise ValueError("a decoder layer did not run (hidden states missing)")
        return out.logits, [s for s in states if s is not None]

    @torch.no_grad()
    def rotary_tables(self, seq_len: int) -> tuple[Tensor, Tensor, str] | None:
        if self.rotary is None:
            return None
        x = torch.zeros(1, 1, 1, dtype=self._dtype, device=self._device)
        positions = torch.arange(seq_len, device=self._device).unsqueeze(0)
        cos, sin = self.rotary(x, positions)
        return cos[0].float().cpu(), sin[0].float().cpu(), "half"


def _cfg(config: Any, *names: str, **default: Any) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    if "default" in default:
        return default["default"]
    raise TypeError(f"the config has none of {names}")


def _returned_cache(out: Any) -> Any:
    for key in ("cache", "past_key_values"):
        cache = getattr(out, key, None)
        if cache is not None:
            return cache
    raise ValueError("the model returned no KV cache with use_cache=True")

