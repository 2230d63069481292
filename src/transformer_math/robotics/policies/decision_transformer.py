"""Decision Transformer (Chen et al., NeurIPS 2021): RL as return-conditioned sequence modelling.

(000 §8.3.8 "理论 A"; FACTS.md "Robotics".) A trajectory is the token sequence
    (R_1, s_1, a_1, R_2, s_2, a_2, ..., R_K, s_K, a_K),
R_t = (sum_{t' >= t} r_{t'}) / rtg_scale the undiscounted return-to-go. Each modality has its own
linear embedding (a table for discrete actions); a learned timestep embedding is added to all
three tokens of step t (there is no other position code); LayerNorm; a causal pre-LN Transformer
(the project's one ``Transformer``, preset :func:`dt_trunk`: inputs already ``dim`` wide, no
position code of its own, no head, final LayerNorm).
The hidden state at the STATE token s_t predicts a_t (it has seen R_1..R_t, s_1..s_t,
a_1..a_{t-1}, never a_t): Tanh head + MSE for continuous actions, logits + cross-entropy for
discrete ones. At rollout R_{t+1} = R_t - r_t / rtg_scale.
Defaults in the paper: K = 20, 3 layers, 1 head, width 128, dropout 0.1, AdamW 1e-4; the
experiments here use smaller sizes (see their configs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer
from transformer_math.robotics.policies.base import (
    ACTION_IS_PAD_KEY,
    STATE_KEY,
    PretrainedMixin,
    check_no_images,
    register_policy,
    state_batch,
)

#: the largest |target_return| / rtg_scale a rollout accepts (issue 40.5): the scaled return is
#: an input of a linear embedding, and 1e38 (finite) overflowed it to NaN actions
RTG_MAX_SCALED = 1e6

RTG_NOT_DECREMENTED = declare_bug(
    "robotics.rtg-not-decremented",
    "Decision Transformer rollout: the return-to-go is never reduced by the collected rewards "
    "(R_{t+1} = R_t instead of R_t - r_t)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_return_to_go_is_the_suffix_sum_and_the_rollout_decrements_it",
    seen_in="Chen et al. 2021 decrement R_{t+1} = R_t - r_t at evaluation; dropping that line "
    "leaves a rollout that still runs and conditions every step on the initial target")
DT_NONCAUSAL = declare_bug(
    "robotics.dt-noncausal",
    "the Decision Transformer's trunk attends bidirectionally (causal mask off): in training "
    "the state token s_t sees a_t, so the model copies the label instead of modelling "
    "p(a_t | R_t, s_t, history)",
    module=__name__,
    seen_in="a GPT trunk built with causal=False (or a missing mask) trains to a near-zero loss "
    "and fails at rollout, where a_t is a placeholder")

ACTION_TYPES = ("continuous", "discrete")
MODALITIES = ("return", "state", "action")


@dataclass(frozen=True)
class DTConfig:
    state_dim: int
    action_dim: int  # continuous: action width; discrete: number of actions
    action_type: str = "continuous"
    context_len: int = 20
    max_ep_len: int = 64
    dim: int = 64
    num_layers: int = 2
    num_heads: int = 1
    dropout: float = 0.1
    rtg_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.action_type not in ACTION_TYPES:
            raise ValueError(f"action_type must be one of {ACTION_TYPES}, got {self.action_type!r}")
        if (self.context_len < 1 or self.max_ep_len < 1
                or not (math.isfinite(self.rtg_scale) and self.rtg_scale > 0)):
            raise ValueError(
                "need context_len >= 1, max_ep_len >= 1, a finite rtg_scale > 0; got "
                f"{self.context_len}, {self.max_ep_len}, {self.rtg_scale}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def dt_trunk(config: DTConfig) -> TransformerConfig:
    """The causal trunk over the 3 K interleaved tokens as a Transformer preset."""
    causal = not planted(DT_NONCAUSAL)  # planted bug: falsifier of robotics.dt-stitching
    return TransformerConfig(hidden_size=config.dim, num_layers=config.num_layers,
                             num_heads=config.num_heads, max_seq_len=3 * config.context_len,
                             position="none", output_size=0, causal=causal, final_norm=True,
                             dropout=config.dropout)


def token_layout(num_steps: int) -> list[tuple[str, int]]:
    """Token order: [(return, 0), (state, 0), (action, 0), (return, 1), ...]."""
    return [(m, t) for t in range(num_steps) for m in MODALITIES]


@register_policy("decision_transformer")
class DecisionTransformer(PretrainedMixin, nn.Module):
    """Decision Transformer (module docstring). Rollouts: ``reset(target_return)`` (required: no
    default target), then ``select_action`` once per step; ``predict_action_chunk`` answers the
    same question without advancing the episode."""

    config_class: ClassVar[type] = DTConfig
    normalization_mapping: ClassVar[dict[str, str]] = {"STATE": "IDENTITY", "ACTION": "IDENTITY"}

    def __init__(self, config: DTConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.embed_return = nn.Linear(1, d)
        self.embed_state = nn.Linear(config.state_dim, d)
        if config.action_type == "continuous":
            self.embed_action: nn.Module = nn.Linear(config.action_dim, d)
        else:
            self.embed_action = nn.Embedding(config.action_dim, d)
        self.embed_timestep = nn.Embedding(config.max_ep_len, d)
        self.embed_norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(config.dropout)
        self.trunk = Transformer(dt_trunk(config))
        self.action_head = nn.Linear(d, config.action_dim)
        self._target: Tensor | None = None  # set by reset(target_return)
        self._hist: dict[str, list[Tensor]] = {"s": [], "a": [], "r": []}

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> DTConfig:
        return DTConfig(**d)

    @classmethod
    def features(cls, config: DTConfig) -> tuple[dict[str, Any], dict[str, Any]]:
        """State (S,) in; a continuous action (A,) or a discrete one (an index among A) out."""
        action = ({"type": "ACTION", "shape": [config.action_dim]}
                  if config.action_type == "continuous"
                  else {"type": "ACTION", "shape": [], "num_actions": config.action_dim})
        return ({STATE_KEY: {"type": "STATE", "shape": [config.state_dim]}}, {"action": action})

    # -- model ---------------------------------------------------------------------------------
    def _check(self, states: Tensor, actions: Tensor, returns_to_go: Tensor,
               timesteps: Tensor) -> None:
        if states.dim() != 3 or states.shape[2] != self.config.state_dim:
            raise ValueError(f"states must be (batch, steps, {self.config.state_dim}), "
                             f"got {tuple(states.shape)}")
        b, n = states.shape[:2]
        if n > self.config.context_len:
            raise ValueError(f"steps must be <= context_len={self.config.context_len}, got {n}")
        want_a = (b, n) if self.config.action_type == "discrete" else (b, n, self.config.action_dim)
        if tuple(actions.shape) != want_a:
            raise ValueError(f"actions must have shape {want_a}, got {tuple(actions.shape)}")
        if tuple(returns_to_go.shape) != (b, n) or tuple(timesteps.shape) != (b, n):
            raise ValueError(f"returns_to_go and timesteps must have shape {(b, n)}, got "
                             f"{tuple(returns_to_go.shape)} and {tuple(timesteps.shape)}")
        if timesteps.device.type == "meta":
            return
        if int(timesteps.max()) >= self.config.max_ep_len or int(timesteps.min()) < 0:
            raise ValueError(f"timesteps must be in [0, {self.config.max_ep_len}), got range "
                             f"[{int(timesteps.min())}, {int(timesteps.max())}]")

    def embed_tokens(self, states: Tensor, actions: Tensor, returns_to_go: Tensor,
                     timesteps: Tensor) -> Tensor:
        """Interleaved token embeddings (B, 3n, d) in the order of :func:`token_layout`."""
        self._check(states, actions, returns_to_go, timesteps)
        b, n = states.shape[:2]
        time = self.embed_timestep(timesteps)  # (B, n, d)
        r = self.embed_return(returns_to_go[..., None] / self.config.rtg_scale) + time
        s = self.embed_state(states) + time
        a = self.embed_action(actions) + time
        tokens = torch.stack([r, s, a], dim=2).reshape(b, 3 * n, -1)  # (B, 3n, d)
        return self.embed_norm(tokens)

    def hidden_states(self, states: Tensor, actions: Tensor, returns_to_go: Tensor,
                      timesteps: Tensor) -> Tensor:
        """Final hidden states (B, n, 3, d): index 1 of axis 2 is the state token of each step."""
        x = self.drop(self.embed_tokens(states, actions, returns_to_go, timesteps))
        b, n = states.shape[:2]
        return self.trunk(inputs_embeds=x).view(b, n, 3, -1)

    def action_outputs(self, states: Tensor, actions: Tensor, returns_to_go: Tensor,
                       timesteps: Tensor) -> Tensor:
        """Prediction of a_t read at the STATE token s_t: (B, n, A) (tanh) or logits (B, n, A)."""
        h = self.hidden_states(states, actions, returns_to_go, timesteps)[:, :, 1]  # (B, n, d)
        out = self.action_head(h)
        return torch.tanh(out) if self.config.action_type == "continuous" else out

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Batch keys: observation.state (B, K, S), action, return_to_go (B, K) (unscaled),
        timestep (B, K) long, and either mask (B, K) bool (True = real step) or LeRobot's
        action_is_pad (B, K) bool (True = padding); padding only at the end."""
        check_no_images(batch, self.kind)
        for key in (STATE_KEY, "action", "return_to_go"):  # a NaN loss otherwise (issue 40.5)
            value = batch.get(key)
            if (isinstance(value, Tensor) and value.is_floating_point()
                    and value.device.type != "meta" and not bool(torch.isfinite(value).all())):
                raise ValueError(f"{key} must be finite, got {int((~torch.isfinite(value)).sum())}"
                                 " NaN/inf entries")
        out = self.action_outputs(batch[STATE_KEY], batch["action"], batch["return_to_go"],
                                  batch["timestep"])
        if "mask" in batch and ACTION_IS_PAD_KEY in batch:
            raise ValueError(f"batch must hold 'mask' or {ACTION_IS_PAD_KEY!r}, not both")
        if ACTION_IS_PAD_KEY in batch:
            pad = torch.as_tensor(batch[ACTION_IS_PAD_KEY], device=out.device)
            if pad.dtype != torch.bool or pad.shape != out.shape[:2]:
                raise ValueError(f"{ACTION_IS_PAD_KEY} must be a bool tensor of shape "
                                 f"{tuple(out.shape[:2])}, got {pad.dtype} {tuple(pad.shape)}")
            mask = ~pad
        else:
            mask = batch.get("mask", torch.ones(out.shape[:2], dtype=torch.bool,
                                                device=out.device))
        if self.config.action_type == "continuous":
            per = (out - batch["action"]).pow(2).mean(-1)
        else:
            per = F.cross_entropy(out.transpose(1, 2), batch["action"], reduction="none")
        loss = (per * mask).sum() / mask.sum().clamp_min(1)
        return loss, {"loss": float(loss.detach())}

    # -- rollout interface ---------------------------------------------------------------------
    def reset(self, target_return: float | Tensor | None = None) -> None:
        """Start an episode with return-to-go ``target_return`` (required; finite; a scalar or
        a (B,) tensor): there is no default target (``ValueError`` when it is missing)."""
        if target_return is None:
            raise ValueError("DecisionTransformer.reset needs target_return (the return the "
                             "episode is conditioned on, e.g. reset(target_return=4.0)); there "
                             "is no default")
        target = torch.as_tensor(target_return, dtype=torch.float32, device="cpu")
        if target.dim() > 1 or not bool(torch.isfinite(target).all()):
            raise ValueError(f"target_return must be a finite scalar or (batch,) tensor, got "
                             f"{target_return!r}")
        limit = RTG_MAX_SCALED * self.config.rtg_scale
        if bool((target.abs() > limit).any()):
            raise ValueError(f"target_return must be at most {limit:g} in magnitude "
                             f"({RTG_MAX_SCALED:g} x rtg_scale; the embedding of return / "
                             f"rtg_scale overflows beyond), got {target_return!r}")
        self._target = target
        self._hist = {"s": [], "a": [], "r": []}

    def _next_step(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(action of this step, its state, its return-to-go) from the history and ``batch``;
        the history is not changed."""
        if self._target is None:
            raise RuntimeError("call reset(target_return) before the first step: a Decision "
                               "Transformer rollout is conditioned on a target return")
        like = self.embed_state.weight
        s = state_batch(batch, self.config.state_dim, like, self.kind)
        b = s.shape[0]
        if self._hist["s"] and self._hist["s"][0].shape[0] != b:
            raise RuntimeError(f"this episode runs a batch of {self._hist['s'][0].shape[0]}, "
                               f"got a batch of {b}: call reset() to start new episodes")
        if self._target.dim() == 1 and self._target.shape[0] != b:
            raise ValueError(f"target_return has {self._target.shape[0]} entries but the batch "
                             f"holds {b} observations")
        if self._hist["r"]:
            if "reward" not in batch:
                raise ValueError("batch must contain 'reward' of the previous step after step 0")
            reward = torch.as_tensor(batch["reward"], dtype=like.dtype, device=like.device)
            if reward.dim() > 1 or (reward.dim() == 1 and reward.shape[0] != b):
                raise ValueError(f"reward must be a scalar or of shape ({b},), got "
                                 f"{tuple(reward.shape)}")
            if reward.device.type != "meta" and not bool(torch.isfinite(reward).all()):
                raise ValueError(f"reward must be finite, got {reward.tolist()}")
            if planted(RTG_NOT_DECREMENTED):  # planted bug (zoo; reachability's falsifier)
                reward = torch.zeros_like(reward)
            rtg = self._hist["r"][-1] - reward
        else:
            rtg = self._target.to(like).expand(b).clone()
        if self.config.action_type == "continuous":
            placeholder = s.new_zeros(b, self.config.action_dim)
        else:
            placeholder = torch.zeros(b, dtype=torch.long, device=s.device)
        t = len(self._hist["s"]) + 1
        lo = max(0, t - self.config.context_len)
        states = torch.stack((self._hist["s"] + [s])[lo:], 1)
        actions = torch.stack((self._hist["a"] + [placeholder])[lo:], 1)
        rtgs = torch.stack((self._hist["r"] + [rtg])[lo:], 1)
        steps = torch.arange(lo, t, device=s.device).clamp_max(
            self.config.max_ep_len - 1).expand(b, -1)
        out = self.action_outputs(states, actions, rtgs, steps)[:, -1]
        action = out if self.config.action_type == "continuous" else out.argmax(-1)
        return action, s, rtg

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor]) -> Tensor:
        """One control step. ``batch``: observation.state (B, S) and, after the first step,
        ``reward`` (B,) (or a scalar for all) of the previous step (RTG_{t+1} = RTG_t - r_t).
        Returns (B, A) or (B,). B is fixed from the first step until ``reset()`` (another B
        raises ``RuntimeError``) and must match a (B,) target; inputs must be finite; without a
        ``reset(target_return)`` first, ``RuntimeError``."""
        action, s, rtg = self._next_step(batch)
        self._hist["s"].append(s)
        self._hist["r"].append(rtg)
        self._hist["a"].append(action)
        return action

    @property
    def conditioning_returns(self) -> Tensor:
        """The returns-to-go the rollout has conditioned on so far, (B, steps) (R_1, R_2, ...)."""
        if not self._hist["r"]:
            return self.embed_state.weight.new_zeros(0, 0)
        return torch.stack(self._hist["r"], 1)

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        """DT predicts one action per step: a chunk of size 1 (B, 1, ...), the action
        ``select_action`` would return for ``batch``, without advancing the episode."""
        return self._next_step(batch)[0][:, None]
