"""What a checkpoint says beyond the architecture: its family and special token ids.

The architecture itself is a :class:`transformer_math.nn.config.TransformerConfig`; the loaded
model is a plain :class:`transformer_math.nn.transformer.Transformer` carrying this record as
``model.checkpoint_info`` (``save_pretrained`` writes it back into ``config.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckpointInfo:
    """Family (an ``ADAPTERS`` name) and the special token ids of a checkpoint's config.

    ``eos_token_id`` may be one id or several (Llama 3 lists more than one); ``dtype`` is the
    stored dtype named in the config (what ``from_pretrained(dtype="auto")`` loads in).
    """

    family: str
    bos_token_id: int | None = None
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None
    dtype: str | None = None

    @classmethod
    def from_config(cls, family: str, cfg: Mapping[str, Any], source: str = "config.json"
                    ) -> CheckpointInfo:
        """The token ids (and dtype) of an HF ``config.json`` dict; ids must be JSON integers
        (``eos_token_id``: or a list of them), ``dtype`` a string."""
        from transformer_math.checkpoints.adapters.keys import str_key, token_ids

        dtype = cfg.get("dtype", cfg.get("torch_dtype"))
        if dtype is not None:
            dtype = str_key({"dtype": dtype}, "dtype", source=source)
        bos, pad = (token_ids(cfg, k, source=source) for k in ("bos_token_id", "pad_token_id"))
        return cls(family=family, bos_token_id=bos,  # type: ignore[arg-type]
                   eos_token_id=token_ids(cfg, "eos_token_id", source=source, many=True),
                   pad_token_id=pad, dtype=dtype)  # type: ignore[arg-type]

    def to_config(self) -> dict[str, Any]:
        """The token-id entries of an HF ``config.json`` dict."""
        eos = list(self.eos_token_id) if isinstance(self.eos_token_id, tuple) else (
            self.eos_token_id)
        return {"bos_token_id": self.bos_token_id, "eos_token_id": eos,
                "pad_token_id": self.pad_token_id}
