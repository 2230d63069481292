"""VLA benchmark: the flow sampler with the prefix's keys/values cached vs recomputed each step.

- ``vla.prefix-cache-vs-recompute``: one action chunk (B = 1, one control step) of the
  ``default`` VLA policy (:mod:`transformer_math.robotics.policies.vla`, random weights: speed
  does not depend on them) sampled with K = 10 Euler steps; baseline = the whole sequence
  (prefix P tokens + suffix 1 + k tokens) through the stack at every step, candidate = the prefix
  encoded once and only the suffix run K times against its cached keys/values. Both give the
  same actions (``tests/robotics/test_vla_policy.py``, claim ``robotics.vla-prefix-cache``).

Three predictions of the ratio t_cached / t_recomputed, none fitted to the timing:

- token count (:func:`cache_ratio_model`): the matrix work linear in tokens,
  (P + K (1 + k)) / (K (P + 1 + k)) (0.158 for P = 72, k = 4, K = 10);
- roofline (:func:`roofline_ratio`): the model of ``tmath latency`` (:mod:`..theory.latency`,
  per operator max(FLOPs / peak, bytes / bandwidth), weights read once per forward, dense
  bidirectional attention) for the same shape on this CPU (``cpu-here``, measured now):
  cached = prefix forward + K suffix forwards after P cached keys, recomputed = K (prefix
  forward + suffix forward) (expert: two stacks, each its own weights) or K forwards of
  P + 1 + k tokens (shared trunk);
- operator count (:func:`op_count_ratio`): the ATen operators each path dispatches
  (:func:`count_ops`), (n_prefix + K n_step_cached) / (K n_step_recomputed): what the time
  would be if every operator cost the same fixed overhead whatever its size.

At these widths (d = 64, 2 layers, B = 1) a step is a few hundred operators on tensors of a few
thousand elements; each costs a Python and dispatch overhead of microseconds, far above its
arithmetic (:func:`time_breakdown` measures it: the cached suffix step has 1/15 of the tokens of
a recomputing step but takes more than half its time). So the measured ratio follows the
operator count, not the tokens or the roofline; ``python -m transformer_math.bench.vla_bench``
prints all of it (docs/vla.md, "Benchmark"). The target 0.75 is what the cache must at least
give on a CPU.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

from transformer_math.bench.harness import Benchmark, benchmark, run_benchmark
from transformer_math.robotics.policies.vla import PrefixCacheBox, VLAConfig, VLAPolicy
from transformer_math.robotics.training import build_seeded
from transformer_math.robotics.vla_training import CAMERA_KEY, vla_config
from transformer_math.theory import latency as lm

FLOW_STEPS = 10
TARGET_RATIO = 0.75
ATTENTION = "standard"  # a boolean-masked SDPA: every (query, key) pair is computed


def cache_ratio_model(prefix_len: int, chunk_size: int, steps: int) -> float:
    """Tokens through the stack with the cache over tokens without it (module docstring)."""
    suffix = 1 + chunk_size
    return (prefix_len + steps * suffix) / (steps * (prefix_len + suffix))


def stack_shape(config: VLAConfig) -> lm.ModelShape:
    """The latency model's shape of one stack (trunk or expert): pre-LN GELU MLP 4d, no head."""
    return lm.ModelShape(hidden=config.dim, layers=config.num_layers, heads=config.num_heads)


def roofline_chunk_seconds(config: VLAConfig, hw: lm.Hardware, steps: int, *,
                           cached: bool) -> float:
    """Roofline time of one chunk of ``steps`` flow steps (module docstring), float32."""
    shape, p, t = stack_shape(config), config.prefix_len, config.suffix_len
    kw: dict[str, Any] = {"attention": ATTENTION, "causal_skip": False, "logits": "none",
                          "dtype_bytes": 4}
    prefix = lm.forward_cost(shape, hw, new=p, **kw).seconds
    suffix = lm.forward_cost(shape, hw, new=t, past=p, **kw).seconds
    if cached:
        return prefix + steps * suffix
    if config.action_expert:  # the trunk over the prefix and the expert over the suffix
        return steps * (prefix + suffix)
    return steps * lm.forward_cost(shape, hw, new=p + t, **kw).seconds


def roofline_parts(config: VLAConfig, hw: lm.Hardware) -> dict[str, float]:
    """Roofline seconds of the prefix forward, of one cached step and of one recomputing step
    (the names of :func:`time_breakdown`'s parts)."""
    return {"prefix (tokens + encode, once)": roofline_chunk_seconds(config, hw, 0, cached=True),
            "cached flow step": (roofline_chunk_seconds(config, hw, 1, cached=True)
                                 - roofline_chunk_seconds(config, hw, 0, cached=True)),
            "recomputing flow step": roofline_chunk_seconds(config, hw, 1, cached=False)}


