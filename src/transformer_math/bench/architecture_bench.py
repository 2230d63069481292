"""Architecture benchmarks: tiled attention vs the reference and SDPA paths; LM training step.

Ratios (``tmath bench architecture``), measured side by side by the harness:
- ``architecture.tiled-vs-reference.n1k`` / ``.n4k``: reference (explicit n x n matrices) is the
  baseline, the tiled online-softmax backend the candidate; (B, H, n, d) = (1, 4, n, 64) float32,
  causal, forward only.
- ``architecture.tiled-vs-sdpa.n1k`` / ``.n4k``: PyTorch's fused SDPA kernel as the baseline.
- ``architecture.lm-train-step``: one AdamW step of a 4-layer decoder-only LM (d 128, 4 heads,
  batch 8 x 256 tokens), SDPA backend as baseline and tiled backend as candidate; tokens/s of each
  is tokens / median time.

Peak memory vs n (1k, 4k, 16k) is not a timing ratio: :func:`attention_memory_table` measures it
with ``diagnostics.memory.measure_attention_memory`` (one fresh subprocess per point, see that
module for the method). ``python -m transformer_math.bench.architecture_bench`` prints it.
"""

from __future__ import annotations

import json
import sys

import torch
from torch import Tensor

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.diagnostics.memory import MemoryMeasurement, measure_attention_memory
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.tiled_attention import tiled_attention
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer, build_transformer

HEADS, HEAD_DIM = 4, 64
MEMORY_SIZES = (1024, 4096, 16384)


def _qkv(n: int) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, n, HEAD_DIM, generator=g) for _ in range(3))
    return q, k, v


def _attention_pair(name: str, baseline_backend: str, n: int) -> Benchmark:
    q, k, v = _qkv(n)

    @torch.no_grad()
    def baseline() -> Tensor:
        return scaled_dot_product_attention(
            q, k, v, is_causal=True, backend=baseline_backend
        ).output

    @torch.no_grad()
    def candidate() -> Tensor:
        return tiled_attention(q, k, v, is_causal=True)

    return Benchmark(
        name=name,
        description=f"tiled (128 x 128 tiles) vs {baseline_backend}, causal, "
        f"(B, H, n, d) = (1, {HEADS}, {n}, {HEAD_DIM}) float32",
        baseline=baseline,
        candidate=candidate,
        repeats=5,
        warmup=1,
    )


@benchmark("architecture.tiled-vs-reference.n1k")
def tiled_vs_reference_1k() -> Benchmark:
    return _attention_pair("architecture.tiled-vs-reference.n1k", "reference", 1024)


@benchmark("architecture.tiled-vs-reference.n4k")
def tiled_vs_reference_4k() -> Benchmark:
    return _attention_pair("architecture.tiled-vs-reference.n4k", "reference", 4096)


@benchmark("architecture.tiled-vs-sdpa.n1k")
def tiled_vs_sdpa_1k() -> Benchmark:
    return _attention_pair("architecture.tiled-vs-sdpa.n1k", "sdpa", 1024)


@benchmark("architecture.tiled-vs-sdpa.n4k")
def tiled_vs_sdpa_4k() -> Benchmark:
    return _attention_pair("architecture.tiled-vs-sdpa.n4k", "sdpa", 4096)


LM_BATCH, LM_SEQ = 8, 256


def _train_step(backend: str) -> tuple[Transformer, torch.optim.Optimizer]:
    # a GPT-2-like preset: learned positions, pre-LN, GELU, N(0, 0.02^2) token table
    config = TransformerConfig(
        vocab_size=256,
        max_seq_len=LM_SEQ,
        hidden_size=128,
        num_layers=4,
        num_heads=4,
        attention_backend=backend,
        embedding_init_std=0.02,
    )
    model = build_transformer(config, 0)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


@benchmark("architecture.lm-train-step")
def lm_train_step() -> Benchmark:
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 256, (LM_BATCH, LM_SEQ + 1), generator=g)
    pairs = {b: _train_step(b) for b in ("sdpa", "tiled")}

    def step(backend: str) -> float:
        model, opt = pairs[backend]
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 256), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach().item()

    return Benchmark(
        name="architecture.lm-train-step",
        description=f"decoder-only LM training step (4 layers, d 128, {LM_BATCH} x {LM_SEQ} "
        f"tokens): tiled backend vs sdpa; tokens/s = {LM_BATCH * LM_SEQ} / median time",
        baseline=lambda: step("sdpa"),
        candidate=lambda: step("tiled"),
        repeats=5,
        warmup=1,
    )


def attention_memory_table(
    sizes: tuple[int, ...] = MEMORY_SIZES,
    backends: tuple[str, ...] = ("reference", "sdpa", "tiled"),
) -> list[MemoryMeasurement]:
    """Peak extra memory and time of one causal forward call per (backend, n), (1, 1, n, 64)."""
    return [measure_attention_memory(b, n, is_causal=True) for n in sizes for b in backends]


def main(argv: list[str] | None = None) -> None:
    """Print the memory table as JSON lines (``--sizes 1024 4096 16384``)."""
    args = sys.argv[1:] if argv is None else argv
    sizes = (
        tuple(int(a) for a in args[args.index("--sizes") + 1 :])
        if "--sizes" in args
        else MEMORY_SIZES
    )
    for m in attention_memory_table(sizes):
        print(json.dumps(m.to_json()), flush=True)


if __name__ == "__main__":
    main()
