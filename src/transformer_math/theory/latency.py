"""A roofline cost and latency model of decoder-only Transformer forwards (000 §8.3.7, 000:396,
000:1174; issue 20 item 1).

Notation: B batch, d = hidden, L = layers, H query heads, H_kv key/value heads (GQA, Ainslie et
al. 2023), d_k = d_v head width, d_ff MLP width, m = 2 matrices (GELU MLP) or 3 (SwiGLU, Shazeer
2020), V vocabulary (0: no unembedding), w bytes per element (2 for bf16/fp16, 4 for fp32).
A forward processes t new tokens after p cached ones (keys S = p + t). A matrix product
(M x K)(K x N) costs 2 M K N FLOPs (``torch.utils.flop_counter``'s convention, that of
``theory.attention_flops``, whose closed forms this module calls).

Per layer, the operators (each one kernel) and their FLOPs / slow-memory bytes:

- ``qkv``:  F = 2 B t d d_k (H + 2 H_kv); bytes = w [d d_k (H + 2 H_kv) (weights) + B t d (in)
  + B t d_k (H + 2 H_kv) (out: q and the new keys/values, i.e. the KV-cache write)].
- ``attention``: F = 2 B H P (d_k + d_v), P the (query, key) pairs computed: P = t S for a dense
  masked product (standard attention, Algorithm 0 of Dao et al. 2022, and the project's
  ``reference`` backend: the causal mask is applied after the full product), P = t p + t (t+1)/2
  (the causal pairs only) when tiles above the diagonal are skipped (FlashAttention-2; the tile
  granularity is ignored). Bytes, per (batch, query head):
  standard  = w [t d_k + (H_kv / H) S (d_k + d_v) + 4 t S + t d_v]: read Q, K, V (each K/V
              group once), write S, read S, write P, read P, write O (Algorithm 0; for t = S this
              is ``theory.io_model.standard_attention_io``'s 4 N d + 4 N^2 with H_kv = H);
  flash     = w [t d_k + ceil(t / B_r) (H_kv / H) S_vis (d_k + d_v) + t d_v + t]: the tiled loop
              of ``theory.io_model.tiled_attention_io`` (Q read once, K/V read once per query tile
              of B_r rows, O and the logsumexp written once; no n x n matrix ever reaches slow
              memory: Theorem 2's Theta(N^2 d^2 / M)); B_r = floor(M / 5 d_k) from the on-chip
              size M (``tile_sizes_for_sram``), S_vis the keys a tile visits (causal skip).
  The K/V reads of the cached p tokens are the KV-cache read.
- ``out``:  F = 2 B t H d_v d; bytes = w [H d_v d + B t H d_v + B t d].
- ``mlp``:  F = 2 m B t d d_ff; bytes = w [m d d_ff + B t d + (m - 1) B t d_ff] (up) +
  w [B t d_ff + B t d] (down).
Once per forward, ``unembed`` (when V > 0): F = 2 B t_l d V for the t_l tokens whose logits are
wanted (all t, or only the last one); bytes = w [V d + B t_l d + B t_l V]. Norms, softmax,
residual additions and the embedding lookup are left out (elementwise, O(B t d) bytes).

Time: the roofline per operator (Williams, Waterman, Patterson 2009): an operator takes
max(F / (efficiency x peak FLOP/s), bytes / (efficiency x bandwidth)) + overhead, and a forward
takes the sum over its operators. Per operator, not per forward, because each kernel is bound
by one resource at a time (a decode step's matrix products are bandwidth-bound, a long prefill's
compute-bound). ``efficiency = 1`` gives the peak-hardware lower bound on the time.

Cases: :func:`prefill_cost` (t = n, p = 0), :func:`decode_cost` (t = 1 after p = n cached),
:func:`autoregressive_chunk_cost` (prefill the prefix, then one decode step per action token:
action dimensions x chunk length, RT-2 / OpenVLA's binned tokens), :func:`flow_chunk_cost`
(K denoising or flow-matching steps; each a forward of an action expert over the chunk's tokens
attending to the cached prefix, as pi0 does with its 300M expert, Black et al. 2024) and the
largest context, depth or width that fits a budget (:func:`largest_fitting`, bisection).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from transformer_math.bugs import declare_bug, planted
from transformer_math.theory.attention_flops import attention_product_flops, projection_flops

ATTENTION_LINEAR_IN_KEYS = declare_bug(
    "latency.attention-linear-in-keys",
    "the attention products are priced as 2 B H t (d_k + d_v), one key per query, instead of "
    "2 B H t S (d_k + d_v): the n^2 term of attention disappears from the cost model",
    module=__name__,
    seen_in="pricing Q K^T like a projection (one d_k-vector product per token), forgetting "
    "that each query meets every key")

ATTENTION_KINDS = ("standard", "flash")
MLP_KINDS = {"gelu": 2, "swiglu": 3}
LOGITS = ("all", "last", "none")


def _int(name: str, value: Any, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


def _pos(name: str, value: Any, *, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or x <= 0 or (high is not None and x > high):
        bound = f" and <= {high:g}" if high is not None else ""
        raise ValueError(f"{name} must be a finite number > 0{bound}, got {value!r}")
    return x


# ---------------------------------------------------------------------------------------------
# model shapes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only Transformer that its cost depends on (see module docstring).

    ``kv_heads``/``head_dim``/``ffn`` default to ``heads``, ``hidden // heads`` and
    ``4 hidden``; ``vocab = 0``: no unembedding.
    """

    hidden: int
    layers: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    ffn: int | None = None
    mlp: str = "gelu"
    vocab: int = 0

    def __post_init__(self) -> None:
        _int("hidden", self.hidden)
        _int("layers", self.layers)
        _int("heads", self.heads)
        if self.kv_heads is not None:
            _int("kv_heads", self.kv_heads)
            if self.heads % self.kv_heads:
                raise ValueError(f"kv_heads must divide heads = {self.heads}, "
                                 f"got {self.kv_heads}")
        if self.head_dim is not None:
            _int("head_dim", self.head_dim)
        elif self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden = {self.hidden} (or give head_dim), "
                             f"got {self.heads}")
        if self.ffn is not None:
            _int("ffn", self.ffn)
        if self.mlp not in MLP_KINDS:
            raise ValueError(f"mlp must be one of {sorted(MLP_KINDS)}, got {self.mlp!r}")
        _int("vocab", self.vocab, low=0)

    @property
    def kv(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def dk(self) -> int:
        return self.hidden // self.heads if self.head_dim is None else self.head_dim

    @property
    def ff(self) -> int:
        return 4 * self.hidden if self.ffn is None else self.ffn

    @property
    def matrices(self) -> int:
        return MLP_KINDS[self.mlp]

    def layer_weights(self) -> int:
        """d d_k (H + 2 H_kv) + H d_k d + m d d_ff weight entries of one block."""
        d, dk = self.hidden, self.dk
        attention = d * dk * (self.heads + 2 * self.kv) + self.heads * dk * d
        return attention + self.matrices * d * self.ff

    def weights(self) -> int:
        """L (block weights) + V d (the unembedding; the embedding lookup reads t rows only)."""
        return self.layers * self.layer_weights() + self.vocab * self.hidden

    def kv_cache_bytes(self, tokens: int, dtype_bytes: int = 2, batch: int = 1) -> int:
        """2 L B tokens H_kv d_k w: the keys and values of ``tokens`` positions."""
        return 2 * self.layers * batch * tokens * self.kv * self.dk * dtype_bytes

    @classmethod
    def from_config(cls, config: Any) -> ModelShape:
        """The shape of a :class:`~transformer_math.nn.config.TransformerConfig` (its head, when
        there is one, is the unembedding; ``swiglu`` has 3 matrices, every other MLP 2)."""
        return cls(hidden=config.hidden_size, layers=config.num_layers, heads=config.num_heads,
                   kv_heads=config.kv_heads, head_dim=config.dim_per_head, ffn=config.ffn_size,
                   mlp="swiglu" if config.feedforward == "swiglu" else "gelu",
                   vocab=config.head_size)

    def to_json(self) -> dict[str, Any]:
        return {"hidden": self.hidden, "layers": self.layers, "heads": self.heads,
                "kv_heads": self.kv, "head_dim": self.dk, "ffn": self.ff, "mlp": self.mlp,
                "vocab": self.vocab, "weights": self.weights()}


@dataclass(frozen=True)
class ModelPreset:
    shape: ModelShape
    source: str


MODEL_PRESETS: dict[str, ModelPreset] = {
    "open-llama-3b": ModelPreset(
        ModelShape(hidden=3200, layers=26, heads=32, ffn=8640, mlp="swiglu", vocab=32000),
        "openlm-research/open_llama_3b config.json (Geng & Liu 2023): hidden 3200, 26 layers, "
        "32 heads, intermediate 8640, SwiGLU, vocab 32000"),
    "llama-3.2-3b": ModelPreset(
        ModelShape(hidden=3072, layers=28, heads=24, kv_heads=8, head_dim=128, ffn=8192,
                   mlp="swiglu", vocab=128256),
        "meta-llama/Llama-3.2-3B config.json: hidden 3072, 28 layers, 24 heads, 8 KV heads, "
        "intermediate 8192, SwiGLU, vocab 128256 (tied)"),
    "gemma-2b": ModelPreset(
        ModelShape(hidden=2048, layers=18, heads=8, kv_heads=1, head_dim=256, ffn=16384,
                   mlp="swiglu", vocab=257152),
        "PaliGemma's Gemma 2B (pi0's VLM; openpi gemma.py 'gemma_2b'): width 2048, depth 18, "
        "8 heads, 1 KV head, head_dim 256, mlp 16384 (GeGLU: 3 matrices), vocab 257152"),
    "gemma-300m": ModelPreset(
        ModelShape(hidden=1024, layers=18, heads=8, kv_heads=1, head_dim=256, ffn=4096,
                   mlp="swiglu", vocab=0),
        "pi0's action expert (openpi gemma.py 'gemma_300m'; Black et al. 2024 '300M'): width "
        "1024, depth 18, 8 heads, 1 KV head, head_dim 256, mlp 4096 (GeGLU), no vocabulary"),
}


def get_model_preset(name: str) -> ModelPreset:
    if name not in MODEL_PRESETS:
        raise ValueError(f"model preset must be one of {sorted(MODEL_PRESETS)}, got {name!r}")
    return MODEL_PRESETS[name]


# ---------------------------------------------------------------------------------------------
# hardware
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hardware:
    """Peak dense matrix throughput (FLOP/s), slow-memory bandwidth (bytes/s), on-chip memory per
    compute unit (bytes, FlashAttention's M), the dtype the numbers are for, and their source."""

    name: str
    flops: float
    bandwidth: float
    sram_bytes: int
    dtype_bytes: int
    source: str
    verified: bool = True

    def __post_init__(self) -> None:
        _pos("flops", self.flops)
        _pos("bandwidth", self.bandwidth)
        _int("sram_bytes", self.sram_bytes)
        _int("dtype_bytes", self.dtype_bytes)

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which an operator is compute-bound: peak / bandwidth."""
        return self.flops / self.bandwidth

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "flops": self.flops, "bandwidth": self.bandwidth,
                "sram_bytes": self.sram_bytes, "dtype_bytes": self.dtype_bytes,
                "ridge_flops_per_byte": self.ridge, "source": self.source,
                "verified": self.verified}


HARDWARE: dict[str, Hardware] = {
    "h100-sxm": Hardware(
        "h100-sxm", 989e12, 3.35e12, 228 * 1024, 2,
        "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 tensor 1,979 TFLOP/s with "
        "sparsity = 989 dense; HBM3 3.35 TB/s; 228 KB shared memory per SM (Hopper tuning "
        "guide)"),
    "a100-80gb": Hardware(
        "a100-80gb", 312e12, 2.0e12, 192 * 1024, 2,
        "NVIDIA A100 datasheet (80GB SXM): BF16 tensor 312 TFLOP/s dense; HBM2e 2,039 GB/s "
        "(2.0 TB/s); 192 KB L1/shared per SM (FlashAttention paper, §2.1)"),
    "jetson-agx-orin-64gb": Hardware(
        "jetson-agx-orin-64gb", 42.5e12, 204.8e9, 192 * 1024, 2,
        "Jetson AGX Orin Technical Brief v1.2 (as quoted, not read here): GPU 170 sparse INT8 "
        "TOPS -> 85 dense INT8 -> 42.5 dense FP16 TFLOP/s (tensor cores: FP16 rate = INT8 / 2); "
        "LPDDR5 256-bit 204.8 GB/s; 192 KB L1 per SM. UNVERIFIED: derived, not a datasheet "
        "FP16 figure",
        verified=False),
}


def _cache_bytes_here() -> int:
    """L2 size of cpu0 from sysfs (the on-chip memory a tiled kernel could use), else 1 MiB."""
    try:
        from pathlib import Path

        for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            if (index / "level").read_text().strip() == "2":
                text = (index / "size").read_text().strip().upper()
                scale = {"K": 1024, "M": 1024**2}.get(text[-1], 1)
                return int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return 1024**2


def measure_cpu_hardware(*, size: int = 512, copy_mib: int = 64, repeats: int = 5) -> Hardware:
    """The ``cpu-here`` preset, MEASURED now in float32 with the current torch thread count:
    FLOP/s = 2 size^3 / (median time of a size x size matmul); bandwidth = 2 x bytes / (median
    time of copying a ``copy_mib`` MiB tensor) (a copy reads and writes each byte). Never
    hard-coded: the numbers are those of this machine, at this moment, loaded or not."""
    import torch

    _int("size", size)
    _int("copy_mib", copy_mib)
    _int("repeats", repeats)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g)
    b = torch.randn(size, size, generator=g)
    src = torch.empty(copy_mib * 2**20 // 4)
    dst = torch.empty_like(src)

    from transformer_math.clocks import median_seconds

    mm = median_seconds(lambda: torch.mm(a, b), repeats=repeats)
    cp = median_seconds(lambda: dst.copy_(src), repeats=repeats)
    return Hardware("cpu-here", 2 * size**3 / mm, 2 * src.numel() * 4 / cp, _cache_bytes_here(),
                    4, f"measured at run time: {size}^3 float32 matmul ({mm * 1e3:.2f} ms) and "
                    f"a {copy_mib} MiB copy ({cp * 1e3:.2f} ms), {torch.get_num_threads()} "
                    "thread(s), medians of {repeats}".replace("{repeats}", str(repeats)))


def get_hardware(name: str) -> Hardware:
    """A preset of :data:`HARDWARE`, or ``cpu-here`` (measured now)."""
    if name == "cpu-here":
        return measure_cpu_hardware()
    if name not in HARDWARE:
        raise ValueError(f"hardware must be one of {sorted([*HARDWARE, 'cpu-here'])}, "
                         f"got {name!r}")
    return HARDWARE[name]


def custom_hardware(tflops: float, bandwidth_gbs: float, *, sram_kib: float = 192.0,
                    dtype_bytes: int = 2) -> Hardware:
    """A user-given throughput: ``tflops`` TFLOP/s and ``bandwidth_gbs`` GB/s."""
    _pos("tflops", tflops)
    _pos("bandwidth_gbs", bandwidth_gbs)
    _pos("sram_kib", sram_kib)
    return Hardware("custom", tflops * 1e12, bandwidth_gbs * 1e9, int(sram_kib * 1024),
                    _int("dtype_bytes", dtype_bytes), "given on the command line")


# ---------------------------------------------------------------------------------------------
# operators and forwards
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One kernel: FLOPs and slow-memory bytes, summed over the ``count`` layers it runs in."""

    name: str
    flops: int
    bytes: int
    count: int = 1

    def seconds(self, hw: Hardware, efficiency: float = 1.0, overhead_s: float = 0.0) -> float:
        """max(F / (e peak), bytes / (e bandwidth)) + count x overhead."""
        return (max(self.flops / (efficiency * hw.flops), self.bytes / (efficiency * hw.bandwidth))
                + self.count * overhead_s)


@dataclass(frozen=True)
class Cost:
    """FLOPs, bytes and roofline time of a forward (or of several), with its operators."""

    flops: int
    bytes: int
    seconds: float
    ops: tuple[Op, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ms(self) -> float:
        return 1e3 * self.seconds

    def op_seconds(self, name: str, hw: Hardware, efficiency: float = 1.0) -> float:
        return sum(o.seconds(hw, efficiency) for o in self.ops if o.name == name)

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes,
                    self.seconds + other.seconds, self.ops + other.ops)

    def times(self, k: int) -> Cost:
        """k repetitions of this cost."""
        return Cost(k * self.flops, k * self.bytes, k * self.seconds,
                    tuple(replace(o, flops=k * o.flops, bytes=k * o.bytes, count=k * o.count)
                          for o in self.ops))

    def to_json(self) -> dict[str, Any]:
        by: dict[str, dict[str, float]] = {}
        for o in self.ops:
            e = by.setdefault(o.name, {"flops": 0, "bytes": 0})
            e["flops"] += o.flops
            e["bytes"] += o.bytes
        return {"flops": self.flops, "bytes": self.bytes, "ms": self.ms, "ops": by,
                **self.details}


def attention_pairs(new: int, past: int, *, causal_skip: bool) -> int:
    """(query, key) pairs computed: t S dense, or t p + t (t + 1) / 2 causal pairs only."""
    if planted(ATTENTION_LINEAR_IN_KEYS):  # planted bug: one key per query
        return new
    keys = past + new
    return new * past + new * (new + 1) // 2 if causal_skip else new * keys


def attention_bytes_elements(new: int, past: int, dk: int, dv: int, *, heads: int, kv_heads: int,
                             attention: str, block_q: int = 1, causal_skip: bool = False) -> int:
    """Slow-memory elements of one (batch) attention over H query heads (module docstring)."""
    keys = past + new
    share = kv_heads / heads  # each K/V group is read once for its H / H_kv query heads
    if attention == "standard":
        per_head = new * dk + share * keys * (dk + dv) + 4 * new * keys + new * dv
    else:
        visited = 0
        for i0 in range(0, new, block_q):
            i1 = min(i0 + block_q, new)
            visited += (past + i1) if causal_skip else keys
        per_head = new * dk + share * visited * (dk + dv) + new * dv + new
    return math.ceil(heads * per_head)


def forward_cost(shape: ModelShape, hw: Hardware, *, new: int, past: int = 0, batch: int = 1,
                 attention: str = "flash", causal_skip: bool | None = None,
                 logits: str = "last", dtype_bytes: int | None = None, efficiency: float = 1.0,
                 overhead_s: float = 0.0) -> Cost:
    """Roofline cost of one forward of ``new`` tokens after ``past`` cached ones (module
    docstring). ``causal_skip`` defaults to True for flash and False for standard attention;
    ``logits`` selects the unembedded tokens ("all", "last", "none"); ``dtype_bytes`` defaults
    to the hardware's."""
    _int("new", new)
    _int("past", past, low=0)
    _int("batch", batch)
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
    if logits not in LOGITS:
        raise ValueError(f"logits must be one of {LOGITS}, got {logits!r}")
    w = hw.dtype_bytes if dtype_bytes is None else _int("dtype_bytes", dtype_bytes)
    _pos("efficiency", efficiency, high=1.0)
    if isinstance(overhead_s, bool) or not isinstance(overhead_s, int | float) or not (
            math.isfinite(overhead_s) and overhead_s >= 0):
        raise ValueError(f"overhead_s must be a finite number >= 0, got {overhead_s!r}")
    skip = (attention == "flash") if causal_skip is None else bool(causal_skip)
    s, L, B, t = shape, shape.layers, batch, new
    d, dk, h, hkv, ff, m = s.hidden, s.dk, s.heads, s.kv, s.ff, s.matrices
    proj = projection_flops(B, t, d, h, dk, kv_heads=hkv)
    out_f = B * 2 * t * h * dk * d
    qkv_f = proj - out_f
    pairs = attention_pairs(t, past, causal_skip=skip)
    attn_f = B * h * 2 * pairs * (dk + dk)
    if not skip and not planted(ATTENTION_LINEAR_IN_KEYS) and attn_f != attention_product_flops(
            B, t, h, dk, key_len=past + t):  # the pair count agrees with attention_flops.py
        raise RuntimeError("attention FLOPs disagree with theory.attention_flops")
    block_q = 1
    if attention == "flash":
        block_q = max(1, (hw.sram_bytes // w) // (5 * dk))  # io_model.tile_sizes_for_sram
    attn_b = B * attention_bytes_elements(t, past, dk, dk, heads=h, kv_heads=hkv,
                                          attention=attention, block_q=block_q, causal_skip=skip)
    per_layer = [
        Op("qkv", qkv_f, w * (d * dk * (h + 2 * hkv) + B * t * d + B * t * dk * (h + 2 * hkv))),
        Op("attention", attn_f, w * attn_b),
        Op("out", out_f, w * (h * dk * d + B * t * h * dk + B * t * d)),
        Op("mlp_up", 2 * (m - 1) * B * t * d * ff,
           w * ((m - 1) * d * ff + B * t * d + (m - 1) * B * t * ff)),
        Op("mlp_down", 2 * B * t * ff * d, w * (ff * d + B * t * ff + B * t * d)),
    ]
    ops = [replace(o, flops=L * o.flops, bytes=L * o.bytes, count=L) for o in per_layer]
    t_logits = {"all": t, "last": 1, "none": 0}[logits] if s.vocab else 0
    if t_logits:
        ops.append(Op("unembed", 2 * B * t_logits * d * s.vocab,
                      w * (s.vocab * d + B * t_logits * d + B * t_logits * s.vocab)))
    seconds = sum(o.seconds(hw, efficiency, overhead_s) for o in ops)
    return Cost(sum(o.flops for o in ops), sum(o.bytes for o in ops), seconds, tuple(ops),
                {"new": new, "past": past, "attention": attention, "causal_skip": skip,
                 "block_q": block_q})


def prefill_cost(shape: ModelShape, hw: Hardware, tokens: int, **kw: Any) -> Cost:
    """A forward of ``tokens`` tokens from an empty cache (the full recompute)."""
    return forward_cost(shape, hw, new=tokens, past=0, **kw)


def decode_cost(shape: ModelShape, hw: Hardware, past: int, **kw: Any) -> Cost:
    """One incremental step: 1 new token after ``past`` cached ones (reads the whole cache)."""
    return forward_cost(shape, hw, new=1, past=past, **kw)


def autoregressive_chunk_cost(shape: ModelShape, hw: Hardware, *, prefix: int, action_dims: int,
                              chunk: int = 1, include_prefill: bool = True,
                              **kw: Any) -> Cost:
    """An autoregressive action decoder: prefill the prefix (unless cached), then one cached
    decode step per action token, ``action_dims x chunk`` of them (RT-2 / OpenVLA)."""
    _int("prefix", prefix)
    steps = _int("action_dims", action_dims) * _int("chunk", chunk)
    total = prefill_cost(shape, hw, prefix, **kw) if include_prefill else Cost(0, 0, 0.0)
    for i in range(steps):
        total = total + decode_cost(shape, hw, prefix + i, **kw)
    return total


def flow_chunk_cost(expert: ModelShape, hw: Hardware, *, prefix: int, chunk: int, steps: int,
                    **kw: Any) -> Cost:
    """K denoising / flow-matching steps of an action expert: each a forward of ``chunk`` tokens
    whose attention also reads the cached prefix keys (pi0: a 300M expert, 10 Euler steps over a
    50-action chunk). The prefix's own forward is not included (it is computed once per
    observation: add :func:`prefill_cost` of the backbone)."""
    kw.setdefault("logits", "none")
    one = forward_cost(expert, hw, new=_int("chunk", chunk), past=_int("prefix", prefix, low=0),
                       causal_skip=False, **kw)
    return one.times(_int("steps", steps))


def largest_fitting(cost_of: Callable[[int], float], budget_s: float, *, low: int = 1,
                    high: int = 1 << 24) -> int | None:
    """The largest integer x in [low, high] with ``cost_of(x) <= budget_s`` (seconds), by
    bisection; ``cost_of`` must be non-decreasing. None when even ``low`` does not fit."""
    _pos("budget_s", budget_s)
    _int("low", low)
    _int("high", high)
    if high < low:
        raise ValueError(f"high must be >= low = {low}, got {high}")
    if cost_of(low) > budget_s:
        return None
    if cost_of(high) <= budget_s:
        return high
    lo, hi = low, high  # cost(lo) fits, cost(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost_of(mid) <= budget_s:
            lo = mid
        else:
            hi = mid
    return lo


def max_context(shape: ModelShape, hw: Hardware, budget_s: float, *, mode: str = "prefill",
                **kw: Any) -> int | None:
    """Largest context n whose prefill (``mode="prefill"``) or cached decode step (``"decode"``,
    a cache of n tokens) fits ``budget_s`` seconds (000:396: 20 ms at 50 Hz)."""
    if mode == "prefill":
        return largest_fitting(lambda n: prefill_cost(shape, hw, n, **kw).seconds, budget_s)
    if mode == "decode":
        return largest_fitting(lambda n: decode_cost(shape, hw, n, **kw).seconds, budget_s)
    raise ValueError(f"mode must be 'prefill' or 'decode', got {mode!r}")


def max_layers(shape: ModelShape, hw: Hardware, budget_s: float, *, tokens: int,
               mode: str = "prefill", **kw: Any) -> int | None:
    """Largest depth L (other sizes fixed) whose prefill of ``tokens`` / decode step after
    ``tokens`` fits the budget."""
    _int("tokens", tokens)
    if mode not in ("prefill", "decode"):
        raise ValueError(f"mode must be 'prefill' or 'decode', got {mode!r}")

    def cost(layers: int) -> float:
        s = replace(shape, layers=layers)
        return (prefill_cost(s, hw, tokens, **kw) if mode == "prefill"
                else decode_cost(s, hw, tokens, **kw)).seconds

    return largest_fitting(cost, budget_s, high=1 << 16)
