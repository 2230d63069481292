"""A checkpoint's ``generation_config.json``: the decoding defaults ``generate()`` starts from.

transformers (5.x, ``generation/configuration_utils.py``) resolves every decoding setting in
three layers: the arguments of the ``generate`` call, then the model's ``generation_config``
(read from ``generation_config.json``), then its global defaults (``max_length`` 20,
``do_sample`` false, ``temperature`` 1, ``top_k`` 50, ``top_p`` 1, ``repetition_penalty`` 1).
:class:`GenerationConfig` holds the middle layer, with ``None`` for "not set by the file", and
:meth:`GenerationConfig.resolved` applies the global defaults; ``nn/generation.py`` applies the
call's arguments on top.

Validation is strict: a value of the wrong JSON type or out of range is a ``ValueError`` naming
the key and the file (``adapters/keys.py`` conventions). Settings the project's decoder does
not implement (beam search, n-gram bans, forced or suppressed tokens, ...) are recorded in
``unsupported`` when set to a value that changes decoding; :func:`generate` refuses to run with
them rather than silently decode differently from transformers. Keys that only steer
transformers' own machinery (``transformers_version``, ``cache_implementation``, output flags)
are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from transformer_math.checkpoints.adapters.keys import bool_key, float_key, int_key, token_ids

DEFAULT_MAX_LENGTH = 20
"""transformers' ``max_length`` when neither it nor ``max_new_tokens`` is set anywhere."""
DEFAULT_TOP_K = 50
"""transformers' ``top_k`` when sampling and unset (0 disables top-k)."""

# Decoding settings generate() does not implement, with the value at which they do nothing.
_NEUTRAL: dict[str, Any] = {
    "num_beams": 1, "num_beam_groups": 1, "penalty_alpha": None, "min_length": 0,
    "min_new_tokens": None, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "force_words_ids": None, "forced_bos_token_id": None,
    "forced_eos_token_id": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "typical_p": 1.0, "min_p": None, "top_h": None, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0,
    "encoder_repetition_penalty": 1.0, "exponential_decay_length_penalty": None,
    "sequence_bias": None, "guidance_scale": None, "watermarking_config": None,
    "num_return_sequences": 1, "constraints": None, "renormalize_logits": False,
    "remove_invalid_values": False, "stop_strings": None, "max_time": None,
    "prompt_lookup_num_tokens": None, "assistant_model": None,
}


@dataclass(frozen=True)
class GenerationConfig:
    """The decoding settings of ``generation_config.json`` (None: not set by the file).

    ``do_sample``: sample (else greedy); ``temperature`` >= 0 (> 0 when sampling), ``top_k``
    >= 0 (0: off), ``top_p`` in (0, 1]: the sampling warpers, applied in that order;
    ``repetition_penalty`` > 0 (CTRL, Keskar et al. 2019: a seen token's logit z becomes
    z / p if z > 0 else z * p);
    ``max_new_tokens`` or ``max_length`` (prompt included); ``eos_token_id`` one id or several;
    ``pad_token_id``, ``bos_token_id``. ``unsupported``: (key, value) of set decoding options
    the project does not implement.
    """

    do_sample: bool | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None
    max_new_tokens: int | None = None
    max_length: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None
    unsupported: tuple[tuple[str, Any], ...] = field(default=())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "generation_config.json"
                  ) -> GenerationConfig:
        """Parse and check a ``generation_config.json`` object (``source`` names it in errors)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{source} must hold a JSON object, got {type(data).__name__}")
        kw = {"source": source}
        top_p = data.get("top_p")
        if top_p is not None:
            top_p = float_key(data, "top_p", **kw, strict=True)
            if top_p > 1.0:
                raise ValueError(f"top_p in {source} must be in (0, 1], got {top_p!r}")
        unsupported = tuple((k, data[k]) for k in sorted(_NEUTRAL)
                            if k in data and data[k] is not None and data[k] != _NEUTRAL[k])
        eos = token_ids(data, "eos_token_id", many=True, **kw)
        return cls(
            do_sample=(None if data.get("do_sample") is None else
                       bool_key(data, "do_sample", **kw)),
            temperature=(None if data.get("temperature") is None else
                         float_key(data, "temperature", **kw)),
            top_k=int_key(data, "top_k", None, **kw, minimum=0),
            top_p=top_p,
            repetition_penalty=(None if data.get("repetition_penalty") is None else
                                float_key(data, "repetition_penalty", **kw, strict=True)),
            max_new_tokens=int_key(data, "max_new_tokens", None, **kw, minimum=0),
            max_length=int_key(data, "max_length", None, **kw, minimum=1),
            bos_token_id=token_ids(data, "bos_token_id", **kw),  # type: ignore[arg-type]
            eos_token_id=eos,
            pad_token_id=token_ids(data, "pad_token_id", **kw),  # type: ignore[arg-type]
            unsupported=unsupported)

    def to_dict(self) -> dict[str, Any]:
        """The set entries as a ``generation_config.json`` object (``unsupported`` written back
        unchanged, so a save does not drop the checkpoint's settings)."""
        out: dict[str, Any] = {}
        for name in ("bos_token_id", "eos_token_id", "pad_token_id", "do_sample", "temperature",
                     "top_k", "top_p", "repetition_penalty", "max_new_tokens", "max_length"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        out.update(dict(self.unsupported))
        return out

    def resolved(self) -> dict[str, Any]:
        """transformers' effective settings: the file's values over its global defaults, as
        ``nn.generation.resolve_settings`` reads them: ``do_sample``; the sampling warpers
        ``temperature`` (1), ``top_k`` (50; None when 0), ``top_p`` (None when 1), used only
        when sampling; ``repetition_penalty`` (1); ``max_new_tokens`` or else ``max_length``
        (20, the prompt included); the eos and pad ids."""
        top_k = DEFAULT_TOP_K if self.top_k is None else self.top_k
        top_p = 1.0 if self.top_p is None else self.top_p
        max_length = self.max_length if self.max_length is not None else (
            None if self.max_new_tokens is not None else DEFAULT_MAX_LENGTH)
        return {
            "do_sample": bool(self.do_sample),
            "temperature": 1.0 if self.temperature is None else self.temperature,
            "top_k": top_k or None,
            "top_p": top_p if top_p < 1.0 else None,
            "repetition_penalty": 1.0 if self.repetition_penalty is None
            else self.repetition_penalty,
            "max_new_tokens": self.max_new_tokens,
            "max_length": max_length,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
        }

    def check_supported(self) -> None:
        """Raise ``ValueError`` naming the set options ``generate()`` does not implement."""
        if self.unsupported:
            shown = ", ".join(f"{k}={v!r}" for k, v in self.unsupported)[:300]
            raise ValueError(
                f"generation_config.json sets {shown}, which generate() does not implement; "
                "remove the key(s) or assign model.generation_config = "
                "dataclasses.replace(model.generation_config, unsupported=())")
