"""Which inputs does a trained VLA policy use? (issue 32: "the instruction is used")

    python tools/vla_input_use.py --policy my_vla/ [--episodes 400] [--seed 123]

Prints one JSON object: the policy's flow-matching loss on a batch of 512 fresh expert
demonstration steps of VLAPush (train split), and the same loss with the camera image, the state
or the instruction permuted across the batch
(:func:`transformer_math.robotics.vla_training.input_ablation`). An input the policy uses raises
the loss when shuffled; one it ignores leaves it where it was. Session 51 (docs/vla.md): with the
linear patch embedding the image was ignored; with the conv stem the image and the state are
used and the instruction is not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", required=True, help="a folder written by tmath train vla")
    parser.add_argument("--episodes", type=int, default=400, help="fresh demonstrations")
    parser.add_argument("--seed", type=int, default=123, help="seed of the demonstrations")
    args = parser.parse_args(argv)
    from transformer_math.robotics.policies.base import load_policy
    from transformer_math.robotics.policies.vla import VLAPolicy
    from transformer_math.robotics.vla_training import input_ablation

    try:
        policy = load_policy(Path(args.policy))
    except (ValueError, OSError) as exc:
        print(f"error: --policy: cannot load {args.policy!r}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(policy, VLAPolicy):
        print(f"error: --policy: {args.policy!r} is not a 'vla' policy", file=sys.stderr)
        return 2
    try:
        out = input_ablation(policy, episodes=args.episodes, seed=args.seed)
    except (ValueError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"policy": args.policy, **{k: round(v, 4) for k, v in out.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
