"""The roofline model of ``theory.latency`` against the project's own Transformer timed here.

Issue 20 item 1 asks for the cost model to be checked against measured CPU latency. This module
builds the :class:`~transformer_math.nn.transformer.Transformer` of a given
:class:`~transformer_math.theory.latency.ModelShape` (float32, RoPE, no biases, the ``sdpa``
backend), times a prefill of ``tokens`` tokens and one cached decode step after them (median of
``repeats`` runs after one warm-up, ``diagnostics.timing.median_seconds``) and evaluates the
model on the ``cpu-here`` preset, whose FLOP/s and bandwidth are measured in the same process
just before (a matmul and a copy, ``theory.latency.measure_cpu_hardware``). The ratio measured /
predicted says how far the roofline (a lower bound at efficiency 1: it has no per-kernel launch
cost, no Python) sits below what this machine does; it is reported, never tuned away.
"""

from __future__ import annotations

from typing import Any

MAX_WEIGHTS = 1 << 26
"""Largest model (weight entries, ~256 MiB in float32) the probe builds on a CPU."""
MAX_TOKENS = 4096


def measure_against_model(shape: Any, tokens: int, *, repeats: int = 7) -> dict[str, Any]:
    """Measured and predicted seconds of a prefill of ``tokens`` and of one cached decode step.

    The vocabulary is ``shape.vocab`` (256 when the shape has no unembedding: the project's
    model needs token ids), and the prediction counts the logits of every position of the
    prefill, as the model computes them. Raises ValueError for a model over
    :data:`MAX_WEIGHTS` weights or a context over :data:`MAX_TOKENS`.
    """
    import dataclasses

    import torch

    from transformer_math.diagnostics.timing import median_seconds
    from transformer_math.nn.config import TransformerConfig
    from transformer_math.nn.transformer import build_transformer
    from transformer_math.theory import latency as lm

    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be an int in [1, {MAX_TOKENS}], got {tokens!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    shape = dataclasses.replace(shape, vocab=shape.vocab or 256)
    if shape.weights() > MAX_WEIGHTS:
        raise ValueError(f"the model has {shape.weights():,} weights; the CPU probe builds at "
                         f"most {MAX_WEIGHTS:,} (give a smaller --hidden/--layers)")
    config = TransformerConfig(
        hidden_size=shape.hidden, num_layers=shape.layers, num_heads=shape.heads,
        num_kv_heads=shape.kv_heads, head_dim=shape.head_dim, intermediate_size=shape.ffn,
        feedforward="swiglu" if shape.mlp == "swiglu" else "gelu", vocab_size=shape.vocab,
        max_seq_len=tokens + 1, position="rope", attention_bias=False, mlp_bias=False)
    hw = lm.measure_cpu_hardware()
    model = build_transformer(config, 0).eval()  # seeded: the global RNG is not touched
    x = torch.randint(0, shape.vocab, (1, tokens), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        prefill = median_seconds(lambda: model(x), repeats=repeats)
        caches = model.new_caches()
        model(x, caches=caches)

        def step() -> None:
            model(x[:, :1], caches=caches)
            for c in caches:  # back to ``tokens`` cached positions for the next repeat
                c.key, c.value = c.key[..., :tokens, :], c.value[..., :tokens, :]

        decode = median_seconds(step, repeats=repeats)
    predicted_prefill = lm.prefill_cost(shape, hw, tokens, attention="standard",
                                        logits="all").seconds
    predicted_decode = lm.decode_cost(shape, hw, tokens, attention="standard",
                                      logits="all").seconds
    return {"hardware": hw.to_json(), "model": shape.to_json(), "tokens": tokens,
            "threads": torch.get_num_threads(), "repeats": repeats,
            "prefill": {"measured_s": prefill, "predicted_s": predicted_prefill,
                        "ratio": prefill / predicted_prefill},
            "decode": {"measured_s": decode, "predicted_s": predicted_decode,
                       "ratio": decode / predicted_decode}}
