"""Policy inputs in the range where the arithmetic stays finite (issue 40.5). Each case was a
finite value that produced NaN with no error before: a stored state_std of 1e-45, a weight of
3e38, a Decision Transformer target return of 1e38, NaN or inf target actions (a NaN loss)."""

from __future__ import annotations

import re

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_math.robotics.policies.base import WEIGHT_MAX, load_policy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import (
    RTG_MAX_SCALED,
    DecisionTransformer,
    DTConfig,
)
from transformer_math.robotics.training import build_seeded


def _bc() -> BCPolicy:
    policy = BCPolicy(BCConfig(3, 2, chunk_size=4))
    policy.fit_normalization(torch.randn(50, 3), torch.randn(50, 2))
    return policy.eval()


def _tamper(tmp_path, name: str, value: float):
    path = tmp_path / "p.safetensors"
    policy = _bc()
    policy.save(path)
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        metadata = f.metadata()
    tensors = load_file(str(path))
    tensors[name] = torch.full_like(tensors[name], value)
    save_file(tensors, str(path), metadata=metadata)
    return path


@pytest.mark.parametrize(("name", "value", "needle"), [
    ("state_std", 1e-45, "state_std must be >= 1e-06"),
    ("action_mean", 1e14, r"at most 1e\+12"),
])
def test_stored_statistics_outside_the_finite_range_are_refused(tmp_path, name, value, needle):
    with pytest.raises(ValueError, match=needle):
        load_policy(_tamper(tmp_path, name, value))


def test_stored_weights_beyond_the_bound_are_refused(tmp_path) -> None:
    policy = _bc()
    weight = next(k for k, v in policy.state_dict().items() if v.dim() == 2)
    needle = rf"{re.escape(weight)}.*beyond {re.escape(f'{WEIGHT_MAX:g}')}"
    with pytest.raises(ValueError, match=needle):
        load_policy(_tamper(tmp_path, weight, 3e38))


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_target_actions_are_refused_with_the_key(bad) -> None:
    policy = _bc().train()
    actions = torch.randn(2, 4, 2)
    actions[1, 2, 0] = bad
    with pytest.raises(ValueError, match="action must be finite where it is not padding"):
        policy({"observation.state": torch.randn(2, 3), "action": actions})


def test_non_finite_actions_under_padding_are_ignored() -> None:
    policy = _bc().train()
    actions = torch.randn(2, 4, 2)
    actions[1, 3] = float("nan")
    pad = torch.zeros(2, 4, dtype=torch.bool)
    pad[1, 3] = True
    loss, _ = policy({"observation.state": torch.randn(2, 3), "action": actions,
                      "action_is_pad": pad})
    assert torch.isfinite(loss)


def test_a_huge_target_return_is_refused() -> None:
    cfg = DTConfig(3, 2, context_len=4, max_ep_len=10, dim=16, num_layers=2, num_heads=1,
                   dropout=0.0)
    dt = build_seeded(lambda: DecisionTransformer(cfg), 0).eval()
    with pytest.raises(ValueError, match="target_return must be at most"):
        dt.reset(target_return=1e38)
    dt.reset(target_return=RTG_MAX_SCALED / 2)  # within the bound


@pytest.mark.parametrize("key", ["observation.state", "action", "return_to_go"])
def test_decision_transformer_training_refuses_non_finite_inputs(key) -> None:
    cfg = DTConfig(3, 2, context_len=4, max_ep_len=10, dim=16, num_layers=2, num_heads=1,
                   dropout=0.0)
    dt = build_seeded(lambda: DecisionTransformer(cfg), 0).train()
    g = torch.Generator().manual_seed(0)
    batch = {"observation.state": torch.randn(2, 4, 3, generator=g),
             "action": torch.rand(2, 4, 2, generator=g) * 2 - 1,
             "return_to_go": torch.randn(2, 4, generator=g),
             "timestep": torch.arange(4).expand(2, 4)}
    assert torch.isfinite(dt(batch)[0])
    batch[key] = batch[key].clone()
    batch[key].view(-1)[3] = float("nan")
    with pytest.raises(ValueError, match=f"{key} must be finite"):
        dt(batch)
