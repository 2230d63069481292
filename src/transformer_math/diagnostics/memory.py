"""Peak memory and time of one attention call, measured in a fresh subprocess.

Method (chosen for robustness on CPU, where torch has no allocator statistics): the measurement
runs in a child Python process so that earlier allocations of the parent cannot hide or inflate
it. The child builds q, k, v, runs a small warm-up call (so lazy initialisation is not counted),
then resets the kernel's resident-set high-water mark (Linux: writing "5" to
/proc/self/clear_refs), records the current resident set (VmRSS), runs the attention call once and
reads the new high-water mark (VmHWM). ``peak_bytes = VmHWM - VmRSS_before`` is the extra memory the
call touched at its peak, including its output (B H T D_v elements). Large buffers are mmap-ed by
the C allocator and returned on free, so the n x n matrices of the reference path show up in full;
small tiles may be served from already resident heap pages, which can only lower the tiled figure.
The granularity is a page (4 KiB). When clear_refs is not available the child falls back to
getrusage(RUSAGE_SELF).ru_maxrss deltas (``method = "ru_maxrss"``), which is sound only when the
call's peak exceeds the process's earlier peak (true for the n x n reference at large n).

This module holds the measurement functions the architecture benchmark uses (tiled vs reference
vs SDPA at n = 1k, 4k, 16k); ``python -m transformer_math.diagnostics.memory --help`` runs one.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypeVar

T = TypeVar("T")

MEMORY_BACKENDS = ("reference", "sdpa", "tiled")


@dataclass(frozen=True)
class MemoryMeasurement:
    """Peak extra resident memory (bytes) and wall time (s) of one attention call."""

    backend: str
    seq_len: int
    head_dim: int
    batch: int
    heads: int
    block_q: int | None
    block_k: int | None
    is_causal: bool
    peak_bytes: int
    seconds: float
    output_bytes: int
    method: str

    @property
    def matrix_bytes(self) -> int:
        """Bytes of one float32 (B, H, n, n) matrix: what 'never materialised' is compared to."""
        return self.batch * self.heads * self.seq_len * self.seq_len * 4

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "matrix_bytes": self.matrix_bytes}


def _read_status(field: str) -> int:
    with open("/proc/self/status") as fh:
        match = re.search(rf"^{field}:\s+(\d+)\s+kB", fh.read(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"/proc/self/status has no {field}")
    return int(match.group(1)) * 1024


def _release_free_heap() -> None:
    """glibc malloc_trim(0): give free heap pages back to the kernel (no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_memory_of(fn: Callable[[], T]) -> tuple[T, int, str]:
    """Run ``fn()`` in this process; return (its result, extra peak resident bytes, method).

    In-process variant of the measurement above. Free heap pages are first returned to the
    kernel (glibc ``malloc_trim(0)``), so that the call's buffers must fault in fresh pages and
    show up in the high-water mark. Allocations above glibc's largest mmap threshold (32 MiB) are
    mmap-ed and returned on free anyway, so an n x n float32 matrix with n >= 4096 (64 MiB) is
    always seen in full. Needs /proc/self/clear_refs (Linux); raises RuntimeError otherwise.
    """
    _release_free_heap()
    if not _reset_peak():
        raise RuntimeError(
            "cannot reset the resident-set peak (/proc/self/clear_refs not writable)"
        )
    before = _read_status("VmRSS")
    result = fn()
    after = _read_status("VmHWM")
    return result, max(0, after - before), "clear_refs+VmHWM"


def _child(args: argparse.Namespace) -> dict[str, object]:
    from transformer_math.diagnostics.timing import torch_threads

    with torch_threads(1):  # one thread while measuring; the process's count restored after
        return _measure_in_child(args)


def _measure_in_child(args: argparse.Namespace) -> dict[str, object]:
    import torch

    from transformer_math.functional.attention import scaled_dot_product_attention
    from transformer_math.functional.tiled_attention import tiled_attention

    g = torch.Generator().manual_seed(args.seed)
    shape = (args.batch, args.heads, args.seq_len, args.head_dim)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if args.backend == "tiled":
            return tiled_attention(
                q, k, v, is_causal=args.causal, block_q=args.block_q, block_k=args.block_k
            )
        return scaled_dot_product_attention(
            q, k, v, is_causal=args.causal, backend=args.backend
        ).output

    with torch.no_grad():
        small = min(args.seq_len, 64)
        call(q[:, :, :small], k[:, :, :small], v[:, :, :small])  # warm-up
        use_clear_refs = _reset_peak()
        before = (
            _read_status("VmRSS")
            if use_clear_refs
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        )
        start = time.perf_counter()
        out = call(q, k, v)
        seconds = time.perf_counter() - start
        after = (
            _read_status("VmHWM")
            if use_clear_refs
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        )
    return {
        "peak_bytes": max(0, after - before),
        "seconds": seconds,
        "output_bytes": out.numel() * out.element_size(),
        "method": "clear_refs+VmHWM" if use_clear_refs else "ru_maxrss",
    }


def measure_attention_memory(
    backend: str,
    seq_len: int,
    *,
    head_dim: int = 64,
    batch: int = 1,
    heads: int = 1,
    block_q: int = 128,
    block_k: int = 128,
    is_causal: bool = False,
    seed: int = 0,
    timeout_s: float = 600.0,
) -> MemoryMeasurement:
    """Run one attention call of ``backend`` in a subprocess and return its peak and time."""
    if backend not in MEMORY_BACKENDS:
        raise ValueError(f"backend must be one of {MEMORY_BACKENDS}, got {backend!r}")
    for name, value in (
        ("seq_len", seq_len),
        ("head_dim", head_dim),
        ("batch", batch),
        ("heads", heads),
        ("block_q", block_q),
        ("block_k", block_k),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    cmd = [
        sys.executable,
        "-m",
        "transformer_math.diagnostics.memory",
        "--backend",
        backend,
        "--seq-len",
        str(seq_len),
        "--head-dim",
        str(head_dim),
        "--batch",
        str(batch),
        "--heads",
        str(heads),
        "--block-q",
        str(block_q),
        "--block-k",
        str(block_k),
        "--seed",
        str(seed),
    ] + (["--causal"] if is_causal else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"memory measurement failed ({' '.join(cmd[3:])}): {proc.stderr[-2000:]}"
        )
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    tiled = backend == "tiled"
    return MemoryMeasurement(
        backend=backend,
        seq_len=seq_len,
        head_dim=head_dim,
        batch=batch,
        heads=heads,
        block_q=block_q if tiled else None,
        block_k=block_k if tiled else None,
        is_causal=is_causal,
        peak_bytes=int(data["peak_bytes"]),
        seconds=float(data["seconds"]),
        output_bytes=int(data["output_bytes"]),
        method=str(data["method"]),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Peak memory of one attention call (child).")
    parser.add_argument("--backend", choices=MEMORY_BACKENDS, required=True)
    parser.add_argument("--seq-len", type=int, required=True)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--block-q", type=int, default=128)
    parser.add_argument("--block-k", type=int, default=128)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    print(json.dumps(_child(parser.parse_args(argv))))


if __name__ == "__main__":
    main()
