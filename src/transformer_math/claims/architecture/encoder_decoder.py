"""004's encoder and decoder layers as two Transformers: a bidirectional encoder and a causal
decoder with cross-attention to its memory (Vaswani et al. 2017 §3.1)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import seeded
from transformer_math.nn.transformer import Transformer, build_transformer


class _SeedSignatureAttention(nn.Module):
    """The attention signature 004 defines, forward(query, key, value, mask=None), on our MHA.

    Used only to show what 004's DecoderLayer calls do with that signature; ``mask`` follows
    004's convention (0 = blocked).
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.mha = MultiHeadAttention(dim, heads, backend="reference")

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        allowed = None if mask is None else mask.bool()
        return self.mha(query, key, value, attn_mask=allowed)


def _seed_call_outcomes(
    x: Tensor, memory: Tensor, tgt_mask: Tensor, src_mask: Tensor
) -> dict[str, str]:
    """What 004's EncoderLayer's and DecoderLayer's attention calls do with 004's own attention
    signature (004:340, 004:362)."""
    attn = seeded(lambda: _SeedSignatureAttention(x.shape[-1], 2), 0)  # weights do not matter
    outcomes = {}
    calls = {
        "EncoderLayer: self_attn(norm1(x), mask)": lambda: attn(x, src_mask),  # type: ignore[call-arg]
        "self_attn(norm1(x), tgt_mask)": lambda: attn(x, tgt_mask),  # type: ignore[call-arg]
        "cross_attn(norm2(x), encoder_output, src_mask)": lambda: attn(x, memory, src_mask),  # type: ignore[call-arg]
    }
    for name, call in calls.items():
        try:
            call()
            outcomes[name] = "ran"
        except (TypeError, ValueError, RuntimeError) as exc:
            outcomes[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return outcomes


def encoder_decoder_configs(dim: int = 32, num_heads: int = 4, num_layers: int = 2
                            ) -> tuple[TransformerConfig, TransformerConfig]:
    """004's encoder-decoder as two presets of the one config: a bidirectional pre-LN encoder
    and a causal decoder with cross-attention (``memory=``); vectors in, hidden states out."""
    common = {"hidden_size": dim, "num_heads": num_heads, "num_layers": num_layers,
              "attention_backend": "reference", "position": "none", "output_size": 0}
    return (TransformerConfig(causal=False, **common),
            TransformerConfig(causal=True, cross_attention=True, **common))


@dataclass(frozen=True)
class MaskingEffects:
    """Max |change| of decoder outputs under edits of the inputs (``_masking_effects``)."""

    causal_leak: float  # outputs before an edit of later targets
    future_effect: float  # outputs after it
    pad_leak: float  # outputs of source 0 when its padded memory rows change
    real_effect: float  # the smallest effect of a change at one of its real rows
    memory_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    tgt: Tensor
    memory: Tensor
    pad: Tensor


def _masking_effects(encoder: Transformer, decoder: Transformer, g: torch.Generator
                     ) -> MaskingEffects:
    """Leaks and effects of edits to future targets and to padded / real source positions."""
    b, s, t, d = 2, 7, 6, encoder.config.hidden_size
    src = torch.randn(b, s, d, generator=g)
    tgt = torch.randn(b, t, d, generator=g)
    pad = torch.zeros(b, s, dtype=torch.bool)
    pad[0, 5:] = True  # the first source has 5 real tokens and 2 padded
    def decode(x: Tensor, memory: Tensor) -> Tensor:
        return decoder(inputs_embeds=x, memory=memory, memory_key_padding_mask=pad)

    with torch.no_grad():
        memory = encoder(inputs_embeds=src, attention_mask=(~pad).long())
        out = decode(tgt, memory)
        # causality: change the targets after position 3
        tgt2 = tgt.clone()
        tgt2[:, 4:] += torch.randn(b, t - 4, d, generator=g)
        out2 = decode(tgt2, memory)
        # cross-attention masking: change the memory at padded positions of source 0
        memory2 = memory.clone()
        memory2[0, 5:] += 10 * torch.randn(2, d, generator=g)
        pad_leak = float((decode(tgt, memory2)[0] - out[0]).abs().max())
        # the same size of change at each real position of source 0 must be visible; the
        # smallest effect over the 5 real positions is the margin (issue 12: one position with a
        # unit change gave 0.17-0.38 over seeds 0-4, spread 0.08, too close to its own spread)
        real_effects = []
        for j in range(5):
            memory3 = memory.clone()
            memory3[0, j] += 10 * torch.randn(d, generator=g)
            real_effects.append(float((decode(tgt, memory3)[0] - out[0]).abs().max()))
    return MaskingEffects(
        causal_leak=float((out2[:, :4] - out[:, :4]).abs().max()),
        future_effect=float((out2[:, 4:] - out[:, 4:]).abs().max()),
        pad_leak=pad_leak, real_effect=min(real_effects), memory_shape=tuple(memory.shape),
        output_shape=tuple(out.shape), tgt=tgt, memory=memory, pad=pad)


@claim(
    "architecture.encoder-decoder",
    source="004 Transformer编码器与解码器 (EncoderLayer, DecoderLayer); Vaswani et al. 2017 §3.1",
    statement="""Pre-norm encoder and decoder layers: causal self-attention (outputs at t ignore
    targets
    after t) and cross-attention to the encoder output that ignores padded source tokens. 004's
    EncoderLayer and DecoderLayer calls pass masks in the key/value slots of its own attention
    signature and fail.""",
    statement_zh="""Pre-norm 编码器层与解码器层：因果自注意力（位置 t 的输出不受 t
    之后目标的影响），以及对编码器输出的交叉注意力（忽略被填充的源 token）。004 的
    EncoderLayer 与 DecoderLayer 的注意力调用把掩码放进了其自身注意力签名中 key/value
    的位置，调用失败。""",
    falsifier="transformer.cross-attention-mask-dropped",
    expected="refuted",
    version=3,
    kind="code-audit",
    audit="""Issue 31 review: sound (004:340 and 362 V: the seed's call signatures really fail).
    Kind code-audit: the refutation runs the seed's own EncoderLayer/DecoderLayer code; the
    correct statement (causal self-attention, padded source tokens ignored) is measured on the
    project's decoder, whose cross-attention mask bug is the falsifier (nn.transformer). Quotes
    added; check and verdict unchanged.""",
    seed_refs=[("004", 150, 160), ("004", 325, 367)],
    refutes=[Refutation(
        seed="004", line=340,
        quote="x = x + self.dropout(self.self_attn(self.norm1(x), mask))",
        reading="the seed's EncoderLayer.forward runs with its own attention signature "
        "forward(query, key, value, mask=None)",
        says="x = x + self.dropout(self.self_attn(self.norm1(x), mask)) with forward(query, key, "
        "value, mask=None)",
        correct="the mask lands in the key slot and value is missing, so the call fails; "
        "self_attn(h, h, h, mask) with h = norm1(x)"), Refutation(
        seed="004", line=362, to_line=364,
        quote="x = x + self.self_attn(self.norm1(x), tgt_mask) # 交叉注意力 "
        "x = x + self.cross_attn(self.norm2(x), encoder_output, src_mask)",
        reading="the seed's DecoderLayer.forward runs with its own attention signature and "
        "applies the source mask in the cross-attention",
        says="x = x + self.self_attn(self.norm1(x), tgt_mask); x = x + self.cross_attn("
        "self.norm2(x), encoder_output, src_mask) with forward(query, key, value, mask=None)",
        correct="the masks land in the key / value slots: the self-attention call fails and "
        "the cross-attention never applies the source mask; self_attn(h, h, h, mask=tgt_mask) "
        "and cross_attn(h, memory, memory, mask=src_mask) (the project's decoder)")],
)
def check_encoder_decoder(ctx: Context) -> Evidence:
    g = ctx.generator(16)
    g_init = ctx.generator(17)
    enc_cfg, dec_cfg = encoder_decoder_configs()
    encoder = build_transformer(enc_cfg, g_init).eval()
    decoder = build_transformer(dec_cfg, g_init).eval()
    e = _masking_effects(encoder, decoder, g)
    causal_leak, future_effect, pad_leak, real_effect = (
        e.causal_leak, e.future_effect, e.pad_leak, e.real_effect)
    tgt, memory, pad = e.tgt, e.memory, e.pad
    (b, s), t, d = pad.shape, tgt.shape[1], enc_cfg.hidden_size
    shapes_ok = e.memory_shape == (b, s, d) and e.output_shape == (b, t, d)
    tgt_mask = torch.tril(torch.ones(t, t))
    src_mask = (~pad).float().view(b, 1, 1, s)
    seed_calls = _seed_call_outcomes(tgt, memory, tgt_mask, src_mask)
    seed_runs = sum(v == "ran" for v in seed_calls.values())
    margins = [
        at_least("output shapes correct", float(shapes_ok), 1.0),
        at_most("causal leak (max |change| before the edit)", causal_leak, 1e-6),
        at_least("future effect (max |change| after the edit)", future_effect, 1e-3),
        at_most("padded-source leak", pad_leak, 1e-6),
        at_least("min over real source positions of the effect", real_effect, 1e-3),
    ]
    # the seed's version, run: 004's DecoderLayer calls with 004's attention signature
    seed_margins = [at_least(f"004's EncoderLayer/DecoderLayer attention calls that run "
                             f"(of {len(seed_calls)})",
                             float(seed_runs), float(len(seed_calls)))]
    ctx.report_progress(1.0)
    return Evidence(
        predicted={"causal_leak": 0.0, "padded_source_leak": 0.0, "seed_calls": "fail"},
        measured={
            "causal_leak": float(f"{causal_leak:.2e}"),
            "padded_source_leak": float(f"{pad_leak:.2e}"),
            "future_effect": round(future_effect, 4),
            "real_source_effect": round(real_effect, 4),
            "seed_calls": seed_calls,
        },
        tolerance="leaks <= 1e-6 (masked weights are exact zeros; fp32 rounding); real effects "
        "must exceed 1e-3 (the checks can see a change): the future effect, and the smallest "
        "effect of a change of size 10 at each of the 5 real source positions (the padded-leak "
        "change has the same size)",
        verdict=decide(margins, seed_margins),
        notes=[
            msg("004's MultiHeadAttention is forward(query, key, value, mask=None); its "
                "DecoderLayer calls self_attn(norm1(x), tgt_mask) (the mask lands in `key`, "
                "`value` is missing) and cross_attn(norm2(x), encoder_output, src_mask) (the "
                "source mask lands in `value`, no mask is applied). The project's decoder (a "
                "Transformer with cross_attention=True) runs causal self-attention and takes "
                "memory as key and value with memory_key_padding_mask in cross-attention; the "
                "encoder is a causal=False Transformer whose attention_mask drops the padded "
                "source tokens as keys."),
            msg("shapes: memory {memory_shape}, decoder output {output_shape}",
                memory_shape=e.memory_shape, output_shape=e.output_shape),
            msg("Issue 12: the real-source effect was one position changed by N(0, I) (0.17-0.38 "
                "over seeds 0-4, slack / spread 2.2); now each of the 5 real positions is changed "
                "by 10 N(0, I), the size of the padded-position change, and the smallest effect is "
                "the margin (2.2-2.9). Threshold unchanged."),
            msg("Version 2 (issue 14): 'refuted' was a literal; now 004's two calls are run with "
                "004's signature and the refutation is the seed margin 'calls that run = 2' "
                "failing. The falsifier is a bug in the project's decoder (cross-attention drops "
                "memory_key_padding_mask), not a keyword of the check."),
            "Version 3 (issue 18): EncoderLayer's self-attention call (004:340) has the same "
            "wrong signature and is run too; the seed margin counts 3 calls.",
        ],
        details={"seed_calls": seed_calls},
        margins=margins,
        seed_margins=seed_margins,
    )
