"""PARITY with and without a scratchpad: evaluation strings, decoding, the arm memo."""

from __future__ import annotations

import pytest
import torch

from transformer_math.data.parity import parity, parity_sequences, random_bits
from transformer_math.experiments import memo
from transformer_math.experiments import parity_scratchpad as ps
from transformer_math.nn.transformer import build_transformer


@pytest.mark.slow
def test_parity_scratchpad_tiny_runs():
    cfg = ps.ParityScratchpadConfig.tiny(seed=0)
    res = ps.run(cfg)
    for arm in cfg.arms:
        acc = res.arms[arm].accuracy_by_length
        assert set(acc) == set(cfg.test_lengths)
        assert all(0.0 <= v <= 1.0 for v in acc.values())


def test_model_configs_are_causal_presets_with_relative_positions():
    """Issue 31: every arm is the same model (the same sliding-window attention)."""
    cfg = ps.ParityScratchpadConfig.tiny(seed=0)
    direct, pad = ps.model_config(cfg, "none"), ps.model_config(cfg, "running_parity")
    assert direct.causal and pad.causal
    assert direct == pad
    assert direct.position == "local_relative"
    assert direct.relative_window == pad.relative_window == cfg.window
    assert direct.hidden_size == cfg.embed_dim and direct.num_layers == cfg.num_layers


def test_generation_reads_only_the_models_own_tokens():
    cfg = ps.ParityScratchpadConfig.tiny(seed=0)
    model = build_transformer(ps.model_config(cfg, "running_parity"), 0)
    bits = random_bits(4, 3, torch.Generator().manual_seed(0))
    seqs = parity_sequences(list(bits), "running_parity")
    acc = ps.generate_and_score(model, seqs)
    assert 0.0 <= acc <= 1.0
    mixed = parity_sequences([bits[0], bits[1, :2]], "running_parity")
    with pytest.raises(ValueError, match="one length"):
        ps.generate_and_score(model, mixed)


@pytest.mark.parametrize("arm", ["none", "running_parity"])
def test_cached_decoding_equals_recomputing_the_prefix(arm):
    """generate_and_score feeds each token once through a KV cache; greedy decoding by
    recomputing the whole prefix at every step gives the same accuracy (a model with a few
    training steps, so its predictions are not constant)."""
    from transformer_math.data.parity import PAR0
    from transformer_math.nn.generation import choose_next_token

    cfg = ps.ParityScratchpadConfig.tiny(seed=1)
    model = build_transformer(ps.model_config(cfg, arm), 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(2)
    for _ in range(30):
        loss = ps._next_token_loss(model, ps._training_batch(cfg, arm, gen))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    seqs = parity_sequences(list(random_bits(64, 9, torch.Generator().manual_seed(3))), arm)
    tokens = seqs.tokens.clone()
    with torch.no_grad():
        for t in torch.nonzero(seqs.generated[0]).flatten().tolist():
            tokens[:, t] = choose_next_token(model(tokens[:, :t])[:, -1])[:, 0]
    answer = tokens[torch.arange(tokens.shape[0]), seqs.answer_index]
    expected = float((answer == PAR0 + seqs.answer).double().mean())
    assert ps.generate_and_score(model, seqs) == expected


def test_paired_evaluation_strings_are_antithetic():
    cfg = ps.ParityScratchpadConfig.tiny(seed=0)
    assert cfg.paired_eval
    bits = ps.evaluation_bits(cfg, 16, torch.Generator().manual_seed(0))
    half = cfg.eval_size // 2
    assert bits.shape == (cfg.eval_size, 16)
    assert bool(((bits[:half] != bits[half:]).sum(-1) == 1).all())  # one bit flipped per pair
    assert bool((parity(bits[:half]) != parity(bits[half:])).all())
    plain = ps.ParityScratchpadConfig(eval_size=8)
    assert ps.evaluation_bits(plain, 5, torch.Generator().manual_seed(0)).shape == (8, 5)
    with pytest.raises(ValueError, match="even"):
        ps.ParityScratchpadConfig(eval_size=7, paired_eval=True)


def test_an_arm_is_reused_only_when_the_config_matches(monkeypatch):
    """The direct arm shared by a claim's run and its falsifier's run is trained once
    (``experiments.memo``); another seed or ``reuse=False`` trains afresh, same result."""
    memo.clear()
    trained: list[str] = []
    real = ps.run_arm

    def counting(config, arm, progress=None):
        trained.append(arm)
        return real(config, arm, progress)

    monkeypatch.setattr(ps, "run_arm", counting)
    cfg = ps.ParityScratchpadConfig(train_max_len=2, test_lengths=(2,), embed_dim=8,
                                    num_layers=1, window=2, steps=2, batch_size=4, eval_size=4)
    first = ps.run(cfg)
    falsifier = ps.run(ps.ParityScratchpadConfig(**{**cfg.__dict__, "arms": ("none", "copy")}))
    assert trained == ["none", "running_parity", "copy"]  # the direct arm once
    assert falsifier.arms["none"] == first.arms["none"]
    fresh = ps.run(cfg, reuse=False)
    for arm in cfg.arms:
        assert fresh.arms[arm].accuracy_by_length == first.arms[arm].accuracy_by_length
        assert fresh.arms[arm].final_train_loss == first.arms[arm].final_train_loss
    other_seed = ps.run(ps.ParityScratchpadConfig(**{**cfg.__dict__, "seed": 1}))
    assert other_seed.arms["none"].final_train_loss != first.arms["none"].final_train_loss
    assert len(trained) == 7


def test_receptive_field_covers_the_training_strings_at_default_size():
    for preset in (ps.ParityScratchpadConfig.default, ps.ParityScratchpadConfig.large):
        cfg = preset(seed=0)
        assert cfg.receptive_field() >= cfg.train_max_len
        assert {cfg.train_max_len, 2 * cfg.train_max_len, 4 * cfg.train_max_len} <= set(
            cfg.test_lengths)
    tiny = ps.ParityScratchpadConfig.tiny(seed=0)
    assert tiny.receptive_field() < tiny.train_max_len
    assert {4, 8, 16} <= set(tiny.test_lengths)


def test_config_validation():
    with pytest.raises(ValueError, match="test length"):
        ps.ParityScratchpadConfig(test_lengths=())


def test_loss_mask_shifted_bug_leaves_the_scratchpad_untrained():
    """experiments.parity-loss-mask-shifted (the falsifier of computation.parity): the loss falls
    on the token after each generated one, so the running-parity arm does not learn even at the
    training length; the clean loop learns it (tiny preset, seed 0)."""
    from transformer_math.bugs import plant

    cfg = ps.ParityScratchpadConfig.tiny(seed=0)
    cfg = ps.ParityScratchpadConfig(**{**cfg.__dict__, "test_lengths": (cfg.train_max_len,)})
    clean = ps.run_arm(cfg, "running_parity").accuracy_by_length[cfg.train_max_len]
    with plant("experiments.parity-loss-mask-shifted"):
        bugged = ps.run_arm(cfg, "running_parity").accuracy_by_length[cfg.train_max_len]
    assert clean >= 0.9 and bugged < 0.9, (clean, bugged)
