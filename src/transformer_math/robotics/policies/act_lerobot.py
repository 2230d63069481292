"""ACT as LeRobot builds it (``lerobot/policies/act/modeling_act.py``, lerobot 0.4.4), on the
project's one Transformer backbone: a LeRobot ACT checkpoint loads into it with equal actions.

The network (Zhao et al. 2023, with DETR's transformer, Carion et al. 2020):
- three stacks, presets of ``TransformerConfig`` (:func:`lerobot_act_trunks`): post-norm
  (``pre_norm=False``, LeRobot's default) h <- N(h + Attn(h)), h <- N(h + FFN(h)), ReLU FFN of
  width ``dim_feedforward``, LayerNorm eps 1e-5; the encoders have no final norm when post-norm,
  the decoder always has one; the decoder has ``decoder_layers`` (default 1) blocks;
- DETR positions: a position code p is added to the queries and keys of every attention, never
  to the values nor to the residual stream:
      self-attention   Attn(q = h + p, k = h + p, v = h),
      cross-attention  Attn(q = h + p_dec, k = m + p_mem, v = m);
  p is a fixed 1-D sinusoid for the posterior ("VAE") encoder, PE(t, 2i) = sin(t / 10000^(2i/d)),
  PE(t, 2i + 1) = cos(t / 10000^(2i/d)) (Vaswani et al. 2017 §3.5), learned tables for the
  1-D memory tokens and the k decoder queries (whose inputs are zeros), and a 2-D sinusoid per
  camera feature-map cell (:func:`sinusoid_2d`);
- memory tokens [proj(z), proj(state), proj(environment_state), image cells...]; every camera
  goes through a ResNet-18 (:mod:`.act_resnet`, torchvision's names, frozen batch norm) and a
  1x1 convolution to ``dim``, one token per cell of its (H/32, W/32) feature map;
- posterior q(z | s, A) over [CLS, proj(s), proj(a_1) ... proj(a_k)], padded steps
  (``action_is_pad``) masked out as keys; training samples z = mu + exp(logvar / 2) eps
  (eps from the policy's generator), inference decodes z = 0.
Loss: |A - A_hat|_1 + kl_weight * KL, KL = batch mean of sum_j 0.5 (mu_j^2 + sigma_j^2 - 1 -
log sigma_j^2). ``loss_reduction`` picks the L1 mean over padded chunks:
``"valid"`` (the project's) averages over the B * (k - n_pad) * A valid entries;
``"lerobot"`` averages |err| * (1 - pad) over all B * k * A entries, so padding shrinks it by the
valid fraction (0.6 x at 40 % padding). Normalisation as LeRobot's processors:
(x - mean) / (std + 1e-8) for the state, environment state and camera images (per channel), and
a_hat * std + mean for the actions. Dropout (training only) sits where LeRobot's does: on the
attention weights, on each sublayer's output and inside the FFN.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import reset_children
from transformer_math.nn.transformer import Transformer, TransformerBlock
from transformer_math.robotics.policies.act import LOSS_REDUCTIONS, act_loss
from transformer_math.robotics.policies.act_resnet import (
    FEATURE_CHANNELS,
    RESNET_STAGES,
    ResNetFeatures,
)
from transformer_math.robotics.policies.base import (
    IMAGES_PREFIX,
    NORM_MAX,
    STD_MIN,
    ChunkPolicy,
    register_policy,
    state_batch,
)

ENV_STATE_KEY = "observation.environment_state"
NORM_EPS = 1e-8  # LeRobot's NormalizerProcessorStep: (x - mean) / (std + eps)
LAYER_NORM_EPS = 1e-5
MAX_CAMERAS = 8
_CAMERA_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")


@dataclass(frozen=True)
class LeRobotACTConfig:
    """LeRobot's ``ACTConfig`` fields under the project's names (the adapter maps them)."""

    state_dim: int
    action_dim: int
    chunk_size: int = 100
    env_state_dim: int = 0  # 0: no observation.environment_state
    cameras: str = ""  # comma-separated camera names: observation.images.<name>
    image_channels: int = 3
    image_height: int = 96
    image_width: int = 96
    vision_backbone: str = "resnet18"
    dim: int = 512
    num_heads: int = 8
    dim_feedforward: int = 3200
    encoder_layers: int = 4
    decoder_layers: int = 1
    vae_encoder_layers: int = 4
    use_vae: bool = True
    latent_dim: int = 32
    kl_weight: float = 10.0
    dropout: float = 0.1
    pre_norm: bool = False
    loss_reduction: str = "valid"
    seed: int = 0

    @property
    def camera_names(self) -> tuple[str, ...]:
        return tuple(self.cameras.split(",")) if self.cameras else ()

    def __post_init__(self) -> None:
        names = self.camera_names
        if (len(names) > MAX_CAMERAS or len(set(names)) != len(names)
                or not all(_CAMERA_NAME.fullmatch(n) for n in names)):
            raise ValueError(f"cameras must be at most {MAX_CAMERAS} distinct comma-separated "
                             f"names of letters, digits and '_', got {self.cameras!r}")
        if self.vision_backbone not in RESNET_STAGES:
            raise ValueError(f"vision_backbone must be one of {sorted(RESNET_STAGES)}, got "
                             f"{self.vision_backbone!r}")
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"loss_reduction must be one of {LOSS_REDUCTIONS}, got "
                             f"{self.loss_reduction!r}")
        if self.env_state_dim < 0:
            raise ValueError(f"env_state_dim must be >= 0, got {self.env_state_dim}")
        if self.dim % 2 or self.dim < 2:
            raise ValueError(f"dim must be even (the 2-D sinusoid splits it), got {self.dim}")
        if not (math.isfinite(self.kl_weight) and self.kl_weight >= 0) or self.latent_dim < 1:
            raise ValueError(f"need a finite kl_weight >= 0 and latent_dim >= 1, got "
                             f"{self.kl_weight}, {self.latent_dim}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def lerobot_act_trunks(config: LeRobotACTConfig) -> dict[str, TransformerConfig]:
    """The posterior encoder, memory encoder and query decoder as ``TransformerConfig`` presets
    (module docstring): no position code of their own (the policy adds DETR's to q and k)."""
    common: dict[str, Any] = {
        "hidden_size": config.dim, "num_heads": config.num_heads,
        "intermediate_size": config.dim_feedforward, "feedforward": "relu",
        "norm_placement": "pre" if config.pre_norm else "post", "norm_eps": LAYER_NORM_EPS,
        "dropout": config.dropout, "output_size": 0, "causal": False, "position": "none"}
    k = config.chunk_size
    memory = 3 + len(config.camera_names) * 4096
    return {
        "vae_encoder": TransformerConfig(num_layers=config.vae_encoder_layers,
                                         max_seq_len=k + 2, final_norm=config.pre_norm,
                                         **common),
        "encoder": TransformerConfig(num_layers=config.encoder_layers, max_seq_len=memory,
                                     final_norm=config.pre_norm, **common),
        "decoder": TransformerConfig(num_layers=config.decoder_layers, max_seq_len=k,
                                     cross_attention=True, final_norm=True, **common),
    }


def sinusoid_1d(positions: int, dim: int) -> Tensor:
    """(positions, dim) float32 table PE(t, j) = sin / cos (t / 10000^(2 floor(j/2) / dim)),
    sin at even j, cos at odd j (Vaswani et al. 2017 §3.5); computed in float64 as LeRobot's
    ``create_sinusoidal_pos_embedding`` does (numpy), then rounded once."""
    t = torch.arange(positions, dtype=torch.float64)[:, None]
    j = torch.arange(dim, dtype=torch.float64)
    angle = t / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2 * (j // 2) / dim)
    table = torch.where(j.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float()


def sinusoid_2d(height: int, width: int, dim: int, device: torch.device | None = None) -> Tensor:
    """(1, 2 * dim, H, W) position code of a feature map (DETR's ``PositionEmbeddingSine``,
    normalised; LeRobot's ``ACTSinusoidalPositionEmbedding2d``): rows y = 1..H and columns
    x = 1..W are scaled to (0, 2 pi] (y / (H + 1e-6) * 2 pi), each gets ``dim`` channels
    sin(y / 10000^(2 floor(j/2) / dim)) at even j and cos(...) at odd j; channels = [y part,
    x part]."""
    ones = torch.ones(1, height, width, device=device)
    y = ones.cumsum(1, dtype=torch.float32)
    x = ones.cumsum(2, dtype=torch.float32)
    y = y / (y[:, -1:, :] + 1e-6) * (2 * math.pi)
    x = x / (x[:, :, -1:] + 1e-6) * (2 * math.pi)
    inv = 10000 ** (2 * (torch.arange(dim, dtype=torch.float32, device=device) // 2) / dim)
    x, y = x[..., None] / inv, y[..., None] / inv  # (1, H, W, dim)
    code_x = torch.stack((x[..., 0::2].sin(), x[..., 1::2].cos()), dim=-1).flatten(3)
    code_y = torch.stack((y[..., 0::2].sin(), y[..., 1::2].cos()), dim=-1).flatten(3)
    return torch.cat((code_y, code_x), dim=3).permute(0, 3, 1, 2)


def _residual(block: TransformerBlock, h: Tensor, norm: nn.Module, branch: Any) -> Tensor:
    """pre: h + drop(f(N h)); post: N(h + drop(f h))."""
    x = norm(h) if block.pre else h
    out = branch(x)
    if block.dropout is not None:
        out = block.dropout(out)
    return h + out if block.pre else norm(h + out)


def detr_stack(stack: Transformer, h: Tensor, pos: Tensor, ffn_dropout: nn.Module, *,
               memory: Tensor | None = None, memory_pos: Tensor | None = None,
               key_padding_mask: Tensor | None = None) -> Tensor:
    """Run ``stack``'s blocks on h (B, T, d) with DETR positions (module docstring): ``pos``
    (1 or B, T, d) on the self-attention's q and k, ``memory_pos`` on the cross-attention's
    keys; then the stack's final norm, if it has one."""
    for block in stack.layers:
        attn, ffn = block.attn, block.ffn
        assert attn is not None and ffn is not None and block.attn_norm is not None
        assert block.ffn_norm is not None

        def self_attention(x: Tensor, attn: Any = attn) -> Tensor:
            qk = x + pos
            return attn(qk, qk, x, key_padding_mask=key_padding_mask)

        h = _residual(block, h, block.attn_norm, self_attention)
        if block.cross_attn is not None:
            assert memory is not None and memory_pos is not None
            assert block.cross_norm is not None
            cross = block.cross_attn
            keys = memory + memory_pos

            def cross_attention(x: Tensor, cross: Any = cross, keys: Tensor = keys) -> Tensor:
                return cross(x + pos, keys, memory)

            h = _residual(block, h, block.cross_norm, cross_attention)

        def feedforward(x: Tensor, ffn: Any = ffn) -> Tensor:
            return ffn.fc_out(ffn_dropout(F.relu(ffn.fc_in(x))))

        h = _residual(block, h, block.ffn_norm, feedforward)
    return h if stack.final_norm is None else stack.final_norm(h)


@register_policy("act_lerobot")
class LeRobotACTPolicy(ChunkPolicy):
    """ACT with LeRobot's architecture (post-norm DETR transformer, ResNet-18 cameras)."""

    config_class: ClassVar[type] = LeRobotACTConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "image_channels": (1, 16), "image_height": (32, 4096),
        "image_width": (32, 4096), "env_state_dim": (0, 1 << 20)}
    normalization_mapping: ClassVar[dict[str, str]] = {"STATE": "MEAN_STD",
                                                       "ACTION": "MEAN_STD"}

    def __init__(self, config: LeRobotACTConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        d, k = config.dim, config.chunk_size
        trunks = lerobot_act_trunks(config)
        cameras = config.camera_names
        if config.use_vae:
            self.vae_encoder = Transformer(trunks["vae_encoder"])
            self.vae_encoder_cls_embed = nn.Embedding(1, d)
            self.vae_encoder_robot_state_input_proj = nn.Linear(config.state_dim, d)
            self.vae_encoder_action_input_proj = nn.Linear(config.action_dim, d)
            self.vae_encoder_latent_output_proj = nn.Linear(d, 2 * config.latent_dim)
            self.register_buffer("vae_encoder_pos_enc", sinusoid_1d(k + 2, d)[None])
        self.backbone = (ResNetFeatures(config.vision_backbone, config.image_channels)
                         if cameras else None)
        self.encoder = Transformer(trunks["encoder"])
        self.decoder = Transformer(trunks["decoder"])
        self.encoder_robot_state_input_proj = nn.Linear(config.state_dim, d)
        self.encoder_env_state_input_proj = (nn.Linear(config.env_state_dim, d)
                                             if config.env_state_dim else None)
        self.encoder_latent_input_proj = nn.Linear(config.latent_dim, d)
        self.encoder_img_feat_input_proj = (nn.Conv2d(FEATURE_CHANNELS, d, kernel_size=1)
                                            if cameras else None)
        self.encoder_1d_feature_pos_embed = nn.Embedding(2 + int(config.env_state_dim > 0), d)
        self.decoder_pos_embed = nn.Embedding(k, d)
        self.action_head = nn.Linear(d, config.action_dim)
        self.ffn_dropout = nn.Dropout(config.dropout)
        if config.env_state_dim:
            self.register_buffer("env_state_mean", torch.zeros(config.env_state_dim))
            self.register_buffer("env_state_std", torch.ones(config.env_state_dim))
        for name in cameras:
            self.register_buffer(f"image_mean_{name}", torch.zeros(config.image_channels, 1, 1))
            self.register_buffer(f"image_std_{name}", torch.ones(config.image_channels, 1, 1))
        self.image_keys = tuple(IMAGES_PREFIX + name for name in cameras)
        self.generator = torch.Generator().manual_seed(config.seed)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Layers by the package convention (``nn.init``), the backbone He-normal, the 1x1
        projection U(+-1/sqrt(fan_in)); then the encoder's and decoder's matrices Xavier-uniform
        (LeRobot's ``ACT._reset_parameters``, after DETR)."""
        for name, child in self.named_children():
            if isinstance(child, nn.Conv2d):
                bound = 1.0 / math.sqrt(child.weight[0].numel())
                nn.init.uniform_(child.weight, -bound, bound, generator=generator)
                nn.init.uniform_(child.bias, -bound, bound, generator=generator)
            elif name != "ffn_dropout":
                reset_children(nn.ModuleDict({name: child}), generator)
        for stack in (self.encoder, self.decoder):
            for p in stack.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p, generator=generator)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> LeRobotACTConfig:
        return LeRobotACTConfig(**d)

    @classmethod
    def features(cls, config: LeRobotACTConfig) -> tuple[dict[str, Any], dict[str, Any]]:
        inputs, outputs = super().features(config)
        if config.env_state_dim:
            inputs[ENV_STATE_KEY] = {"type": "ENV", "shape": [config.env_state_dim]}
        shape = [config.image_channels, config.image_height, config.image_width]
        for name in config.camera_names:
            inputs[IMAGES_PREFIX + name] = {"type": "VISUAL", "shape": shape}
        return inputs, outputs

    @classmethod
    def normalization(cls, config: LeRobotACTConfig) -> dict[str, str]:
        mapping = super().normalization(config)
        if config.env_state_dim:
            mapping["ENV"] = "MEAN_STD"
        if config.camera_names:
            mapping["VISUAL"] = "MEAN_STD"
        return mapping

    # -- inputs ----------------------------------------------------------------------------------
    def check_normalization(self) -> None:
        """The state/action statistics (``ChunkPolicy``) and those of the environment state
        and the cameras: ``ValueError`` unless finite, the stds >= STD_MIN."""
        super().check_normalization()
        names = [f"image_{part}_{n}" for n in self.config.camera_names for part in ("mean", "std")]
        if self.config.env_state_dim:
            names += ["env_state_mean", "env_state_std"]
        for name in names:
            t = getattr(self, name)
            if t.device.type == "meta":
                continue
            if not bool(torch.isfinite(t).all()) or not bool((t.abs() <= NORM_MAX).all()):
                raise ValueError(f"{name} must be finite and at most {NORM_MAX:g} in magnitude, "
                                 f"got {t.flatten().tolist()}")
            if "_std" in name and not bool((t >= STD_MIN).all()):
                raise ValueError(f"{name} must be >= {STD_MIN}, got {t.flatten().tolist()}")

    def _state(self, batch: dict[str, Tensor]) -> Tensor:
        """Checked state (B, S), normalised as LeRobot's processor: (s - mean) / (std + eps)."""
        s = state_batch(batch, self.state_dim, self.state_mean, self.kind, self.image_keys)
        self.check_normalization()
        return (s - self.state_mean) / (self.state_std + NORM_EPS)

    def _env_state(self, batch: dict[str, Tensor], b: int) -> Tensor | None:
        if not self.config.env_state_dim:
            if ENV_STATE_KEY in batch:
                raise ValueError(f"batch carries {ENV_STATE_KEY!r} but this policy's config has "
                                 "env_state_dim=0: drop it or configure the policy to take it")
            return None
        if ENV_STATE_KEY not in batch:
            raise ValueError(f"batch must contain {ENV_STATE_KEY!r} (env_state_dim="
                             f"{self.config.env_state_dim}), got keys {sorted(batch)}")
        like = self.env_state_mean
        e = torch.as_tensor(batch[ENV_STATE_KEY], dtype=like.dtype, device=like.device)
        if tuple(e.shape) != (b, self.config.env_state_dim):
            raise ValueError(f"{ENV_STATE_KEY} must have shape ({b}, {self.config.env_state_dim})"
                             f", got {tuple(e.shape)}")
        if e.device.type != "meta" and not bool(torch.isfinite(e).all()):
            raise ValueError(f"{ENV_STATE_KEY} must be finite")
        return (e - self.env_state_mean) / (self.env_state_std + NORM_EPS)

    def _images(self, batch: dict[str, Tensor], b: int) -> list[Tensor]:
        """Each camera's normalised image (B, C, H, W), checked (key, shape, finite)."""
        c = self.config
        want = (b, c.image_channels, c.image_height, c.image_width)
        images = []
        for name, key in zip(c.camera_names, self.image_keys, strict=True):
            if key not in batch:
                raise ValueError(f"batch must contain {key!r} (the config names camera "
                                 f"{name!r}), got keys {sorted(batch)}")
            mean = getattr(self, f"image_mean_{name}")
            img = torch.as_tensor(batch[key], device=mean.device)
            if not img.is_floating_point() or tuple(img.shape) != want:
                raise ValueError(f"{key} must be a float tensor of shape {want}, got "
                                 f"{img.dtype} {tuple(img.shape)}")
            img = img.to(mean.dtype)
            if img.device.type != "meta" and not bool(torch.isfinite(img).all()):
                raise ValueError(f"{key} must be finite")
            images.append((img - mean) / (getattr(self, f"image_std_{name}") + NORM_EPS))
        return images

    # -- network ---------------------------------------------------------------------------------
    def encode(self, s: Tensor, a: Tensor, pad: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(mu, logvar), each (B, latent_dim): the posterior over [CLS, s, a_1..a_k]."""
        b = s.shape[0]
        tokens = torch.cat([self.vae_encoder_cls_embed.weight.expand(b, 1, -1),
                            self.vae_encoder_robot_state_input_proj(s)[:, None],
                            self.vae_encoder_action_input_proj(a)], dim=1)
        mask = None
        if pad is not None:  # True = padded key (CLS and state never are)
            mask = torch.cat([torch.zeros(b, 2, dtype=torch.bool, device=pad.device), pad], 1)
        h = detr_stack(self.vae_encoder, tokens, self.vae_encoder_pos_enc, self.ffn_dropout,
                       key_padding_mask=mask)
        params = self.vae_encoder_latent_output_proj(h[:, 0])
        return params[:, :self.config.latent_dim], params[:, self.config.latent_dim:]

    def decode(self, s: Tensor, z: Tensor, env: Tensor | None, images: list[Tensor]) -> Tensor:
        """Normalised chunk (B, k, A) from the normalised inputs and the latent."""
        b = s.shape[0]
        tokens = [self.encoder_latent_input_proj(z), self.encoder_robot_state_input_proj(s)]
        if env is not None:
            assert self.encoder_env_state_input_proj is not None
            tokens.append(self.encoder_env_state_input_proj(env))
        pos = [self.encoder_1d_feature_pos_embed.weight[None].expand(b, -1, -1)]
        h = torch.stack(tokens, dim=1)
        if images:
            assert self.backbone is not None and self.encoder_img_feat_input_proj is not None
            cells, codes = [h], pos
            for img in images:
                fmap = self.backbone(img)  # (B, 512, H', W')
                code = sinusoid_2d(fmap.shape[-2], fmap.shape[-1], self.config.dim // 2,
                                   fmap.device).to(fmap.dtype)
                cells.append(self.encoder_img_feat_input_proj(fmap).flatten(2).transpose(1, 2))
                codes.append(code.flatten(2).transpose(1, 2).expand(b, -1, -1))
            h, pos = torch.cat(cells, dim=1), [torch.cat(codes, dim=1)]
        memory_pos = pos[0]
        memory = detr_stack(self.encoder, h, memory_pos, self.ffn_dropout)
        queries = self.decoder_pos_embed.weight[None]  # (1, k, d)
        out = detr_stack(self.decoder, torch.zeros(b, *queries.shape[1:]).to(queries),
                         queries, self.ffn_dropout, memory=memory, memory_pos=memory_pos)
        return self.action_head(out)

    def _noise(self, like: Tensor) -> Tensor:
        return torch.randn(like.shape, generator=self.generator).to(like)

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """L1 (``loss_reduction``) + kl_weight * KL (module docstring); LeRobot's
        ``ACTPolicy.forward`` with ``action_is_pad`` optional."""
        s = self._state(batch)
        b = s.shape[0]
        env, images = self._env_state(batch, b), self._images(batch, b)
        target, pad = self._target(batch)
        if self.config.use_vae:
            mu, logvar = self.encode(s, target, pad)
            z = mu + (logvar / 2).exp() * self._noise(mu)
            kl_weight = self.config.kl_weight
        else:
            mu = logvar = z = s.new_zeros(b, self.config.latent_dim)
            kl_weight = 0.0
        return act_loss(self.decode(s, z, env, images), target, mu, logvar, kl_weight, "l1", pad,
                        self.config.loss_reduction)

    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        """(B, k, A) unnormalised actions, decoded with z = 0 (LeRobot's inference)."""
        s = self._state(batch)
        b = s.shape[0]
        env, images = self._env_state(batch, b), self._images(batch, b)
        z = s.new_zeros(b, self.config.latent_dim)
        return self._unnormalize(self.decode(s, z, env, images))
