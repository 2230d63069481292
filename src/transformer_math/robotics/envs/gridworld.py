"""Stitching gridworld: the data hold only A->B and B->C halves (and a mediocre A->D route).

(000 §8.3.8 "stitching 局限的一个具体例子"; Brandfonbrener et al. NeurIPS 2022.) A 7x7 grid,
deterministic moves (0 stay, 1 up, 2 down, 3 left, 4 right; walls keep the agent in place).
Cells: A = (0, 3) start, B = (3, 6), C = (6, 6), D = (6, 0) (x right, y up).
Rewards: +2 the first time B is entered (not terminal), +2 on entering C (terminal),
+3 on entering D (terminal). Horizon 14 steps.

From A the best return is 4 (A->B->C, 9 steps); the direct route A->D returns 3 (9 steps).
Datasets (``generate_stitch_dataset``): monotone random A->B paths that END at B (return 2),
B->C paths that START at B with B already visited (return 2), and A->D paths (return 3). No
episode holds A->B->C. A return-conditioned imitator has never seen return 4 at A; Bellman
backups (offline Q-learning) stitch Q(B, .) into Q(A, .) and find A->B->C.

State for tabular methods: index = 2 * (y * 7 + x) + visited_B (98 states). The gymnasium
observation is the one-hot cell (49) followed by the visited-B flag (1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from transformer_math.robotics.envs.validation import EpisodeOrder, discrete_action

SIZE = 7
CELLS = {"A": (0, 3), "B": (3, 6), "C": (6, 6), "D": (6, 0)}
MOVES = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]])  # stay, up, down, left, right
NUM_ACTIONS = 5
NUM_STATES = SIZE * SIZE * 2
OBS_DIM = SIZE * SIZE + 1
HORIZON = 14
REWARD_B, REWARD_C, REWARD_D = 2.0, 2.0, 3.0


def state_index(xy: tuple[int, int], visited_b: bool) -> int:
    return 2 * (xy[1] * SIZE + xy[0]) + int(visited_b)


def observation(xy: tuple[int, int], visited_b: bool) -> np.ndarray:
    obs = np.zeros(OBS_DIM, np.float32)
    obs[xy[1] * SIZE + xy[0]] = 1.0
    obs[-1] = float(visited_b)
    return obs


def transition(xy: tuple[int, int], visited_b: bool,
               action: int) -> tuple[tuple[int, int], bool, float, bool]:
    """Deterministic step: (new cell, visited_B, reward, terminal)."""
    if not 0 <= int(action) < NUM_ACTIONS:
        raise ValueError(f"action must be in 0..{NUM_ACTIONS - 1}, got {action}")
    x = int(np.clip(xy[0] + MOVES[action, 0], 0, SIZE - 1))
    y = int(np.clip(xy[1] + MOVES[action, 1], 0, SIZE - 1))
    new = (x, y)
    if new == CELLS["C"]:
        return new, visited_b, REWARD_C, True
    if new == CELLS["D"]:
        return new, visited_b, REWARD_D, True
    if new == CELLS["B"] and not visited_b:
        return new, True, REWARD_B, False
    return new, visited_b, 0.0, False


@dataclass
class Episode:
    """One trajectory: observations (T, 50), actions (T,), rewards (T,), states (T,) indices,
    next_states (T,), dones (T,) and the segment name ("A->B", "B->C", "A->D", "A->B->C")."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    states: np.ndarray
    next_states: np.ndarray
    dones: np.ndarray
    segment: str


def _monotone_moves(rng: np.random.Generator, dx: int, dy: int) -> list[int]:
    moves = [4 if dx > 0 else 3] * abs(dx) + [1 if dy > 0 else 2] * abs(dy)
    rng.shuffle(moves)
    return moves


def scripted_episode(rng: np.random.Generator, segment: str) -> Episode:
    """A monotone random path for ``segment`` in {"A->B", "B->C", "A->D", "A->B->C"}."""
    points = segment.split("->")
    if len(points) < 2 or any(p not in CELLS for p in points):
        raise ValueError(f"segment must be like 'A->B' over cells {sorted(CELLS)}, got {segment!r}")
    xy, visited = CELLS[points[0]], points[0] == "B"
    moves: list[int] = []
    for a, b in itertools.pairwise(points):
        moves += _monotone_moves(rng, CELLS[b][0] - CELLS[a][0], CELLS[b][1] - CELLS[a][1])
    obs, acts, rews, sts, nxt, dns = [], [], [], [], [], []
    for m in moves:
        obs.append(observation(xy, visited))
        sts.append(state_index(xy, visited))
        xy, visited, r, done = transition(xy, visited, m)
        acts.append(m)
        rews.append(r)
        nxt.append(state_index(xy, visited))
        dns.append(done)
        if done:
            break
    return Episode(np.array(obs), np.array(acts), np.array(rews, np.float32), np.array(sts),
                   np.array(nxt), np.array(dns), segment)


def generate_stitch_dataset(num_per_segment: int, seed: int,
                            segments: tuple[str, ...] = ("A->B", "B->C", "A->D")) -> list[Episode]:
    """``num_per_segment`` scripted episodes of each segment (deterministic given ``seed``)."""
    if num_per_segment < 1:
        raise ValueError(f"num_per_segment must be >= 1, got {num_per_segment}")
    rng = np.random.default_rng(seed)
    return [scripted_episode(rng, s) for s in segments for _ in range(num_per_segment)]


class StitchGridEnv(gym.Env):
    """Gymnasium environment of the stitching gridworld (module docstring); starts at A
    (``options={"start": "B"}`` starts at B with B visited). ``step`` validates the action (an
    integer in 0..4, not a float or bool) and the call order (:mod:`...envs.validation`)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, horizon: int = HORIZON) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        self.render_mode, self.horizon = render_mode, horizon
        self.observation_space = spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._xy, self._visited, self._t = CELLS["A"], False, 0
        self._trail: list[tuple[int, int]] = []
        self._order = EpisodeOrder("StitchGridEnv")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        start = (options or {}).get("start", "A")
        if start not in ("A", "B"):
            raise ValueError(f"options['start'] must be 'A' or 'B', got {start!r}")
        self._xy, self._visited, self._t = CELLS[start], start == "B", 0
        self._trail = [self._xy]
        self._order.started()
        return observation(self._xy, self._visited), {"state": self.state_index}

    @property
    def state_index(self) -> int:
        return state_index(self._xy, self._visited)

    @property
    def cell(self) -> tuple[int, int]:
        return self._xy

    def step(self, action):
        self._order.check()
        move = discrete_action(action, self.action_space)
        self._xy, self._visited, r, done = transition(self._xy, self._visited, move)
        self._t += 1
        self._trail.append(self._xy)
        info = {"state": self.state_index, "cell": self._xy}
        truncated = self._t >= self.horizon
        self._order.stepped(done, truncated)
        return observation(self._xy, self._visited), r, done, truncated, info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        cell = 12
        img = np.full((SIZE * cell, SIZE * cell, 3), 255, np.uint8)
        colors = {"A": (60, 60, 200), "B": (200, 160, 0), "C": (40, 170, 40), "D": (170, 40, 170)}
        for name, (x, y) in CELLS.items():
            r = (SIZE - 1 - y) * cell
            img[r : r + cell, x * cell : (x + 1) * cell] = colors[name]
        for x, y in self._trail:
            r = (SIZE - 1 - y) * cell
            img[r + 4 : r + 8, x * cell + 4 : x * cell + 8] = (200, 40, 40)
        return img