def roofline_ratio(config: VLAConfig, hw: lm.Hardware, steps: int = FLOW_STEPS) -> float:
    """Roofline t_cached / t_recomputed (module docstring)."""
    return (roofline_chunk_seconds(config, hw, steps, cached=True)
            / roofline_chunk_seconds(config, hw, steps, cached=False))


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.count += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], object]) -> int:
    """The number of ATen operators ``fn()`` dispatches (views included: each is a call)."""
    counter = _OpCounter()
    with counter:
        fn()
    return counter.count


def _setup(config: VLAConfig | None = None) -> tuple[VLAPolicy, dict[str, Any], Tensor]:
    config = vla_config("default") if config is None else config
    policy = build_seeded(lambda: VLAPolicy(config), 0).eval()
    assert isinstance(policy, VLAPolicy)
    g = torch.Generator().manual_seed(0)
    batch = {CAMERA_KEY: torch.rand(1, 3, config.image_size, config.image_size, generator=g),
             "observation.state": torch.rand(1, 3, generator=g),
             "task": ["push the red square to the blue circle"]}
    return policy, batch, policy._state(batch)


def _parts(policy: VLAPolicy, batch: dict[str, Any], s: Tensor
           ) -> dict[str, Callable[[], object]]:
    """The pieces of one chunk: the prefix (tokens + encode), one cached and one recomputing
    flow step (suffix tokens, trunk, action head). Short calls (about a millisecond): on a
    loaded machine a long call is more often preempted while it runs, so the chunks themselves
    are timed by the benchmark, not here."""
    c = policy.config
    prefix = policy.prefix_tokens(batch, 1)
    box = PrefixCacheBox(policy.trunk.encode_prefix(prefix))
    x = torch.randn(1, c.chunk_size, c.action_dim, generator=torch.Generator().manual_seed(1))
    tau = torch.full((1,), 0.5)
    return {
        "prefix (tokens + encode, once)":
            lambda: policy.trunk.encode_prefix(policy.prefix_tokens(batch, 1)),
        "cached flow step": lambda: policy.velocity(box, s, x, tau),
        "recomputing flow step": lambda: policy.velocity(prefix, s, x, tau),
    }


def op_count_ratio(counts: dict[str, Any], steps: int = FLOW_STEPS) -> float:
    """(n_prefix + K n_cached_step) / (K n_recomputing_step) from :func:`time_breakdown`'s
    operator counts (the same formula on its median times: the ratio rebuilt from the
    pieces)."""
    return ((counts["prefix (tokens + encode, once)"] + steps * counts["cached flow step"])
            / (steps * counts["recomputing flow step"]))


@torch.no_grad()
def time_breakdown(config: VLAConfig | None = None, *, repeats: int = 21) -> dict[str, Any]:
    """Median time and ATen operator count of each piece of a chunk (:func:`_parts`), timed
    interleaved in this process (each repeat times every piece once, in turn)."""
    policy, batch, s = _setup(config)
    parts = _parts(policy, batch, s)
    for fn in parts.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(repeats):
        for name, fn in parts.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    counts = {name: count_ops(fn) for name, fn in parts.items()}
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    return {"median_s": medians, "ops": counts,
            "us_per_op": {n: 1e6 * medians[n] / counts[n] for n in parts}}


def report(*, repeats: int = 21) -> dict[str, Any]:
    """Everything the module docstring names, for the ``default`` policy at K = 10."""
    config = vla_config("default")
    hw = lm.measure_cpu_hardware()
    result = run_benchmark(prefix_cache_vs_recompute(), repeats=repeats)
    parts = time_breakdown(config, repeats=repeats)
    roof = roofline_parts(config, hw)
    a, b = "cached flow step", "recomputing flow step"
    shares = {"tokens": config.suffix_len / (config.prefix_len + config.suffix_len),
              "roofline": roof[a] / roof[b], "operators": parts["ops"][a] / parts["ops"][b],
              "time": parts["median_s"][a] / parts["median_s"][b]}
    k = config.chunk_size
    return {
        "shape": {"P": config.prefix_len, "suffix": config.suffix_len, "d": config.dim,
                  "layers": config.num_layers, "heads": config.num_heads, "K": FLOW_STEPS,
                  "action_expert": config.action_expert},
        "measured_ratio": result.ratio,
        "measured_speedup": 1.0 / result.ratio,
        "token_count_ratio": cache_ratio_model(config.prefix_len, config.chunk_size, FLOW_STEPS),
        "roofline_ratio": roofline_ratio(config, hw),
        "roofline_speedup": 1.0 / roofline_ratio(config, hw),
        "op_count_ratio": op_count_ratio(parts["ops"]),
        "pieces_ratio": op_count_ratio(parts["median_s"]),
        "actions_per_s": {"cached": k / result.candidate_median_s,
                          "recomputed": k / result.baseline_median_s},
        "chunk_ms": {"cached": 1e3 * result.candidate_median_s,
                     "recomputed": 1e3 * result.baseline_median_s},
        "roofline_chunk_ms": {
            "cached": 1e3 * roofline_chunk_seconds(config, hw, FLOW_STEPS, cached=True),
            "recomputed": 1e3 * roofline_chunk_seconds(config, hw, FLOW_STEPS, cached=False)},
        "parts": parts,
        "roofline_parts_ms": {n: 1e3 * v for n, v in roof.items()},
        "cached_step_share": shares,
        "hardware": hw.to_json(),
        "torch_threads": torch.get_num_threads(),
    }


