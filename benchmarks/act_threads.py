"""ACT training step time against torch's intra-op thread count (issue 38.5).

On a small shared machine torch's default (one intra-op thread per core) makes every matrix
product wait for all its threads, and a thread that waits for a core another process holds
stalls the step: issue 38 measured 1463 vs 149 ms per ACT step on a loaded 2-core machine. This
script times the ACT training step of ``robotics_multimodal`` at size tiny (dim 32, 1 encoder
and 1 decoder layer, chunk 10, batch 64; ``robotics.training.train_policy``'s AdamW step)
under ``torch_threads(n)`` for each ``n`` of ``--threads``, the counts interleaved round by
round so that a burst of load from other processes falls on all of them, and prints the median
milliseconds per step of each, with the load average before and after.

``--busy K`` starts K processes that spin on a core for the duration (a stand-in for the other
users of a shared machine); they are stopped at the end.

    python benchmarks/act_threads.py --threads 1,2 --rounds 5 --steps 20
    python benchmarks/act_threads.py --threads 1,2 --busy 1

A measurement, not a test: its numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time


def _spin(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    while not stop.is_set():
        pass


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and count")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes to start")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    if args.rounds < 1 or args.steps < 1 or any(t < 1 for t in counts) or args.busy < 0:
        parser.error("--rounds, --steps and every --threads count must be >= 1, --busy >= 0")

    import torch

    from transformer_math.diagnostics.timing import torch_threads
    from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
    from transformer_math.robotics.training import build_seeded, chunk_sampler, train_policy

    g = torch.Generator().manual_seed(0)
    obs = torch.randn(200, 60, 2, generator=g)
    act = torch.randn(200, 60, 2, generator=g)
    cfg = ACTConfig(2, 2, 10, dim=32, num_heads=4, encoder_layers=1, decoder_layers=1,
                    latent_sampling="sample_per_episode")
    policy = build_seeded(lambda: ACTPolicy(cfg), 0)
    policy.fit_normalization(obs, act)
    sampler = chunk_sampler(obs, act, 10, 64)

    def steps(n: int) -> float:
        start = time.perf_counter()
        train_policy(policy, sampler, steps=n, lr=1e-3, generator=torch.Generator().manual_seed(1))
        return (time.perf_counter() - start) / n * 1e3

    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
                for _ in range(args.busy)]
    for p in spinners:
        p.start()
    before = _load()
    samples: dict[int, list[float]] = {t: [] for t in counts}
    try:
        for t in counts:  # warm-up: first-call allocations, thread pool start
            with torch_threads(t):
                steps(2)
        for _ in range(args.rounds):
            for t in counts:
                with torch_threads(t):
                    samples[t].append(steps(args.steps))
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    result = {
        "cores": os.cpu_count(), "busy_processes": args.busy, "default_threads":
        torch.get_num_threads(), "load_before": before, "load_after": _load(),
        "rounds": args.rounds, "steps": args.steps,
        "ms_per_step": {str(t): round(statistics.median(s), 2) for t, s in samples.items()},
        "ms_per_step_all": {str(t): [round(x, 1) for x in s] for t, s in samples.items()},
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['cores']} cores, {args.busy} spinning process(es), torch default "
          f"{result['default_threads']} threads; load average {before} -> {result['load_after']}")
    for t, s in samples.items():
        print(f"  {t} thread(s): median {statistics.median(s):.1f} ms/step over {args.rounds} "
              f"rounds of {args.steps} steps (all: {[round(x, 1) for x in s]})")


if __name__ == "__main__":
    main()
