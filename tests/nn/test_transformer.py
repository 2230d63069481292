"""The one Transformer: pre/post-norm equations, encoder-decoder memory masking, causality,
KV-cache equality, generation, training, validation (was tests/architecture/test_norms_blocks.py
and test_language_model.py, on the removed nn.blocks / nn.language_model)."""

from __future__ import annotations

import pytest
import torch

from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.transformer import Transformer, TransformerBlock, build_transformer


def _block(**kwargs: object) -> TransformerBlock:
    return TransformerBlock(TransformerConfig(hidden_size=16, num_heads=2, **kwargs)).eval()


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_block_equations(placement: str) -> None:
    """pre: x' = x + A(N1 x), y = x' + F(N2 x'); post: x' = N1(x + A x), y = N2(x' + F x')."""
    torch.manual_seed(0)
    block = _block(norm_placement=placement, causal=True)
    x = torch.randn(2, 5, 16)
    y = block(x)
    a, f = block.attn, block.ffn
    n1, n2 = block.attn_norm, block.ffn_norm
    assert a is not None and f is not None and n1 is not None and n2 is not None
    with torch.no_grad():
        if placement == "pre":
            mid = x + a(n1(x), is_causal=True)
            want = mid + f(n2(mid))
        else:
            mid = n1(x + a(x, is_causal=True))
            want = n2(mid + f(mid))
    torch.testing.assert_close(y, want)


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_block_hooks_are_the_residual_branches(placement: str) -> None:
    """hook_attn_out / hook_ffn_out are f(.) of h + f(.) (pre) and resid_mid the sum or norm."""
    model = build_transformer(TransformerConfig(hidden_size=16, num_heads=2, num_layers=2,
                                                norm_placement=placement, output_size=0), 0)
    x = torch.randn(2, 5, 16)
    _, cache = run_with_cache(model, inputs_embeds=x, names=["layers.1.*"])
    pre, attn = cache["layers.1.hook_resid_pre"], cache["layers.1.hook_attn_out"]
    mid, ffn = cache["layers.1.hook_resid_mid"], cache["layers.1.hook_ffn_out"]
    layer = model.layers[1]
    assert layer.attn_norm is not None and layer.ffn_norm is not None
    with torch.no_grad():
        if placement == "pre":
            torch.testing.assert_close(mid, pre + attn)
            torch.testing.assert_close(cache["layers.1.hook_resid_post"], mid + ffn)
        else:
            torch.testing.assert_close(mid, layer.attn_norm(pre + attn))
            torch.testing.assert_close(cache["layers.1.hook_resid_post"],
                                       layer.ffn_norm(mid + ffn))


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_block_causality(placement: str) -> None:
    torch.manual_seed(0)
    block = _block(norm_placement=placement, feedforward="swiglu", norm="rmsnorm")
    x = torch.randn(2, 6, 16)
    y = block(x, is_causal=True)
    x2 = x.clone()
    x2[:, 4:] += 1.0
    torch.testing.assert_close(block(x2, is_causal=True)[:, :4], y[:, :4])
    assert (block(x2, is_causal=True)[:, 4:] - y[:, 4:]).abs().max() > 1e-3


def test_post_norm_block_output_is_normalised() -> None:
    y = _block(norm_placement="post")(torch.randn(2, 5, 16) * 10)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)


def _encoder_decoder() -> tuple[Transformer, Transformer]:
    common = {"hidden_size": 16, "num_heads": 4, "position": "none", "output_size": 0}
    encoder = build_transformer(TransformerConfig(causal=False, **common), 0).eval()
    decoder = build_transformer(TransformerConfig(cross_attention=True, **common), 1).eval()
    return encoder, decoder


