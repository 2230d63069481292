"""The RMSNorm vs LayerNorm benchmarks (000:1122, 000:1511) are registered and build; they are
ratios run side by side by ``tmath bench -k norms``, never timed here."""

from __future__ import annotations

import torch

from transformer_math.bench.harness import all_benchmarks, select_benchmarks

NAMES = {"norms.rms-vs-layer.functional", "norms.rms-vs-layer.torch",
         "norms.rms-vs-layer.train-step"}


def test_norm_benchmarks_are_registered() -> None:
    assert {b.name for b in all_benchmarks()} >= NAMES
    assert {b.name for b in select_benchmarks(all_benchmarks(), r"^norms\.")} == NAMES


def test_norm_op_benchmarks_build_and_compute_normalised_rows() -> None:
    for entry in select_benchmarks(all_benchmarks(), r"^norms\.rms-vs-layer\.(functional|torch)"):
        bench = entry.build()
        for fn in (bench.baseline, bench.candidate):
            out = fn()
            assert isinstance(out, torch.Tensor) and out.shape == (4096, 1024)
            assert torch.isfinite(out).all()
