"""ACT: loss terms, inference modes, latent per episode, the three Transformer trunks."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy, act_loss
from transformer_math.robotics.training import build_seeded


def test_act_loss_hand_example():
    pred = torch.tensor([[[1.0, 2.0]]])
    target = torch.zeros(1, 1, 2)
    mu = torch.tensor([[1.0, 0.0]])
    logvar = torch.tensor([[0.0, math.log(2.0)]])
    loss, info = act_loss(pred, target, mu, logvar, kl_weight=10.0)
    kl = 0.5 * (1 + 1 - 1 - 0) + 0.5 * (0 + 2 - 1 - math.log(2.0))
    assert info["l1"] == pytest.approx(1.5)
    assert info["kl"] == pytest.approx(kl)
    assert float(loss) == pytest.approx(1.5 + 10 * kl)



def test_act_forward_and_inference_modes():
    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_sampling="sample")
    act = build_seeded(lambda: ACTPolicy(cfg), 0)
    batch = {"observation.state": torch.randn(4, 2), "action": torch.randn(4, 3, 2)}
    loss, info = act(batch)
    assert info["kl"] >= 0 and float(loss.detach()) == pytest.approx(info["l1"] + 10 * info["kl"],
                                                            rel=1e-5)
    act.eval()
    c1 = act.predict_action_chunk(batch)
    c2 = act.predict_action_chunk(batch)
    assert c1.shape == (4, 3, 2) and not torch.allclose(c1, c2)  # z sampled per call
    with pytest.raises(ValueError, match="action"):
        act({"observation.state": torch.randn(4, 2), "action": torch.randn(4, 2, 2)})
    with pytest.raises(ValueError, match=r"observation\.state"):
        act.predict_action_chunk({"observation.state": torch.randn(4, 5)})



def test_act_latent_held_per_episode_and_mse_variant():
    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_sampling="sample_per_episode")
    act = build_seeded(lambda: ACTPolicy(cfg), 0).eval()
    obs = {"observation.state": torch.randn(2, 2)}
    act.reset()
    c1, c2 = act.predict_action_chunk(obs), act.predict_action_chunk(obs)
    torch.testing.assert_close(c1, c2)  # same latent within an episode
    act.reset()
    assert not torch.allclose(act.predict_action_chunk(obs), c1)  # new episode, new latent
    loss, info = act_loss(torch.ones(1, 1, 2), torch.zeros(1, 1, 2), torch.zeros(1, 1),
                          torch.zeros(1, 1), 10.0, reconstruction="mse")
    assert info["mse"] == pytest.approx(1.0) and float(loss) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="reconstruction_loss"):
        ACTConfig(2, 2, reconstruction_loss="huber")


def test_act_trunks_are_transformer_presets():
    from transformer_math.nn.transformer import Transformer
    from transformer_math.robotics.policies.act import act_trunks

    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=2, decoder_layers=1)
    trunks = act_trunks(cfg)
    for c in trunks.values():
        assert c.vocab_size is None and c.input_size is None and c.head_size == 0
        assert not c.causal and c.has_final_norm and c.hidden_size == 16
    assert trunks["decoder"].cross_attention and not trunks["posterior"].cross_attention
    assert all(c.position == "none" for c in trunks.values())  # the policy adds its tables
    act = build_seeded(lambda: ACTPolicy(cfg), 0)
    assert all(isinstance(m, Transformer) for m in (act.posterior, act.memory_encoder,
                                                    act.decoder))
    assert len(act.decoder.layers) == 1 and act.decoder.layers[0].cross_attn is not None
    assert act.enc_pos.shape == (1, 3 + 2, 16) and act.mem_pos.shape == (1, 2, 16)


def test_act_decoder_reads_the_memory_through_cross_attention_hooks():
    """decode(s, z) = head(decoder(queries, memory=encoder([z, s]))); the cross-attention
    pattern (read through hooks) spreads each query over the 2 memory tokens."""
    from transformer_math.nn.hooks import run_with_cache

    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1, decoder_layers=1)
    act = build_seeded(lambda: ACTPolicy(cfg), 0).eval()
    s, z = torch.randn(4, 2), torch.zeros(4, cfg.latent_dim)
    with torch.no_grad():
        memory = act.memory_encoder(
            inputs_embeds=torch.stack([act.mem_latent(z), act.mem_state(s)], dim=1) + act.mem_pos)
        queries = act.queries.expand(4, -1, -1)
        hidden, cache = run_with_cache(act.decoder, inputs_embeds=queries, memory=memory,
                                       names=["layers.0.cross_attn.hook_pattern"])
        torch.testing.assert_close(act.action_head(hidden), act.decode(s, z))
    pattern = cache["layers.0.cross_attn.hook_pattern"]  # (B, H, k, 2): queries over memory
    assert pattern.shape == (4, 2, 3, 2)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(4, 2, 3))


# ---------------------------------------------------------------------------- planted bugs
def test_bug_act_latent_dropped():
    from transformer_math.bugs import plant

    cfg = ACTConfig(2, 2, chunk_size=3, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_dim=4)
    act = build_seeded(lambda: ACTPolicy(cfg), 0).eval()
    s = torch.randn(2, 2, generator=torch.Generator().manual_seed(1))
    z1, z2 = torch.zeros(2, 4), torch.ones(2, 4)
    with torch.no_grad():
        assert float((act.decode(s, z1) - act.decode(s, z2)).abs().max()) > 1e-3
        with plant("robotics.act-latent-dropped"):
            torch.testing.assert_close(act.decode(s, z2), act.decode(s, z1), rtol=0, atol=0)
