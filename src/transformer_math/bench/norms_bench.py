"""RMSNorm vs LayerNorm: how much compute does dropping the mean save? (000:1122, 000:1511)

The seed says RMSNorm "saves about half of the normalisation compute" (约一半的归一化计算).
Zhang & Sennrich 2019 (NeurIPS, "Root Mean Square Layer Normalization", arXiv 1910.07467) report
whole-model speed-ups of 7 % to 64 % depending on the model and implementation, not a fixed half
of the norm. These benchmarks measure it as ratios side by side (``tmath bench -k norms``); they
are not timed tests, and the seed's 0.5 is printed as the reference, not a pass/fail target:

- ``norms.rms-vs-layer.functional``: the project's ``functional.norms`` (LayerNorm baseline,
  RMSNorm candidate), (4096, 1024) float32 activations, with gamma (and beta for LayerNorm);
- ``norms.rms-vs-layer.torch``: the same pair through PyTorch's fused kernels
  (``torch.nn.functional.layer_norm`` vs ``torch.nn.functional.rms_norm``);
- ``norms.rms-vs-layer.train-step``: one AdamW step of the project's 4-layer decoder-only LM
  (d 128, 8 x 256 tokens) with ``norm="layernorm"`` (baseline) and ``norm="rmsnorm"``
  (candidate): the share of the whole step, which is what a model-level speed-up measures.

The ratio is candidate / baseline time: 0.5 would be the seed's "half", 0.93 .. 0.36 the range of
Zhang & Sennrich's model-level speed-ups (7 % .. 64 % fewer seconds).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bench.harness import Benchmark, benchmark
from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

TOKENS, WIDTH = 4096, 1024
SEED_RATIO = 0.5  # 000:1122 / 000:1511: "about half of the normalisation compute"


def _activations() -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(TOKENS, WIDTH, generator=g)
    gamma = 1 + 0.1 * torch.randn(WIDTH, generator=g)
    beta = 0.1 * torch.randn(WIDTH, generator=g)
    return x, gamma, beta


@benchmark("norms.rms-vs-layer.functional")
def rms_vs_layer_functional() -> Benchmark:
    x, gamma, beta = _activations()
    return Benchmark(
        name="norms.rms-vs-layer.functional",
        description=f"functional.norms rms_norm vs layer_norm, ({TOKENS}, {WIDTH}) float32; "
        f"seed (000:1122) says ~{SEED_RATIO}",
        baseline=lambda: layer_norm(x, gamma, beta),
        candidate=lambda: rms_norm(x, gamma),
        repeats=15,
        warmup=3,
    )


@benchmark("norms.rms-vs-layer.torch")
def rms_vs_layer_torch() -> Benchmark:
    x, gamma, beta = _activations()
    return Benchmark(
        name="norms.rms-vs-layer.torch",
        description=f"F.rms_norm vs F.layer_norm (fused kernels), ({TOKENS}, {WIDTH}) float32; "
        f"seed (000:1122) says ~{SEED_RATIO}",
        baseline=lambda: F.layer_norm(x, (WIDTH,), gamma, beta, 1e-5),
        candidate=lambda: F.rms_norm(x, (WIDTH,), gamma, 1e-6),
        repeats=15,
        warmup=3,
    )


LM_BATCH, LM_SEQ = 8, 256


@benchmark("norms.rms-vs-layer.train-step")
def rms_vs_layer_train_step() -> Benchmark:
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 256, (LM_BATCH, LM_SEQ + 1), generator=g)

    def make(norm: str) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        config = TransformerConfig(vocab_size=256, max_seq_len=LM_SEQ, hidden_size=128,
                                   num_layers=4, num_heads=4, norm=norm,
                                   attention_backend="sdpa")
        model = build_transformer(config, 0)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

    pairs = {n: make(n) for n in ("layernorm", "rmsnorm")}

    def step(norm: str) -> float:
        model, opt = pairs[norm]
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach().item()

    return Benchmark(
        name="norms.rms-vs-layer.train-step",
        description=f"LM training step (4 layers, d 128, {LM_BATCH} x {LM_SEQ} tokens), rmsnorm "
        "vs layernorm; Zhang & Sennrich 2019 report 7-64 % model-level speed-ups",
        baseline=lambda: step("layernorm"),
        candidate=lambda: step("rmsnorm"),
        repeats=5,
        warmup=1,
    )
