"""ACT: Action Chunking with Transformers (Zhao et al., RSS 2023), a CVAE over action chunks.

(000 §8.3.8 "理论 B"; FACTS.md "Robotics".) Training objective
    L = mean |A - A_hat|_1 + beta * KL(q(z | s, A) || N(0, I)),
    KL = mean over the batch of sum_j 0.5 (mu_j^2 + sigma_j^2 - 1 - log sigma_j^2),
with z of dimension 32 and beta = 10 (ACT's defaults).
- Posterior encoder q(z | s, A): a Transformer over [CLS, s, a_1, ..., a_k] (learned positions);
  the CLS output gives (mu, log sigma^2); z = mu + sigma * eps (reparameterisation).
- Decoder: a Transformer encoder over the memory [proj(z), proj(s)], then k learned queries that
  self-attend and cross-attend to the memory and are read out as the chunk (B, k, A).
- Inference: the posterior encoder is dropped; z = 0 (ACT's default), z ~ N(0, I) drawn for
  every predicted chunk (``latent_sampling="sample"``), or drawn once per episode and held until
  ``reset()`` (``"sample_per_episode"``: the policy commits to one mode for the whole episode).
- Cameras (``cameras="top,wrist"``, images (B, image_channels, image_height, image_width) in
  [0, 1] under ``observation.images.<camera>``): each image becomes one more memory token through
  a small convolutional encoder shared by the cameras (:mod:`.vision`, no pretrained weights);
  the posterior encoder does not see images (as in ACT). Without cameras a batch carrying
  ``observation.images.*`` is refused.
``use_latent=False`` trains the decoder with z = 0 and no KL: a deterministic chunk regressor;
with ``reconstruction_loss="mse"`` it regresses the conditional MEAN. ACT itself uses L1.
Planted bug ``robotics.act-latent-dropped`` (:mod:`transformer_math.bugs`): the decoder's memory
token of z is built from zeros (the falsifier of ``robotics.multimodal-actions``, killed in
seconds by ``tests/robotics/test_mechanics_checks.py``).
The three stacks are presets of the project's one ``TransformerConfig`` (:func:`act_trunks`):
pre-LN, GELU MLP of width 4 d, final LayerNorm, inputs already ``dim`` wide (``inputs_embeds``),
no head (``output_size=0``), bidirectional (``causal=False``); the decoder adds
``cross_attention=True`` and is called with ``memory=``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import reset_children
from transformer_math.nn.transformer import Transformer
from transformer_math.robotics.policies.base import (
    IMAGES_PREFIX,
    ChunkPolicy,
    logged,
    masked_mean,
    register_policy,
)
from transformer_math.robotics.policies.vision import ImageEncoder

ACT_LATENT_DROPPED = declare_bug(
    "robotics.act-latent-dropped",
    "ACT's decoder never sees the CVAE latent: the memory token of z is built from zeros, so "
    "the decoder is a deterministic chunk regressor (in training and at inference)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_act_loss_is_l1_plus_beta_kl_and_inference_decodes_z_zero",
    seen_in="a latent token left out of the decoder's memory (or z detached to zeros) trains "
    "without error: the KL term then drives q(z | s, A) to the prior and nothing complains")

ACT_ZERO_LATENT_SAMPLED = declare_bug(
    "robotics.act-zero-latent-sampled",
    "ACT's inference with latent_sampling='zero' draws z ~ N(0, I) instead of z = 0: the deployed "
    "policy becomes stochastic (randn where zeros were meant)",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_act_loss_is_l1_plus_beta_kl_and_inference_decodes_z_zero",
    seen_in="randn_like written for zeros_like; ACT (Zhao et al. 2023) and LeRobot decode with "
    "z = 0 at inference")

LATENT_SAMPLING = ("zero", "sample", "sample_per_episode")
MAX_CAMERAS = 8
_CAMERA_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
RECONSTRUCTION_LOSSES = ("l1", "mse")
LOSS_REDUCTIONS = ("valid", "lerobot")


@dataclass(frozen=True)
class ACTConfig:
    state_dim: int
    action_dim: int
    chunk_size: int = 10
    dim: int = 64
    num_heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    latent_dim: int = 32
    kl_weight: float = 10.0
    dropout: float = 0.0
    use_latent: bool = True
    latent_sampling: str = "zero"
    reconstruction_loss: str = "l1"
    loss_reduction: str = "valid"  # "lerobot": mean over padded steps too (act_loss)
    seed: int = 0
    cameras: str = ""  # comma-separated camera names: observation.images.<name>
    image_channels: int = 3
    image_height: int = 32
    image_width: int = 32

    @property
    def camera_names(self) -> tuple[str, ...]:
        return tuple(self.cameras.split(",")) if self.cameras else ()

    def __post_init__(self) -> None:
        names = self.camera_names
        if (len(names) > MAX_CAMERAS or len(set(names)) != len(names)
                or not all(_CAMERA_NAME.fullmatch(n) for n in names)):
            raise ValueError(f"cameras must be at most {MAX_CAMERAS} distinct comma-separated "
                             f"names of letters, digits and '_', got {self.cameras!r}")
        if self.latent_sampling not in LATENT_SAMPLING:
            raise ValueError(
                f"latent_sampling must be one of {LATENT_SAMPLING}, got {self.latent_sampling!r}"
            )
        if self.reconstruction_loss not in RECONSTRUCTION_LOSSES:
            raise ValueError(f"reconstruction_loss must be one of {RECONSTRUCTION_LOSSES}, "
                             f"got {self.reconstruction_loss!r}")
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"loss_reduction must be one of {LOSS_REDUCTIONS}, "
                             f"got {self.loss_reduction!r}")
        if not (math.isfinite(self.kl_weight) and self.kl_weight >= 0) or self.latent_dim < 1:
            raise ValueError(f"need a finite kl_weight >= 0 and latent_dim >= 1, got "
                             f"{self.kl_weight}, {self.latent_dim}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def act_trunks(config: ACTConfig) -> dict[str, TransformerConfig]:
    """The posterior encoder, memory encoder and query decoder as Transformer presets.

    No stack has a position code of its own (``position="none"``): the policy adds ACT's learned
    tables to the encoder inputs and its k learned queries are the decoder's positions. (Kept in
    the policy so that every tensor is drawn in the order of the original PolicyBlock policy:
    the same seed gives the same initial weights.)"""
    d, k = config.dim, config.chunk_size
    common: dict[str, Any] = {"hidden_size": d, "num_heads": config.num_heads,
                              "dropout": config.dropout, "output_size": 0, "causal": False,
                              "final_norm": True, "position": "none"}
    return {
        "posterior": TransformerConfig(num_layers=config.encoder_layers, max_seq_len=k + 2,
                                       **common),
        "memory": TransformerConfig(num_layers=config.encoder_layers,
                                    max_seq_len=2 + len(config.camera_names), **common),
        "decoder": TransformerConfig(num_layers=config.decoder_layers, max_seq_len=k,
                                     cross_attention=True, **common),
    }


def act_loss(pred: Tensor, target: Tensor, mu: Tensor, logvar: Tensor, kl_weight: float,
             reconstruction: str = "l1", pad: Tensor | None = None,
             reduction: str = "valid") -> tuple[Tensor, dict[str, float]]:
    """ACT's loss: mean absolute error + kl_weight * (batch mean of the summed Gaussian KL).

    ``reconstruction="mse"`` replaces the L1 term by the mean squared error (not ACT).
    ``pad`` (B, k) bool, True at padded steps (``action_is_pad``): the reconstruction term is
    the mean over the valid steps only (``reduction="valid"``), or LeRobot's mean of
    err * (1 - pad) over all B * k * A entries (``"lerobot"``, ``ACTPolicy.forward`` in
    ``lerobot/policies/act/modeling_act.py``): smaller by the valid fraction, 0.6 x at 40 %
    padding."""
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must match, got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    if reconstruction not in RECONSTRUCTION_LOSSES:
        raise ValueError(f"reconstruction must be one of {RECONSTRUCTION_LOSSES}, "
                         f"got {reconstruction!r}")
    if reduction not in LOSS_REDUCTIONS:
        raise ValueError(f"reduction must be one of {LOSS_REDUCTIONS}, got {reduction!r}")
    diff = pred - target
    err = diff.abs() if reconstruction == "l1" else diff.pow(2)
    if reduction == "lerobot" and pad is not None:
        rec = torch.where(pad[..., None], torch.zeros_like(err), err).mean()
    else:
        rec = masked_mean(err, pad)
    kl = (0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar)).sum(-1).mean()
    loss = rec + kl_weight * kl
    return loss, {reconstruction: logged(rec), "kl": logged(kl), "loss": logged(loss)}


@register_policy("act")
class ACTPolicy(ChunkPolicy):
    config_class: ClassVar[type] = ACTConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "image_channels": (1, 16), "image_height": (1, 4096),
        "image_width": (1, 4096)}

    def __init__(self, config: ACTConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        d, k = config.dim, config.chunk_size
        trunks = act_trunks(config)
        # posterior encoder q(z | s, A)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.enc_state = nn.Linear(config.state_dim, d)
        self.enc_action = nn.Linear(config.action_dim, d)
        self.enc_pos = nn.Parameter(torch.empty(1, k + 2, d))
        self.posterior = Transformer(trunks["posterior"])
        self.latent_head = nn.Linear(d, 2 * config.latent_dim)
        # decoder p(A | s, z)
        self.mem_latent = nn.Linear(config.latent_dim, d)
        self.mem_state = nn.Linear(config.state_dim, d)
        cameras = config.camera_names
        self.mem_pos = nn.Parameter(torch.empty(1, 2 + len(cameras), d))
        self.memory_encoder = Transformer(trunks["memory"])
        self.queries = nn.Parameter(torch.empty(1, k, d))
        self.decoder = Transformer(trunks["decoder"])
        self.action_head = nn.Linear(d, config.action_dim)
        self.image_keys = tuple(IMAGES_PREFIX + name for name in cameras)
        self.image_encoder = ImageEncoder(config.image_channels, d) if cameras else None
        self.generator = torch.Generator().manual_seed(config.seed)
        self._episode_z = None
        self._init_own(None)

    @torch.no_grad()
    def _init_own(self, generator: torch.Generator | None) -> None:
        """CLS token 0; position tables and decoder queries ~ N(0, 0.02^2)."""
        self.cls.zero_()
        for table in (self.enc_pos, self.mem_pos, self.queries):
            nn.init.normal_(table, 0.0, 0.02, generator=generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Layers by the package convention (``nn.init``), then the learned tables."""
        reset_children(self, generator)
        self._init_own(generator)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> ACTConfig:
        return ACTConfig(**d)

    @classmethod
    def features(cls, config: ACTConfig) -> tuple[dict[str, Any], dict[str, Any]]:
        inputs, outputs = super().features(config)
        shape = [config.image_channels, config.image_height, config.image_width]
        for name in config.camera_names:
            inputs[IMAGES_PREFIX + name] = {"type": "VISUAL", "shape": shape}
        return inputs, outputs

    @classmethod
    def normalization(cls, config: ACTConfig) -> dict[str, str]:
        """Cameras add ``VISUAL: IDENTITY`` (images in [0, 1], mapped to [-1, 1] inside)."""
        mapping = super().normalization(config)
        if config.camera_names:
            mapping["VISUAL"] = "IDENTITY"
        return mapping

    def _image_tokens(self, batch: dict[str, Tensor], b: int) -> list[Tensor]:
        """One (B, d) memory token per configured camera, images checked (shape, finite)."""
        if self.image_encoder is None:
            return []
        like = self.mem_pos
        c = self.config
        want = (b, c.image_channels, c.image_height, c.image_width)
        images = []
        for key in self.image_keys:
            if key not in batch:
                raise ValueError(f"batch must contain {key!r} (the config names camera "
                                 f"{key[len(IMAGES_PREFIX):]!r}), got keys {sorted(batch)}")
            img = torch.as_tensor(batch[key], device=like.device)
            if not img.is_floating_point() or tuple(img.shape) != want:
                raise ValueError(f"{key} must be a float tensor of shape {want} (values in "
                                 f"[0, 1]), got {img.dtype} {tuple(img.shape)}")
            img = img.to(like.dtype)
            if img.device.type != "meta" and not bool(torch.isfinite(img).all()):
                raise ValueError(f"{key} must be finite")
            images.append(img)
        return [self.image_encoder(img) for img in images]

    def encode(self, s: Tensor, a: Tensor, pad: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(mu, logvar), each (B, latent_dim), from normalised state (B, S) and chunk (B, k, A);
        ``pad`` (B, k) True at padded steps: the posterior does not attend to them."""
        tokens = torch.cat(
            [self.cls.expand(s.shape[0], -1, -1), self.enc_state(s)[:, None], self.enc_action(a)],
            dim=1,
        ) + self.enc_pos  # (B, k + 2, d)
        mask = None
        if pad is not None:  # 1 = token (CLS and state are always there)
            mask = torch.cat([torch.ones(s.shape[0], 2, dtype=torch.bool, device=pad.device),
                              ~pad], dim=1)
        h = self.posterior(inputs_embeds=tokens, attention_mask=mask)  # (B, k + 2, d)
        mu, logvar = self.latent_head(h[:, 0]).chunk(2, dim=-1)
        return mu, logvar

    def decode(self, s: Tensor, z: Tensor, images: list[Tensor] | None = None) -> Tensor:
        """Normalised chunk (B, k, A) from normalised state (B, S), latent (B, latent_dim) and
        the cameras' tokens (each (B, d), :meth:`_image_tokens`)."""
        if planted(ACT_LATENT_DROPPED):  # planted bug: falsifier of robotics.multimodal-actions
            z = torch.zeros_like(z)
        memory = self.memory_encoder(
            inputs_embeds=torch.stack([self.mem_latent(z), self.mem_state(s), *(images or [])],
                                      dim=1)
            + self.mem_pos)  # (B, 2 + cameras, d)
        queries = self.queries.expand(s.shape[0], -1, -1)  # (B, k, d)
        return self.action_head(self.decoder(inputs_embeds=queries, memory=memory))

    def _noise(self, like: Tensor) -> Tensor:
        """N(0, 1) of ``like``'s shape from the policy's (CPU) generator, in ``like``'s dtype
        and device (the draw itself is the same on every device)."""
        return torch.randn(like.shape, generator=self.generator).to(like)

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """ACT's loss (:func:`act_loss`); ``action_is_pad`` steps are ignored: left out of the
        reconstruction term and masked out of the posterior encoder's attention."""
        s = self._state(batch)
        target, pad = self._target(batch)
        if self.config.use_latent:
            mu, logvar = self.encode(s, target, pad)
            z = mu + torch.exp(0.5 * logvar) * self._noise(mu)
            kl_weight = self.config.kl_weight
        else:
            mu = logvar = s.new_zeros(s.shape[0], self.config.latent_dim)
            z, kl_weight = mu, 0.0
        images = self._image_tokens(batch, s.shape[0])
        return act_loss(self.decode(s, z, images), target, mu, logvar, kl_weight,
                        self.config.reconstruction_loss, pad, self.config.loss_reduction)

    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        s = self._state(batch)
        z = s.new_zeros(s.shape[0], self.config.latent_dim)
        mode = self.config.latent_sampling if self.config.use_latent else "zero"
        if mode == "zero" and planted(ACT_ZERO_LATENT_SAMPLED):  # planted bug (cvae-zero-latent)
            z = self._noise(z)
        if mode == "sample":
            z = self._noise(z)
        elif mode == "sample_per_episode":
            if self._episode_z is None:
                self._episode_z = self._noise(z)
            elif self._episode_z.shape[0] != s.shape[0]:
                raise RuntimeError(
                    f"this episode's latent was drawn for a batch of {self._episode_z.shape[0]}, "
                    f"got a batch of {s.shape[0]}: call reset() to start new episodes")
            z = self._episode_z
        return self._unnormalize(self.decode(s, z, self._image_tokens(batch, s.shape[0])))

    def reset(self) -> None:
        """New episode: clear the executor and the held latent."""
        super().reset()
        self._episode_z: Tensor | None = None