def format_report(r: dict[str, Any]) -> str:
    """The report as lines of text."""
    sh, parts = r["shape"], r["parts"]
    lines = [
        f"VLA prefix cache, default policy: P={sh['P']} prefix + {sh['suffix']} suffix tokens, "
        f"d={sh['d']}, {sh['layers']} layers, K={sh['K']} flow steps, B=1, "
        f"{r['torch_threads']} torch thread(s)",
        f"ratio t_cached/t_recomputed: measured {r['measured_ratio']:.3f} (speed-up "
        f"{r['measured_speedup']:.2f}x); roofline (theory.latency, cpu-here) "
        f"{r['roofline_ratio']:.3f} ({r['roofline_speedup']:.2f}x); token count "
        f"{r['token_count_ratio']:.3f}; operator count {r['op_count_ratio']:.3f}; rebuilt from "
        f"the timed pieces below {r['pieces_ratio']:.3f}",
        f"actions/s at K={sh['K']}: cached {r['actions_per_s']['cached']:.0f}, recomputed "
        f"{r['actions_per_s']['recomputed']:.0f} (chunk {r['chunk_ms']['cached']:.2f} ms vs "
        f"{r['chunk_ms']['recomputed']:.2f} ms; roofline {r['roofline_chunk_ms']['cached']:.3f} "
        f"ms vs {r['roofline_chunk_ms']['recomputed']:.3f} ms)",
        "where the time goes (median ms, ATen operators, us per operator):",
    ]
    for name, t in parts["median_s"].items():
        lines.append(f"  {name:32s} {1e3 * t:8.3f} ms {parts['ops'][name]:6d} ops "
                     f"{parts['us_per_op'][name]:6.2f} us/op")
    sh_ = r["cached_step_share"]
    lines.append(
        f"a cached step against a recomputing one: {100 * sh_['tokens']:.0f} % of the tokens, "
        f"{100 * sh_['roofline']:.0f} % of the roofline time, {100 * sh_['operators']:.0f} % of "
        f"the operators, {100 * sh_['time']:.0f} % of the measured time")
    return "\n".join(lines)


@benchmark("vla.prefix-cache-vs-recompute")
def prefix_cache_vs_recompute() -> Benchmark:
    policy, batch, s = _setup()
    config = policy.config

    def baseline() -> Tensor:
        return policy.sample(batch, s, steps=FLOW_STEPS, use_cache=False)

    def candidate() -> Tensor:
        return policy.sample(batch, s, steps=FLOW_STEPS, use_cache=True)

    model = cache_ratio_model(config.prefix_len, config.chunk_size, FLOW_STEPS)
    return Benchmark(
        name="vla.prefix-cache-vs-recompute",
        description=f"VLA flow sampler, K={FLOW_STEPS}, B=1, P={config.prefix_len} prefix + "
        f"{config.suffix_len} suffix tokens, d={config.dim}, {config.num_layers} layers: prefix "
        f"K/V cached vs recomputed each step (token-count model {model:.3f}; the roofline of "
        f"theory.latency, the operator count and actions/s = {config.chunk_size} / median "
        "time: python -m transformer_math.bench.vla_bench)",
        baseline=baseline,
        candidate=candidate,
        target_ratio=TARGET_RATIO,
        repeats=9,
    )


def main(argv: list[str] | None = None) -> None:
    """Print :func:`report` (``--json``: as JSON; ``--repeats N``; ``--threads N``, default 1)."""
    import argparse

    def positive(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
        return value

    parser = argparse.ArgumentParser(prog="python -m transformer_math.bench.vla_bench",
                                     description="VLA prefix cache: measured ratio vs roofline, "
                                     "token and operator counts, actions/s at K = 10")
    parser.add_argument("--repeats", type=positive, default=21)
    parser.add_argument("--threads", type=positive, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    r = report(repeats=args.repeats)
    print(json.dumps(r, indent=1) if args.json else format_report(r))


if __name__ == "__main__":
    main()
