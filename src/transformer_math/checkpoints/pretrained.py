"""The model a checkpoint loads into: a :class:`Transformer` whose forward returns an output.

transformers' causal LMs return a ``CausalLMOutput`` from every forward call (``.logits``, and
``.loss`` when ``labels`` are given); code written against them reads ``model(ids).logits``.
:class:`PretrainedTransformer` is the project's :class:`Transformer` (same modules, weights,
hooks and arguments) with that return convention, so such code runs unchanged on a loaded
checkpoint. The plain :class:`Transformer` keeps returning the logits tensor unless
``labels`` or ``return_dict=True`` is given (``nn/transformer.py``).

What a loaded checkpoint also carries: ``checkpoint_info`` (family, token ids, stored dtype;
``checkpoints/info.py``) and ``generation_config`` (the decoding defaults of
``generation_config.json``; ``checkpoints/generation_config.py``), which
``nn.generation.generate`` reads.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from transformer_math.checkpoints.generation_config import GenerationConfig
from transformer_math.checkpoints.info import CheckpointInfo
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import CausalLMOutput, Transformer


def logits_of(output: Tensor | CausalLMOutput) -> Tensor:
    """The logits of a forward output, whichever convention the model follows."""
    return output.logits if isinstance(output, CausalLMOutput) else output


class PretrainedTransformer(Transformer):
    """A :class:`Transformer` loaded from a checkpoint: ``forward`` always returns a
    :class:`CausalLMOutput` (``.logits`` (B, T, V); ``.loss`` the shifted next-token
    cross-entropy when ``labels`` are given, else None), as transformers' models do."""

    checkpoint_info: CheckpointInfo
    generation_config: GenerationConfig

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        self.generation_config = GenerationConfig()

    def forward(self, input_ids: Tensor | None = None, *, logits_to_keep: int = 0,
                **kwargs: Any) -> CausalLMOutput:
        """:meth:`Transformer.forward` with ``return_dict=True``."""
        kwargs["return_dict"] = True
        out = super().forward(input_ids, logits_to_keep=logits_to_keep, **kwargs)
        assert isinstance(out, CausalLMOutput)
        return out

    def generate(self, input_ids: Tensor, max_new_tokens: int | None = None,  # type: ignore[override]
                 **kwargs: Any) -> Tensor:
        """:func:`transformer_math.nn.generation.generate` with the checkpoint's
        ``generation_config`` supplying every setting the call leaves out (``max_new_tokens``
        included: its ``max_new_tokens``, else ``max_length`` (default 20) minus the prompt)."""
        from transformer_math.nn.generation import UNSET, generate

        return generate(self, input_ids, UNSET if max_new_tokens is None else max_new_tokens,
                        **kwargs)