def test_encoder_decoder_shapes_causality_and_cross_masking() -> None:
    encoder, decoder = _encoder_decoder()
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randn(2, 7, 16, generator=g), torch.randn(2, 5, 16, generator=g)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 4:] = True
    with torch.no_grad():
        memory = encoder(inputs_embeds=src, attention_mask=(~pad).long())
        out = decoder(inputs_embeds=tgt, memory=memory, memory_key_padding_mask=pad)
        assert memory.shape == (2, 7, 16) and out.shape == (2, 5, 16)
        # padded source tokens change neither the memory of real tokens nor the decoder
        src2 = src.clone()
        src2[1, 4:] = 100.0
        memory_b = encoder(inputs_embeds=src2, attention_mask=(~pad).long())
        torch.testing.assert_close(memory_b[1, :4], memory[1, :4])
        memory2 = memory.clone()
        memory2[1, 4:] = 100.0
        torch.testing.assert_close(
            decoder(inputs_embeds=tgt, memory=memory2, memory_key_padding_mask=pad), out)
        # ... but without the mask they do
        unmasked = decoder(inputs_embeds=tgt, memory=memory2)
        assert (unmasked[1] - out[1]).abs().max() > 1e-3
        # the encoder is bidirectional: a late source token moves early memory rows
        src3 = src.clone()
        src3[0, 6] += torch.randn(16, generator=g)  # not along (1, ..., 1): LN removes that
        assert (encoder(inputs_embeds=src3)[0, 0] - encoder(inputs_embeds=src)[0, 0]
                ).abs().max() > 1e-4
        # the decoder is causal: future targets cannot influence earlier outputs
        tgt2 = tgt.clone()
        tgt2[:, 3:] = 0.0
        out2 = decoder(inputs_embeds=tgt2, memory=memory, memory_key_padding_mask=pad)
        torch.testing.assert_close(out2[:, :3], out[:, :3])


def test_decoder_rejects_missing_or_bad_memory() -> None:
    _, decoder = _encoder_decoder()
    x = torch.randn(2, 3, 16)
    with pytest.raises(ValueError, match="memory"):
        decoder(inputs_embeds=x)
    with pytest.raises(ValueError, match="memory"):
        decoder(inputs_embeds=x, memory=torch.randn(3, 4, 16))


CONFIGS = [
    {},
    {"feedforward": "swiglu", "norm": "rmsnorm", "attention_bias": False, "mlp_bias": False,
     "num_kv_heads": 2},
    {"norm_placement": "post", "tie_embeddings": True, "position": "none"},
    {"attention_backend": "tiled"},
    {"attention_backend": "reference", "num_layers": 3},
    {"position": "rope", "norm": "rmsnorm_hf", "head_dim": 4},
]


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_cached_generation_equals_uncached(kwargs: dict) -> None:
    cfg = TransformerConfig(vocab_size=40, max_seq_len=24, hidden_size=32, **kwargs)
    model = build_transformer(cfg, 0).eval()
    prompt = torch.randint(0, 40, (2, 4), generator=torch.Generator().manual_seed(1))
    assert torch.equal(model.generate(prompt, 12), model.generate(prompt, 12, use_cache=False))
    sampled = [
        model.generate(prompt, 12, temperature=0.8, top_k=10,
                       generator=torch.Generator().manual_seed(3), use_cache=use)
        for use in (True, False)
    ]
    assert torch.equal(sampled[0], sampled[1])


