"""The VLA policy (issue 32): prefix-LM mask, action expert, prefix cache, folder round trip,
training and evaluation on VLAPush (tiny sizes)."""

from __future__ import annotations

import pytest
import torch

from transformer_math.functional.masks import prefix_lm_mask
from transformer_math.nn.hooks import run_with_cache
from transformer_math.robotics.policies.base import load_policy
from transformer_math.robotics.policies.vla import VLAConfig, VLAPolicy
from transformer_math.robotics.policies.vla_tokenizer import decode_bytes, encode_bytes
from transformer_math.robotics.training import build_seeded
from transformer_math.robotics.vla_training import evaluate, train_vla, wilson_interval

B = 3


def _config(**kw) -> VLAConfig:
    return VLAConfig(**{"dim": 32, "num_heads": 4, "num_layers": 2, "chunk_size": 4,
                        "max_text_len": 24, **kw})


def _policy(**kw) -> VLAPolicy:
    return build_seeded(lambda: VLAPolicy(_config(**kw)), 0).eval()


def _batch() -> dict:
    g = torch.Generator().manual_seed(0)
    return {"observation.state": torch.rand(B, 3, generator=g),
            "observation.images.top": torch.rand(B, 3, 32, 32, generator=g),
            "task": ["push the red square to the blue circle", "move the green circle to the "
                     "red square", "put the blue triangle next to the yellow square"],
            "action": torch.randn(B, 4, 3, generator=g)}


def _tokens(policy: VLAPolicy) -> tuple[torch.Tensor, torch.Tensor]:
    batch = _batch()
    s = policy._state(batch)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, 4, 3, generator=g)
    return policy.prefix_tokens(batch, B), policy.suffix_tokens(s, x, torch.rand(B, generator=g))


def test_prefix_lm_mask_blocks():
    m = prefix_lm_mask(3, [1, 2])
    assert m[:3, :3].all() and not m[:3, 3:].any()  # prefix: bidirectional, never the suffix
    assert m[3, :4].all() and not m[3, 4:].any()  # the state token: prefix and itself
    assert m[4:].all()  # the action block: everything, bidirectionally within itself
    assert torch.equal(prefix_lm_mask(0, [1, 1, 1]), torch.ones(3, 3).tril().bool())
    with pytest.raises(ValueError, match="suffix_blocks"):
        prefix_lm_mask(2, [-1])


def test_byte_tokenizer_round_trip_and_cut():
    ids = encode_bytes(["push the red square", "x" * 40], 24)
    assert ids.shape == (2, 24) and decode_bytes(ids)[0] == "push the red square"
    assert int(ids[1, -1]) == 2  # a cut text still ends with EOS


@pytest.mark.parametrize("expert", [True, False])
def test_no_information_flows_from_suffix_to_prefix(expert):
    policy = _policy(action_expert=expert)
    prefix, suffix = _tokens(policy)
    suffix = suffix.detach().requires_grad_(True)
    _, cache = run_with_cache(policy.trunk, prefix, suffix, detach=False,
                              names=["hooks.*.hook_pattern", "hooks.*.hook_resid_prefix"])
    p = policy.config.prefix_len
    for i in range(2):
        pattern = cache[f"hooks.{i}.hook_pattern"].detach()  # (B, H, T, T)
        assert float(pattern[:, :, :p, p:].abs().max()) == 0.0
        assert float(pattern[:, :, p:, :p].sum()) > 0.0  # the suffix reads the prefix
    grad, = torch.autograd.grad(cache["hooks.1.hook_resid_prefix"].sum(), suffix)
    assert float(grad.abs().max()) == 0.0
    # the check can fail: with a full mask the prefix depends on the suffix
    policy.trunk.mask.fill_(True)
    _, leaky = run_with_cache(policy.trunk, prefix, suffix, detach=False,
                              names=["hooks.1.hook_resid_prefix"])
    grad, = torch.autograd.grad(leaky["hooks.1.hook_resid_prefix"].sum(), suffix)
    assert float(grad.abs().max()) > 0.0


def test_shared_trunk_is_the_library_transformer_under_the_mask():
    policy = _policy(action_expert=False, position="none")
    prefix, suffix = _tokens(policy)
    with torch.no_grad():
        mine = policy.trunk(prefix, suffix)
        library = policy.trunk.trunk(inputs_embeds=torch.cat([prefix, suffix], 1),
                                     attn_mask=policy.trunk.mask)[:, prefix.shape[1]:]
    torch.testing.assert_close(mine, library, rtol=0, atol=1e-6)
    assert sum(p.numel() for p in _policy().parameters()) > sum(
        p.numel() for p in policy.parameters())  # the expert adds a stack


