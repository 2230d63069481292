"""Eager against ``torch.compile`` for ``MultiHeadAttention``, as side-by-side ratios (issue 15).

    python benchmarks/compile_attention.py                  # inductor, default sizes
    python benchmarks/compile_attention.py --backend eager  # graph capture only (fast)
    python benchmarks/compile_attention.py --seq 64 --width 128 --repeats 10

Each line is ``measure_ratio`` (``transformer_math.bench.harness``): baseline = the eager module,
candidate = the compiled one, interleaved calls, median of paired ratios t_compiled / t_eager
(< 1: compiling pays). Compilation and the first (recompiling) calls are warm-up and not timed;
the one-off compile time is printed beside it. Cases:

- ``prefill``: a causal forward over ``--seq`` tokens (no cache).
- ``decode``: one token against a KV cache of ``--seq`` tokens (the cache is rebuilt untimed
  for every call so the shapes do not grow; a growing cache recompiles, see the report).

Not a test: nothing here asserts a time. ``torch.set_num_threads`` is left as it is unless
``--threads`` is given.
"""

from __future__ import annotations

import argparse
import time

import torch

from transformer_math.bench.harness import Benchmark, measure_ratio
from transformer_math.nn.attention import KVCache, MultiHeadAttention


def _cases(args: argparse.Namespace) -> list[tuple[str, object, object]]:
    torch.manual_seed(0)
    m = MultiHeadAttention(args.width, args.heads, backend=args.attention).eval()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(args.batch, args.seq, args.width, generator=gen)
    step = torch.randn(args.batch, 1, args.width, generator=gen)
    with torch.no_grad():
        prefix = KVCache()
        m(x, kv_cache=prefix, is_causal=True)

    def prefill(fn):
        return lambda: fn(x, None)

    def decode(fn):
        def run():
            cache = KVCache(prefix.key, prefix.value)
            return fn(step, cache)
        return run

    def eager(inp, cache):
        return m(inp, kv_cache=cache, is_causal=True)

    compiled = torch.compile(eager, fullgraph=True, backend=args.backend, dynamic=False)
    return [("prefill", prefill(eager), prefill(compiled)),
            ("decode", decode(eager), decode(compiled))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="inductor", help="torch.compile backend")
    parser.add_argument("--attention", default="sdpa", help="attention backend of the module")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: left as it is)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, compile backend "
          f"{args.backend}, attention {args.attention}, B={args.batch} T={args.seq} "
          f"d={args.width} H={args.heads}")
    with torch.no_grad():
        for name, base, cand in _cases(args):
            start = time.perf_counter()
            cand()  # compiles
            compile_s = time.perf_counter() - start
            bench = Benchmark(name=f"compile.{name}", description="", baseline=base,
                              candidate=cand, repeats=args.repeats, warmup=3)
            r = measure_ratio(bench)
            eager_ms, compiled_ms = r.baseline_median_s * 1e3, r.candidate_median_s * 1e3
            print(f"{name:8s} compiled/eager = {r.ratio:.3f}  (eager {eager_ms:.3f} ms, "
                  f"compiled {compiled_ms:.3f} ms, compile {compile_s:.1f} s)")


if __name__ == "__main__":
    main()