def test_cached_logits_equal_full_forward() -> None:
    cfg = TransformerConfig(vocab_size=30, max_seq_len=16, hidden_size=32)
    model = build_transformer(cfg, 0).eval()
    tokens = torch.randint(0, 30, (2, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(tokens)
        caches = model.new_caches()
        steps = [model(tokens[:, :6], caches=caches)] + [
            model(tokens[:, i: i + 1], caches=caches) for i in range(6, 10)
        ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


def test_training_step_reduces_loss() -> None:
    model = build_transformer(TransformerConfig(vocab_size=16, max_seq_len=16, hidden_size=32), 0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.arange(16).repeat(4, 1) % 16
    losses = []
    for _ in range(30):
        logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 16), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_validation() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        TransformerConfig(vocab_size=0)
    with pytest.raises(ValueError, match="position"):
        TransformerConfig(vocab_size=8, position="absolute")
    with pytest.raises(ValueError, match="num_heads"):
        TransformerConfig(hidden_size=10, num_heads=3)
    with pytest.raises(ValueError, match="norm_placement"):
        TransformerConfig(norm_placement="middle")
    with pytest.raises(ValueError, match="dropout"):
        TransformerConfig(dropout=1.5)
    model = build_transformer(TransformerConfig(vocab_size=8, max_seq_len=8, hidden_size=16), 0)
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.full((1, 3), 8, dtype=torch.long))
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(torch.zeros(1, 2, dtype=torch.long), -1)


def _stack(**kwargs: object) -> Transformer:
    cfg = TransformerConfig(hidden_size=16, num_heads=2, num_layers=1, position="none",
                            output_size=0, attention_backend="reference", **kwargs)
    return build_transformer(cfg, 0).eval()


def test_pre_ln_as_post_ln_bug_moves_the_norm_and_the_correct_block_is_pre_ln() -> None:
    """Planted bug norm.pre-ln-as-post-ln (both directions)."""
    from transformer_math.bugs import plant

    block = _block(norm_placement="pre", sublayers="ffn_only")
    x = torch.randn(2, 3, 16) * 5 + 2
    assert block.ffn is not None and block.ffn_norm is not None
    with torch.no_grad():
        pre = x + block.ffn(block.ffn_norm(x))
        post = block.ffn_norm(x + block.ffn(x))
        assert torch.allclose(block(x), pre, atol=1e-6)
        with plant("norm.pre-ln-as-post-ln"):
            assert torch.allclose(block(x), post, atol=1e-6)
    assert not torch.allclose(pre, post, atol=1e-2)


def test_residual_dropped_bug_loses_the_identity_and_the_correct_block_keeps_it() -> None:
    """Planted bug residual.dropped (both directions)."""
    from transformer_math.bugs import plant

    block = _block(norm_placement="pre", sublayers="ffn_only")
    x = torch.randn(2, 3, 16)
    assert block.ffn is not None and block.ffn_norm is not None
    with torch.no_grad():
        branch = block.ffn(block.ffn_norm(x))
        assert torch.allclose(block(x), x + branch, atol=1e-6)
        with plant("residual.dropped"):
            assert torch.allclose(block(x), branch, atol=1e-6)


def test_cross_attention_mask_dropped_bug_leaks_padding_and_the_correct_one_does_not() -> None:
    """Planted bug transformer.cross-attention-mask-dropped (both directions)."""
    from transformer_math.bugs import plant

    decoder = _stack(cross_attention=True)
    x, memory = torch.randn(1, 3, 16), torch.randn(1, 5, 16)
    pad = torch.tensor([[False, False, False, True, True]])
    memory2 = memory.clone()
    memory2[0, 3:] += 10.0
    with torch.no_grad():
        def leak() -> float:
            a = decoder(inputs_embeds=x, memory=memory, memory_key_padding_mask=pad)
            b = decoder(inputs_embeds=x, memory=memory2, memory_key_padding_mask=pad)
            return float((a - b).abs().max())

        assert leak() < 1e-6
        with plant("transformer.cross-attention-mask-dropped"):
            assert leak() > 1e-3


def test_padding_mask_inverted_bug_masks_real_tokens_and_the_correct_one_does_not() -> None:
    """Planted bug transformer.padding-mask-inverted (both directions): with an all-ones
    attention_mask the output equals the unmasked one; inverted, every key is masked."""
    from transformer_math.bugs import plant

    model = _stack(causal=False)
    x = torch.randn(2, 4, 16)
    ones = torch.ones(2, 4, dtype=torch.long)
    with torch.no_grad():
        plain = model(inputs_embeds=x)
        assert torch.allclose(model(inputs_embeds=x, attention_mask=ones), plain, atol=1e-6)
        with plant("transformer.padding-mask-inverted"):
            bad = model(inputs_embeds=x, attention_mask=ones)
    assert float((bad - plain).abs().max()) > 1e-3