@pytest.mark.parametrize("expert", [True, False])
def test_prefix_cache_gives_the_actions_of_recomputing_the_prefix(expert):
    policy, batch = _policy(action_expert=expert), _batch()
    s = policy._state(batch)
    policy.generator.manual_seed(3)
    cached = policy.sample(batch, s, steps=5, use_cache=True)
    policy.generator.manual_seed(3)
    recomputed = policy.sample(batch, s, steps=5, use_cache=False)
    torch.testing.assert_close(cached, recomputed, rtol=0, atol=1e-6)


def test_forward_select_action_and_folder_round_trip(tmp_path):
    policy, batch = _policy(), _batch()
    policy.train()
    loss, info = policy(batch)
    loss.backward()
    assert torch.isfinite(loss) and "mse_velocity" in info
    policy.eval()
    policy.save_pretrained(tmp_path / "vla")
    loaded = load_policy(tmp_path / "vla")
    assert isinstance(loaded, VLAPolicy) and loaded.config == policy.config
    obs = {k: v for k, v in batch.items() if k != "action"}
    policy.generator.manual_seed(0)
    loaded.generator.manual_seed(0)
    assert torch.equal(policy.predict_action_chunk(obs), loaded.predict_action_chunk(obs))
    assert loaded.select_action(obs).shape == (B, 3)


def test_bad_batches_are_refused_with_the_key_named():
    policy, batch = _policy(), _batch()
    with pytest.raises(ValueError, match="task"):
        policy.predict_action_chunk({k: v for k, v in batch.items() if k != "task"})
    with pytest.raises(ValueError, match="task"):
        policy.predict_action_chunk({**batch, "task": ["only one"] * 2})
    with pytest.raises(ValueError, match=r"observation\.images\.top"):
        policy.predict_action_chunk({**batch, "observation.images.top": torch.rand(B, 3, 16, 16)})
    with pytest.raises(ValueError, match="image feature"):
        policy.predict_action_chunk({**batch, "observation.images.side": torch.rand(B, 3, 32, 32)})
    with pytest.raises(ValueError, match="patch_size"):
        VLAConfig(patch_size=5)


def test_tiny_training_lowers_the_loss_and_evaluation_reports_a_wilson_interval():
    policy, losses = train_vla("tiny", seed=0)
    assert sum(losses[-5:]) < sum(losses[:5])
    result = evaluate(policy, episodes=4, split="held_out", instruction="shuffled")
    assert result.episodes == 4 and 0 <= result.successes <= 4
    lo, hi = wilson_interval(10, 20)
    assert abs(lo - 0.2993) < 1e-3 and abs(hi - 0.7007) < 1e-3
    assert wilson_interval(0, 20)[0] == 0.0 and abs(wilson_interval(0, 20)[1] - 0.1611) < 1e-3


def test_bpe_tokenizer_is_saved_with_the_policy(tmp_path):
    pytest.importorskip("tokenizers")
    from transformer_math.robotics.policies.vla_tokenizer import train_bpe

    corpus = ["push the red square to the blue circle", "move the green circle to the red square"]
    tok = train_bpe(corpus, 48)
    assert tok.to_str() == train_bpe(corpus, 48).to_str()  # deterministic
    size = len(tok.to_str().encode("utf-8"))
    config = _config(tokenizer="bpe", vocab_size=tok.get_vocab_size(), tokenizer_bytes=size,
                     max_text_len=12)
    policy = build_seeded(lambda: VLAPolicy(config), 0).eval()
    policy.set_tokenizer(tok)
    ids = policy.text_ids(["push the red circle to the blue square"])
    assert ids.shape == (1, 12) and int(ids[0, 0]) == 1 and 2 in ids[0].tolist()
    policy.save_pretrained(tmp_path / "vla")
    assert (tmp_path / "vla" / "tokenizer.json").read_text() == tok.to_str()
    loaded = load_policy(tmp_path / "vla")
    obs = {k: v for k, v in _batch().items() if k != "action"}
    policy.generator.manual_seed(0)
    loaded.generator.manual_seed(0)
    assert torch.equal(policy.predict_action_chunk(obs), loaded.predict_action_chunk(obs))
    with pytest.raises(ValueError, match="tokenizer_bytes"):
        build_seeded(lambda: VLAPolicy(_config(tokenizer="bpe", vocab_size=tok.get_vocab_size(),
                                               tokenizer_bytes=size + 1)), 0).set_tokenizer(tok)
    with pytest.raises(ValueError, match="tokenizer"):
        _config(tokenizer="words")


