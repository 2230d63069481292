"""A small vision-language-action policy on the project's one Transformer (pi0's layout).

Structure (issue 32; Black et al. 2024, pi0 §3; the same layout as SmolVLA and pi0.5): one
sequence of tokens in two parts,

    prefix = [image patches of every camera ; instruction tokens]         (P tokens)
    suffix = [state token ; k noisy action tokens A^tau (with tau)]        (1 + k tokens)

attended through :func:`transformer_math.functional.masks.prefix_lm_mask` with suffix blocks
[1, k]: the prefix is bidirectional and never sees the suffix; the state token sees the prefix;
the action tokens see the prefix, the state and each other. Positions are 2-D axial RoPE
(:func:`transformer_math.functional.rope.axial_rope_angles`, three axes (t, row, col) as
Qwen2-VL's M-RoPE): patch (r, c) of camera m sits at (m, r, c), text and suffix token j at
(G + j, G + j, G + j) with G = max(cameras, grid side), which is 1-D RoPE along the text.

Tokens: an image (C, S, S) in [0, 1] becomes (S / p)^2 patch tokens of width d, one per p x p
cell, plus a learned per-camera vector: by default (``patch_embedding="conv"``) through the conv
stem of :class:`.vision.ConvPatchEmbed` (Xiao et al. 2021; trained from scratch, the linear
projection left VLAPush's 4-pixel objects unused, see that class), or (``"linear"``) each cell
flattened and mapped by one Linear (ViT's patch embedding, Dosovitskiy et al. 2021);
the instruction by the byte tokenizer or (``tokenizer="bpe"``) a BPE trained on the instruction
corpus (:mod:`.vla_tokenizer`; its JSON is a uint8 buffer of the state dict, so
``model.safetensors`` carries it, and ``save_pretrained`` writes it beside as ``tokenizer.json``
too) and an embedding table; the normalised state by a Linear; an action token is MLP([W_a A^tau_i ;
phi(tau)]) with the sinusoidal time features phi of :func:`.denoising.timestep_features` (pi0's
action-time MLP).

Weights: ``action_expert=True`` gives the suffix its own Transformer stack of the same shape
(pi0's mixture of transformers: per layer the prefix tokens go through the trunk's norms, q/k/v
and output projections and FFN, the suffix tokens through the expert's, and ONE attention runs
over all of them); ``action_expert=False`` sends every token through the trunk (one shared
stack; then the layer equals the library block under the prefix-LM mask, a test). Both stacks
are ``Transformer(TransformerConfig(...))`` (:func:`vla_trunk_config`); this module only
schedules their blocks' parts.

Flow matching (as :mod:`.flow_matching`): A^tau = (1 - tau) eps + tau A, target u = A - eps,
loss = mean |v - u|^2 over the non-padded steps; sampling integrates K Euler steps from
A^0 ~ N(0, I). The prefix does not depend on A^tau or tau, so its keys and values are computed
once per observation (:meth:`PrefixLMTrunk.encode_prefix`) and reused by the K steps
(:meth:`PrefixLMTrunk.decode_suffix`); ``use_prefix_cache=False`` recomputes the whole sequence
at every step (the same actions up to float rounding, a test).

Hook points (``run_with_cache(policy.trunk, ...)``): ``hooks.{i}.hook_pattern`` (B, H, T_q, S)
the attention weights of layer i (only while listened to), ``hooks.{i}.hook_resid_prefix``
(B, P, d) and ``hooks.{i}.hook_resid_suffix`` (B, 1 + k, d) the layer outputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.masks import prefix_lm_mask
from transformer_math.functional.rope import (
    angles_to_cos_sin,
    apply_rotary,
    axial_rope_angles,
    axial_sections,
)
from transformer_math.functional.rope_scaling import default_inv_freq
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import HookPoint, hooks_live
from transformer_math.nn.init import reset_children
from transformer_math.nn.transformer import Transformer, TransformerBlock
from transformer_math.robotics.policies.base import (
    IMAGES_PREFIX,
    ChunkPolicy,
    logged,
    masked_mean,
    register_policy,
)
from transformer_math.robotics.policies.denoising import (
    TIME_SCALE,
    check_steps,
    timestep_features,
)
from transformer_math.robotics.policies.vision import ConvPatchEmbed
from transformer_math.robotics.policies.vla_tokenizer import (
    BPE_SPECIALS,
    BYTE_VOCAB_SIZE,
    bpe_from_json,
    encode_bpe,
    encode_bytes,
    task_list,
)

TASK_KEY = "task"
POSITIONS = ("axial_rope", "none")
TOKENIZERS = ("bytes", "bpe")
PATCH_EMBEDDINGS = ("conv", "linear")
TOKENIZER_FILE = "tokenizer.json"
MAX_CAMERAS = 8
MAX_FLOW_STEPS = 10_000
_CAMERA_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
NUM_AXES = 3

CACHE_POSITIONS_RESTART = declare_bug(
    "robotics.vla-cache-positions-restart", "with a cached prefix the suffix tokens are rotated "
    "by the RoPE positions of their index in the new tokens (0, 1, ...) instead of their index "
    "in the whole sequence (P, P + 1, ...): queries and keys of the suffix misaligned against "
    "the cached prefix keys", module=__name__,
    seen_in="decode loops that build position ids as arange(q_len) for the new tokens when a "
    "KV cache is passed (a recurring report against custom generate loops with "
    "past_key_values); the recomputing path is right, only the cached one shifts")


@dataclass(frozen=True)
class VLAConfig:
    """Sizes of the policy (module docstring); ``cameras`` names ``observation.images.<cam>``."""

    state_dim: int = 3
    action_dim: int = 3
    chunk_size: int = 8
    dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    action_expert: bool = True
    cameras: str = "top"
    image_channels: int = 3
    image_size: int = 32
    patch_size: int = 8
    patch_embedding: str = "conv"
    max_text_len: int = 48
    tokenizer: str = "bytes"
    vocab_size: int = BYTE_VOCAB_SIZE
    tokenizer_bytes: int = 0
    position: str = "axial_rope"
    rope_theta: float = 100.0
    inference_steps: int = 10
    use_prefix_cache: bool = True
    seed: int = 0

    @property
    def camera_names(self) -> tuple[str, ...]:
        return tuple(self.cameras.split(",")) if self.cameras else ()

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

    @property
    def prefix_len(self) -> int:
        return len(self.camera_names) * self.grid**2 + self.max_text_len

    @property
    def suffix_len(self) -> int:
        return 1 + self.chunk_size

    def __post_init__(self) -> None:
        names = self.camera_names
        if (not names or len(names) > MAX_CAMERAS or len(set(names)) != len(names)
                or not all(_CAMERA_NAME.fullmatch(n) for n in names)):
            raise ValueError(f"cameras must be 1 to {MAX_CAMERAS} distinct comma-separated "
                             f"names of letters, digits and '_', got {self.cameras!r}")
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size ({self.patch_size}) must divide image_size "
                             f"({self.image_size})")
        if self.patch_embedding not in PATCH_EMBEDDINGS:
            raise ValueError(f"patch_embedding must be one of {PATCH_EMBEDDINGS}, got "
                             f"{self.patch_embedding!r}")
        if self.patch_embedding == "conv" and (self.patch_size < 2
                                               or self.patch_size & (self.patch_size - 1)):
            raise ValueError(f"patch_embedding='conv' needs patch_size a power of two >= 2, "
                             f"got {self.patch_size}")
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {self.tokenizer!r}")
        if self.tokenizer == "bytes" and (self.vocab_size != BYTE_VOCAB_SIZE
                                          or self.tokenizer_bytes != 0):
            raise ValueError(f"tokenizer='bytes' has vocab_size {BYTE_VOCAB_SIZE} and "
                             f"tokenizer_bytes 0, got {self.vocab_size}, {self.tokenizer_bytes}")
        if self.tokenizer == "bpe" and (self.tokenizer_bytes < 1
                                        or self.vocab_size < len(BPE_SPECIALS)):
            raise ValueError(f"tokenizer='bpe' needs tokenizer_bytes >= 1 (the length of its "
                             f"JSON) and vocab_size >= {len(BPE_SPECIALS)}, got "
                             f"{self.tokenizer_bytes}, {self.vocab_size}")
        if self.position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, got {self.position!r}")
        if self.dim % self.num_heads or (self.dim // self.num_heads) % 2:
            raise ValueError(f"num_heads ({self.num_heads}) must divide dim ({self.dim}) into "
                             "even head widths")
        if self.position == "axial_rope" and self.dim // self.num_heads < 2 * NUM_AXES:
            raise ValueError(f"axial RoPE needs a head width >= {2 * NUM_AXES}, got "
                             f"{self.dim // self.num_heads}")
        if not (math.isfinite(self.rope_theta) and self.rope_theta > 1.0):
            raise ValueError(f"rope_theta must be a finite number > 1, got {self.rope_theta!r}")
        if self.max_text_len < 2:
            raise ValueError(f"max_text_len must be >= 2, got {self.max_text_len}")
        check_steps("inference_steps", self.inference_steps, MAX_FLOW_STEPS)


def vla_trunk_config(config: VLAConfig) -> TransformerConfig:
    """The trunk (and expert) stack: pre-LN, GELU MLP 4d, final LayerNorm, no head, no position
    code of its own (the policy rotates q and k itself, axial RoPE), bidirectional (the policy
    passes the prefix-LM mask)."""
    return TransformerConfig(hidden_size=config.dim, num_layers=config.num_layers,
                             num_heads=config.num_heads, output_size=0, causal=False,
                             final_norm=True, position="none",
                             max_seq_len=config.prefix_len + config.suffix_len)


def token_positions(config: VLAConfig, device: torch.device | None = None) -> Tensor:
    """(P + 1 + k, 3) integer axial coordinates of every token (module docstring)."""
    g, cams = config.grid, len(config.camera_names)
    axis = torch.arange(g, device=device)
    rows, cols = torch.meshgrid(axis, axis, indexing="ij")
    patches = [torch.stack([torch.full((g * g,), m, device=device), rows.flatten(),
                            cols.flatten()], dim=1) for m in range(cams)]
    start = max(cams, g)
    n_seq = config.max_text_len + config.suffix_len
    seq = torch.arange(start, start + n_seq, device=device)[:, None].expand(n_seq, NUM_AXES)
    return torch.cat([*patches, seq], dim=0)


class AxialRope(nn.Module):
    """q, k (B, H, T, d_k) rotated by the axial RoPE of integer coordinates (T, 3)."""

    inv_freq: Tensor

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        self.register_buffer("inv_freq", default_inv_freq(head_dim, theta).float(),
                             persistent=False)
        self.sections = axial_sections(head_dim // 2, NUM_AXES)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        cos, sin = angles_to_cos_sin(axial_rope_angles(positions, self.inv_freq, self.sections))
        return apply_rotary(x, cos, sin)


class LayerHooks(nn.Module):
    """The hook points of one joint layer (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.hook_pattern = HookPoint()
        self.hook_resid_prefix = HookPoint()
        self.hook_resid_suffix = HookPoint()


PrefixCache = list[tuple[Tensor, Tensor]]
"""Per layer the prefix's rotated keys and its values, each (B, H, P, d_k)."""


class PrefixLMTrunk(nn.Module):
    """The trunk stack and (optionally) the action expert stack, run as one attention per layer
    under the prefix-LM mask (module docstring)."""

    def __init__(self, config: VLAConfig) -> None:
        super().__init__()
        stack = vla_trunk_config(config)
        self.trunk = Transformer(stack)
        self.expert = Transformer(stack) if config.action_expert else None
        self.num_heads, self.head_dim = stack.num_heads, stack.dim_per_head
        self.rope = (AxialRope(self.head_dim, config.rope_theta)
                     if config.position == "axial_rope" else None)
        self.hooks = nn.ModuleList(LayerHooks() for _ in range(stack.num_layers))
        self.prefix_len = config.prefix_len
        cpu = torch.device("cpu")  # index tables, built on the CPU even under a meta build
        self.register_buffer("positions", token_positions(config, cpu), persistent=False)
        self.register_buffer("mask", prefix_lm_mask(config.prefix_len, [1, config.chunk_size],
                                                    device=cpu), persistent=False)

    def _blocks(self, i: int) -> tuple[TransformerBlock, TransformerBlock]:
        prefix = self.trunk.layers[i]
        return prefix, (prefix if self.expert is None else self.expert.layers[i])

    def _per_stack(self, i: int, fn: Callable[[TransformerBlock, Tensor], Tensor],
               xs: list[Tensor | None]) -> list[Tensor | None]:
        """``fn(block, x)`` on the prefix (trunk block) and the suffix (expert or trunk block);
        one call on the concatenation when both share a block (each hook point fires once)."""
        blocks = self._blocks(i)
        if xs[0] is not None and xs[1] is not None and blocks[0] is blocks[1]:
            n = xs[0].shape[1]
            y = fn(blocks[0], torch.cat([xs[0], xs[1]], dim=1))
            return [y[:, :n], y[:, n:]]
        return [None if x is None else fn(b, x) for b, x in zip(blocks, xs, strict=True)]

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def _layer(self, i: int, hs: list[Tensor | None], past: tuple[Tensor, Tensor] | None
               ) -> tuple[list[Tensor | None], tuple[Tensor, Tensor]]:
        """One joint pre-LN layer on [prefix, suffix] (either may be None); ``past`` holds the
        prefix's keys/values when the prefix is not recomputed. Returns the new hidden states
        and the prefix's (keys, values) of this layer."""
        lens = [0 if h is None else h.shape[1] for h in hs]
        start = 0 if hs[0] is not None else self.prefix_len
        rows = slice(start, start + sum(lens))
        xs = self._per_stack(i, lambda b, h: b.attn_norm(h), hs)
        qkv = self._per_stack(i, lambda b, x: torch.cat(
            [b.attn.q_proj(x), b.attn.k_proj(x), b.attn.v_proj(x)], dim=-1), xs)
        q, k, v = (self._heads(t) for t in torch.cat([t for t in qkv if t is not None],
                                                     dim=1).chunk(3, dim=-1))
        if self.rope is not None:
            pos = self.positions[rows]
            if past is not None and planted(CACHE_POSITIONS_RESTART):  # planted bug
                pos = self.positions[: rows.stop - rows.start]
            q, k = self.rope(q, pos), self.rope(k, pos)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        prefix_kv = (k[:, :, : self.prefix_len], v[:, :, : self.prefix_len])
        mask = self.mask[rows, : k.shape[2]]
        hook = self.hooks[i]
        listening = hooks_live() and hook.hook_pattern.active()
        out = scaled_dot_product_attention(q, k, v, attn_mask=mask, backend="sdpa",
                                           return_weights=listening)
        z = out.output
        if listening:
            assert out.weights is not None
            hook.hook_pattern(out.weights)
        b = z.shape[0]
        z = z.transpose(1, 2).reshape(b, -1, self.num_heads * self.head_dim)
        zs: list[Tensor | None] = list(z.split([n for n in lens if n], dim=1))
        if hs[0] is None:
            zs = [None, *zs]
        elif hs[1] is None:
            zs = [*zs, None]
        attn = self._per_stack(i, lambda blk, x: blk.attn.out_proj(x), zs)
        hs = [None if h is None else h + a for h, a in zip(hs, attn, strict=True)]
        ffn = self._per_stack(i, lambda blk, h: blk.ffn(blk.ffn_norm(h)), hs)
        hs = [None if h is None else h + f for h, f in zip(hs, ffn, strict=True)]
        if hooks_live():
            hs = [hs[0] if hs[0] is None else hook.hook_resid_prefix(hs[0]),
                  hs[1] if hs[1] is None else hook.hook_resid_suffix(hs[1])]
        return hs, prefix_kv

    def _final(self, h: Tensor) -> Tensor:
        stack = self.trunk if self.expert is None else self.expert
        assert stack.final_norm is not None
        return stack.final_norm(h)

    def forward(self, prefix: Tensor, suffix: Tensor) -> Tensor:
        """Suffix outputs (B, 1 + k, d) of the whole sequence (prefix (B, P, d), suffix
        (B, 1 + k, d) embedded), the prefix recomputed."""
        hs: list[Tensor | None] = [prefix, suffix]
        for i in range(len(self.hooks)):
            hs, _ = self._layer(i, hs, None)
        assert hs[1] is not None
        return self._final(hs[1])

    def encode_prefix(self, prefix: Tensor) -> PrefixCache:
        """The prefix's keys and values of every layer (once per observation)."""
        hs: list[Tensor | None] = [prefix, None]
        cache: PrefixCache = []
        for i in range(len(self.hooks)):
            hs, kv = self._layer(i, hs, None)
            cache.append(kv)
        return cache

    def decode_suffix(self, suffix: Tensor, cache: PrefixCache) -> Tensor:
        """Suffix outputs (B, 1 + k, d) attending to a cached prefix (the cache is not changed)."""
        if len(cache) != len(self.hooks):
            raise ValueError(f"cache must hold {len(self.hooks)} layers, got {len(cache)}")
        hs: list[Tensor | None] = [None, suffix]
        for i, kv in enumerate(cache):
            hs, _ = self._layer(i, hs, kv)
        assert hs[1] is not None
        return self._final(hs[1])


@register_policy("vla")
class VLAPolicy(ChunkPolicy):
    """Vision-language-action policy: images + instruction prefix, flow-matching action expert."""

    config_class: ClassVar[type] = VLAConfig
    config_limits: ClassVar[dict[str, tuple[int, int]]] = {
        "seed": (0, 2**63 - 1), "inference_steps": (1, MAX_FLOW_STEPS),
        "image_channels": (1, 16), "image_size": (1, 1024), "patch_size": (1, 1024),
        "max_text_len": (2, 4096), "tokenizer_bytes": (0, 2**20)}
    legacy_defaults: ClassVar[dict[str, Any]] = {"patch_embedding": "linear"}
    """Files saved before the conv stem (sessions 44-50) hold a linear patch embedding."""

    def __init__(self, config: VLAConfig) -> None:
        super().__init__(config.state_dim, config.action_dim, config.chunk_size)
        self.config = config
        d, c = config.dim, config
        self.image_keys = tuple(IMAGES_PREFIX + name for name in c.camera_names)
        self.patch_embed: nn.Module = (
            ConvPatchEmbed(c.image_channels, d, c.patch_size) if c.patch_embedding == "conv"
            else nn.Linear(c.image_channels * c.patch_size**2, d))
        self.camera_embed = nn.Embedding(len(c.camera_names), d)
        self.text_embed = nn.Embedding(c.vocab_size, d)
        self._bpe: Any = None
        if c.tokenizer == "bpe":  # the tokenizer's JSON travels in the weights file
            self.register_buffer("tokenizer_json", torch.zeros(c.tokenizer_bytes,
                                                                dtype=torch.uint8))
            self.register_load_state_dict_post_hook(_forget_tokenizer)
        self.state_embed = nn.Linear(c.state_dim, d)
        self.action_embed = nn.Linear(c.action_dim, d)
        self.action_time_mlp = nn.Sequential(nn.Linear(2 * d, d), nn.SiLU(), nn.Linear(d, d))
        self.trunk = PrefixLMTrunk(config)
        self.action_out = nn.Linear(d, c.action_dim)
        self.generator = torch.Generator().manual_seed(config.seed)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Layers by the package convention (``nn.init``)."""
        reset_children(self, generator)

    @staticmethod
    def config_from_dict(d: dict[str, Any]) -> VLAConfig:
        return VLAConfig(**{**VLAPolicy.legacy_defaults, **d})

    @classmethod
    def features(cls, config: VLAConfig) -> tuple[dict[str, Any], dict[str, Any]]:
        inputs, outputs = super().features(config)
        shape = [config.image_channels, config.image_size, config.image_size]
        for name in config.camera_names:
            inputs[IMAGES_PREFIX + name] = {"type": "VISUAL", "shape": shape}
        inputs[TASK_KEY] = {"type": "LANGUAGE", "shape": [config.max_text_len]}
        return inputs, outputs

    @classmethod
    def normalization(cls, config: VLAConfig) -> dict[str, str]:
        """Images ``VISUAL: IDENTITY`` (in [0, 1], mapped to [-1, 1] inside)."""
        return {**super().normalization(config), "VISUAL": "IDENTITY"}

    # -- tokens --------------------------------------------------------------------------------
    def set_tokenizer(self, tokenizer: Any) -> None:
        """Install a BPE tokenizer (``vla_tokenizer.train_bpe``) whose JSON has exactly
        ``config.tokenizer_bytes`` bytes and whose vocabulary fits ``config.vocab_size``."""
        if self.config.tokenizer != "bpe":
            raise ValueError("set_tokenizer needs a config with tokenizer='bpe'")
        data = tokenizer.to_str().encode("utf-8")
        if len(data) != self.config.tokenizer_bytes:
            raise ValueError(f"the tokenizer's JSON has {len(data)} bytes, the config says "
                             f"tokenizer_bytes={self.config.tokenizer_bytes}")
        if tokenizer.get_vocab_size() > self.config.vocab_size:
            raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens, more than "
                             f"vocab_size={self.config.vocab_size}")
        self.tokenizer_json.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        self._bpe = tokenizer

    def bpe(self) -> Any:
        """The BPE tokenizer, parsed from the ``tokenizer_json`` buffer on first use."""
        if self._bpe is None:
            text = bytes(self.tokenizer_json.cpu().tolist()).decode("utf-8", errors="replace")
            self._bpe = bpe_from_json(text)
        return self._bpe

    def text_ids(self, texts: list[str]) -> Tensor:
        """(B, max_text_len) instruction token ids (bytes or BPE, the config's)."""
        c, device = self.config, self.text_embed.weight.device
        if c.tokenizer == "bytes":
            return encode_bytes(texts, c.max_text_len, device)
        ids = encode_bpe(self.bpe(), texts, c.max_text_len, device)
        if ids.numel() and int(ids.max()) >= c.vocab_size:  # a tokenizer of another policy
            raise ValueError(f"the tokenizer produced id {int(ids.max())} >= vocab_size "
                             f"{c.vocab_size}")
        return ids

    def save_pretrained(self, directory: Any) -> None:
        """The policy folder; a BPE policy also writes ``tokenizer.json`` beside it (for
        reading: the loaded policy takes the copy inside ``model.safetensors``)."""
        super().save_pretrained(directory)
        if self.config.tokenizer == "bpe":
            from pathlib import Path

            from transformer_math import safe_write

            safe_write.write_bytes(Path(directory) / TOKENIZER_FILE,
                                   self.bpe().to_str().encode("utf-8"))

    def _images(self, batch: dict[str, Any], b: int) -> list[Tensor]:
        c, like = self.config, self.camera_embed.weight
        want = (b, c.image_channels, c.image_size, c.image_size)
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
        return images

    def prefix_tokens(self, batch: dict[str, Any], b: int) -> Tensor:
        """(B, P, d): patch tokens of every camera, then the instruction's byte tokens."""
        c, p = self.config, self.config.patch_size
        parts = []
        for m, img in enumerate(self._images(batch, b)):
            if c.patch_embedding == "conv":
                tokens = self.patch_embed(img)  # (B, g * g, d)
            else:
                patches = (img * 2.0 - 1.0).unfold(2, p, p).unfold(3, p, p)  # (B, C, g, g, p, p)
                patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, c.grid**2, -1)
                tokens = self.patch_embed(patches)
            parts.append(tokens + self.camera_embed.weight[m])
        if TASK_KEY not in batch:
            raise ValueError(f"batch must contain {TASK_KEY!r} (the instruction), got keys "
                             f"{sorted(batch)}")
        ids = self.text_ids(task_list(batch[TASK_KEY], b))
        parts.append(self.text_embed(ids))
        return torch.cat(parts, dim=1)

    def suffix_tokens(self, s: Tensor, x: Tensor, tau: Tensor) -> Tensor:
        """(B, 1 + k, d): the state token, then k action tokens of A^tau (B, k, A) at tau (B,)."""
        d = self.config.dim
        phi = timestep_features(tau * TIME_SCALE, d)[:, None].expand(-1, x.shape[1], -1)
        actions = self.action_time_mlp(torch.cat([self.action_embed(x), phi], dim=-1))
        return torch.cat([self.state_embed(s)[:, None], actions], dim=1)

    def velocity(self, prefix: Tensor | PrefixCacheBox, s: Tensor, x: Tensor,
                 tau: Tensor) -> Tensor:
        """v_theta(A^tau, tau, o) (B, k, A) from the embedded prefix or its cache."""
        suffix = self.suffix_tokens(s, x, tau)
        if isinstance(prefix, PrefixCacheBox):
            h = self.trunk.decode_suffix(suffix, prefix.cache)
        else:
            h = self.trunk(prefix, suffix)
        return self.action_out(h[:, 1:])

    # -- policy interface ----------------------------------------------------------------------
    def _noise(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        return torch.randn(shape, generator=self.generator).to(like)

    def forward(self, batch: dict[str, Any]) -> tuple[Tensor, dict[str, float]]:
        """The conditional flow-matching loss (module docstring)."""
        s = self._state(batch)
        target, pad = self._target(batch)
        b = s.shape[0]
        tau = torch.rand((b,), generator=self.generator).to(s)
        eps = self._noise(tuple(target.shape), target)
        x_tau = (1.0 - tau)[:, None, None] * eps + tau[:, None, None] * target
        pred = self.velocity(self.prefix_tokens(batch, b), s, x_tau, tau)
        loss = masked_mean((pred - (target - eps)).pow(2), pad)
        return loss, {"mse_velocity": logged(loss)}

    @torch.no_grad()
    def sample(self, batch: dict[str, Any], s: Tensor, steps: int | None = None,
               use_cache: bool | None = None) -> Tensor:
        """Normalised chunk (B, k, A): K Euler steps from A^0 ~ N(0, I); the prefix encoded
        once (``use_cache``, default the config's) or at every step."""
        k = self.config.inference_steps if steps is None else check_steps(
            "steps", steps, MAX_FLOW_STEPS)
        cached = self.config.use_prefix_cache if use_cache is None else use_cache
        b = s.shape[0]
        x = self._noise((b, self.chunk_size, self.action_dim), s)
        prefix = self.prefix_tokens(batch, b)
        context: Tensor | PrefixCacheBox = (
            PrefixCacheBox(self.trunk.encode_prefix(prefix)) if cached else prefix)
        for i in range(k):
            tau = s.new_full((b,), i / k)
            x = x + self.velocity(context, s, x, tau) / k
        return x

    def predict_action_chunk(self, batch: dict[str, Any], steps: int | None = None
                             ) -> Tensor:
        """(B, k, A) actions: one flow sample per observation (K = ``steps`` or the config's)."""
        s = self._state(batch)
        return self._unnormalize(self.sample(batch, s, steps))


def _forget_tokenizer(module: nn.Module, incompatible_keys: object) -> None:
    """After ``load_state_dict``: the BPE is parsed again from the loaded buffer."""
    assert isinstance(module, VLAPolicy)
    module._bpe = None


@dataclass
class PrefixCacheBox:
    """A prefix cache passed where an embedded prefix may be (:meth:`VLAPolicy.velocity`)."""

    cache: PrefixCache
