"""A project ACT trained on the scripted transfer-cube expert's demonstrations, beside the expert.

    python -m transformer_math.robotics.sim.transfer_cube_act --out DIR [--demos 50]
        [--steps 3000] [--eval-episodes 50]

1. Demonstrations: for reset seeds ``TRAIN_SEED0 + i`` the closed-loop scripted expert
   (:class:`.aloha_scripted.TransferCubeExpert`) acts in ``aloha-transfer-cube``; as in ACT
   (Zhao et al. 2023, §5: "we only keep successful episodes") an episode that never reaches
   reward 4 is left out, until ``--demos`` episodes are kept. They are written as a LeRobot
   v3.0 folder (:class:`transformer_math.robotics.datasets.lerobot_writer.LeRobotWriter`) at
   ``DIR/demos``: ``observation.state`` = gym-aloha's ``agent_pos`` (14 joint positions)
   followed by its ``environment_state`` (the cube's pose, 7), the concatenation
   :func:`.community.policy_batch` hands a state-only policy, and ``action`` (14).
2. Training: :func:`transformer_math.robotics.datasets.train_from_folder.train_act_on_folder`
   (the project's ACT, normalisation from ``meta/stats.json``, padded chunk steps out of the
   loss), saved with ``save_pretrained`` at ``DIR/policy``.
3. Evaluation on reset seeds ``0 .. eval_episodes - 1`` (none of them a training seed): the
   expert's replay and the policy, each with its success rate and 95 % Wilson interval,
   printed as JSON and written to ``DIR/result.json``. The same numbers come from
   ``tmath rollout aloha-transfer-cube --policy scripted|DIR/policy --episodes N``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

TRAIN_SEED0 = 100_000
STATE_NAMES = [*(f"qpos_{i}" for i in range(14)),
               "cube_x", "cube_y", "cube_z", "cube_qw", "cube_qx", "cube_qy", "cube_qz"]


def record_demos(root: str | Path, demos: int, seed0: int = TRAIN_SEED0,
                 max_tries: int | None = None) -> tuple[Path, int]:
    """Write ``demos`` successful replays of the scripted expert (module docstring, step 1) to
    ``root``; returns (folder, episodes tried)."""
    from transformer_math.robotics.datasets.lerobot_writer import LeRobotWriter
    from transformer_math.robotics.sim import community
    from transformer_math.robotics.sim.aloha_scripted import EPISODE_LENGTH, TransferCubeExpert

    if demos < 1:
        raise ValueError(f"demos must be >= 1, got {demos}")
    spec = community.spec("aloha-transfer-cube")
    env = community.make_env(spec.name, "environment_state_agent_pos")
    writer = LeRobotWriter(root, fps=spec.fps, robot_type="aloha", features={
        "observation.state": {"dtype": "float32", "shape": [21], "names": STATE_NAMES},
        "action": {"dtype": "float32", "shape": [14], "names": None}})
    kept, tried = 0, 0
    limit = max_tries if max_tries is not None else 5 * demos
    try:
        while kept < demos and tried < limit:
            seed = seed0 + tried
            tried += 1
            expert = TransferCubeExpert(seed)
            obs, _ = env.reset(seed=seed)
            states, actions, best = [], [], 0.0
            for t in range(EPISODE_LENGTH):
                action = expert.act(t, obs["environment_state"])
                states.append(np.concatenate([obs["agent_pos"], obs["environment_state"]]))
                actions.append(action)
                obs, reward, terminated, truncated, _ = env.step(action)
                best = max(best, float(reward))
                if terminated or truncated:
                    break
            if best == community.ALOHA_MAX_REWARD:
                writer.add_episode({"observation.state": np.asarray(states, np.float32),
                                    "action": np.asarray(actions, np.float32)},
                                   spec.task_text)
                kept += 1
    finally:
        env.close()
    if kept < demos:
        raise RuntimeError(f"only {kept} of {tried} expert replays succeeded (wanted {demos})")
    return writer.finalize(), tried


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Record, train, evaluate (module docstring); returns and prints the result."""
    import torch

    from transformer_math import safe_write
    from transformer_math.robotics.datasets.train_from_folder import train_act_on_folder
    from transformer_math.robotics.sim import community
    from transformer_math.robotics.sim.aloha_scripted import scripted_actor

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--demos", type=int, default=50)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--chunk-size", type=int, default=20)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    folder, tried = record_demos(out / "demos", args.demos)
    policy, losses = train_act_on_folder(folder, steps=args.steps, seed=args.seed,
                                         batch_size=args.batch_size,
                                         chunk_size=args.chunk_size, dim=args.dim)
    policy.save_pretrained(out / "policy")
    policy.eval()
    n = args.eval_episodes
    expert = community.run_episodes("aloha-transfer-cube", scripted_actor, episodes=n, seed=0,
                                    obs_type="environment_state_agent_pos")
    learned = community.run_episodes("aloha-transfer-cube", community.policy_actor(policy),
                                     episodes=n, seed=0,
                                     obs_type="environment_state_agent_pos")
    result = {"demos": args.demos, "expert_replays_tried": tried, "steps": args.steps,
              "chunk_size": args.chunk_size, "dim": args.dim,
              "final_loss": round(float(np.mean(losses[-50:])), 4),
              "expert": expert.as_dict(), "policy": learned.as_dict()}
    safe_write.write_text(out / "result.json", json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("expert", "policy")}
                     | {"expert_success": [expert.successes, n, expert.as_dict()["wilson95"]],
                        "policy_success": [learned.successes, n,
                                           learned.as_dict()["wilson95"]]}))
    return result


if __name__ == "__main__":
    main()