def test_normalisation_statistics_come_from_the_steps_before_success():
    import numpy as np

    from transformer_math.robotics.envs.vla_push import VLAPushConfig, generate_vla_push_dataset
    from transformer_math.robotics.vla_training import valid_steps

    data = generate_vla_push_dataset(VLAPushConfig(), 8, seed=0)
    states, actions = valid_steps(data)
    assert len(states) == len(actions)
    assert len(actions) == int(data.lengths.sum()) < data.actions.shape[0] * data.actions.shape[1]
    # the expert never idles before success: no padded (0, 0, -1) frame is counted
    idle = np.all(actions == np.array([0.0, 0.0, -1.0], np.float32), axis=1)
    assert idle.sum() < len(actions) / 4


def test_the_policy_moves_between_dtypes_like_any_module():
    """``.double()`` / ``.to(dtype)`` reach every parameter and buffer (the trunk's per-stack
    helper was once named ``_apply``, shadowing ``nn.Module._apply``: ``.to`` then raised a
    TypeError, so no VLA policy could move to a GPU or another dtype), and a float64 policy
    samples what the float32 one does up to float32 rounding."""
    policy, batch = _policy(), _batch()
    obs = {k: v for k, v in batch.items() if k != "action"}
    policy.generator.manual_seed(0)
    single = policy.predict_action_chunk(obs)
    double = _policy().double()
    assert all(p.dtype == torch.float64 for p in double.parameters())
    assert double.trunk.mask.dtype == policy.trunk.mask.dtype  # a bool mask stays bool
    double.generator.manual_seed(0)
    wide = double.predict_action_chunk(
        {k: (v.double() if isinstance(v, torch.Tensor) else v) for k, v in obs.items()})
    torch.testing.assert_close(wide.float(), single, rtol=0, atol=1e-4)
    assert _policy().to("cpu", torch.float32) is not None


def test_conv_patch_tokens_are_the_grid_cells_in_row_major_order():
    """Token r * g + c of the conv stem answers most to a change inside cell (r, c), near the
    pixel (8 r, 8 c) it is centred on."""
    from transformer_math.robotics.policies.vision import ConvPatchEmbed

    stem = build_seeded(lambda: ConvPatchEmbed(3, 32, 8), 0).eval()
    img = torch.full((1, 3, 32, 32), 0.2)
    base = stem(img)
    assert base.shape == (1, 16, 32)
    for r, c in [(0, 0), (1, 3), (3, 2)]:
        poked = img.clone()
        poked[:, :, 8 * r + 1: 8 * r + 4, 8 * c + 1: 8 * c + 4] = 1.0  # near the centre (8r, 8c)
        change = (stem(poked) - base).abs().sum(-1)[0]
        assert int(change.argmax()) == 4 * r + c
    with pytest.raises(ValueError, match="power of two"):
        ConvPatchEmbed(3, 32, 6)
    with pytest.raises(ValueError, match="patch_embedding"):
        _config(patch_embedding="resnet")


def test_a_folder_saved_before_the_conv_stem_loads_as_linear(tmp_path):
    """config.json without ``patch_embedding`` (folders of sessions 44-50) means "linear"."""
    import json

    policy = _policy(patch_embedding="linear")
    policy.save_pretrained(tmp_path / "old")
    path = tmp_path / "old" / "config.json"
    doc = json.loads(path.read_text())
    del doc["patch_embedding"]
    path.write_text(json.dumps(doc))
    loaded = load_policy(tmp_path / "old")
    assert loaded.config.patch_embedding == "linear" and loaded.config == policy.config
    assert _policy().config.patch_embedding == "conv"


def test_the_scripted_expert_grabs_the_named_object_first():
    result = evaluate(None, episodes=6)
    assert result.successes == result.grabbed_any == result.grabbed_named == 6
    assert result.as_dict()["grabbed_named"] == 6


def test_input_ablation_reports_each_shuffled_input_and_restores_the_generator():
    from transformer_math.robotics.vla_training import ABLATED_INPUTS, input_ablation

    policy, _ = train_vla("tiny", seed=0, steps=2)
    policy.train()
    policy.generator.manual_seed(5)
    before = policy.generator.get_state()
    out = input_ablation(policy, episodes=4, batch_size=8)
    assert set(out) == {"loss"} | {f"loss with {k} shuffled" for k in ABLATED_INPUTS}
    assert all(v > 0 for v in out.values())
    assert torch.equal(policy.generator.get_state(), before) and policy.training
    assert out == input_ablation(policy, episodes=4, batch_size=8)
    with pytest.raises(ValueError, match="batch_size"):
        input_ablation(policy, batch_size=1)
