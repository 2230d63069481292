"""VLAPush: a rendered tabletop where an instruction names which object goes where.

Task (issue 32 item 4; the language-conditioned pick-and-place of the VLA papers, e.g. pi0's
"put the X in the Y", Black et al. 2024, reduced to a 2-D scene drawn with numpy). The table is
the unit square; ``num_objects`` objects, each a (colour, shape) pair from
:data:`COLORS` x :data:`SHAPES` (no pair twice in one scene), lie at random positions at least
``min_separation`` apart. A point gripper g in [0, 1]^2 moves by ``max_step`` * a[:2] per step
(clipped to the table), and a[2] > 0 closes it:

    g <- clip(g + max_step * a[:2], 0, 1)
    closed and holding nothing: grab the nearest object within ``grab_radius`` of g (it snaps to g)
    closed and holding:         the held object moves with g
    open:                       release

(deterministic; no contact physics). The instruction, drawn from a template grammar
(:data:`TEMPLATES`), names a source object and a target object of the scene: "push the red square
to the blue circle". Success (``terminated``, reward 1) = the source object released within
``success_radius`` of the target object's centre, the target never moved (carrying the blue
circle to the red square is not success).

Observations, LeRobot's gym conventions (gym-pusht / gym-aloha): a dict with ``pixels`` (S, S, 3)
uint8, the scene rendered at ``image_size`` S, and ``agent_pos`` (3,) float32 = (g_x, g_y,
holding in {0, 1}). The instruction is ``info["task"]`` (and ``env.task``), LeRobot's ``task``.

Held-out combinations (compositional generalisation): the pairs of :data:`HELD_OUT` are never
named by a ``split="train"`` instruction (as source or target; they may still lie in the scene);
``split="held_out"`` draws instructions whose source is one of them. Every colour and every shape
is named in training, only these pairings are not.

Scripted expert (:func:`expert_action`): move to the source (the gripper closes on the step that
reaches it), carry it to the target's centre, open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from transformer_math.robotics.envs.validation import EpisodeOrder, box_action, check_config

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40), "green": (40, 190, 60), "blue": (50, 80, 230),
    "yellow": (230, 210, 40)}
SHAPES = ("square", "circle", "triangle")
HELD_OUT: frozenset[tuple[str, str]] = frozenset({
    ("red", "circle"), ("green", "triangle"), ("blue", "square")})
"""(colour, shape) pairs never named by a training instruction (one per shape, one per colour
but yellow)."""
TEMPLATES = ("push the {src} to the {tgt}", "move the {src} to the {tgt}",
             "put the {src} next to the {tgt}", "bring the {src} over to the {tgt}")
SPLITS = ("train", "held_out")
BACKGROUND = (40, 40, 40)
GRIPPER = (255, 255, 255)


@dataclass(frozen=True)
class VLAPushConfig:
    """Sizes and constants of the task (module docstring)."""

    image_size: int = 32
    num_objects: int = 3
    horizon: int = 32
    max_step: float = 0.1
    object_size: float = 0.07
    grab_radius: float = 0.1
    success_radius: float = 0.12
    min_separation: float = 0.25
    split: str = "train"

    def __post_init__(self) -> None:
        check_config(self, positive=("max_step", "object_size", "grab_radius", "success_radius",
                                     "min_separation"), counts=("image_size", "num_objects",
                                                                "horizon"))
        if self.split not in SPLITS:
            raise ValueError(f"VLAPushConfig.split must be one of {SPLITS}, got {self.split!r}")
        if not 2 <= self.num_objects <= 6:
            raise ValueError(f"VLAPushConfig.num_objects must be in [2, 6], got "
                             f"{self.num_objects!r}")
        if not 8 <= self.image_size <= 256:
            raise ValueError(f"VLAPushConfig.image_size must be in [8, 256], got "
                             f"{self.image_size!r}")


def all_pairs() -> list[tuple[str, str]]:
    return [(c, s) for c in COLORS for s in SHAPES]


def name_of(pair: tuple[str, str]) -> str:
    return f"{pair[0]} {pair[1]}"


@dataclass
class Scene:
    """One episode's layout: object pairs (n,), positions (n, 2), source and target indices."""

    pairs: list[tuple[str, str]]
    positions: np.ndarray
    source: int
    target: int
    task: str


def sample_scene(cfg: VLAPushConfig, rng: np.random.Generator, split: str | None = None
                 ) -> tuple[Scene, np.ndarray]:
    """(scene, gripper start) for ``split`` (default the config's); deterministic given ``rng``."""
    split = cfg.split if split is None else split
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    pairs = all_pairs()
    seen = [p for p in pairs if p not in HELD_OUT]
    held = sorted(HELD_OUT)
    source = seen[rng.integers(len(seen))] if split == "train" else held[rng.integers(len(held))]
    target = seen[rng.integers(len(seen))]
    while target == source:
        target = seen[rng.integers(len(seen))]
    others = [p for p in pairs if p not in (source, target)]
    extra = [others[i] for i in rng.permutation(len(others))[: cfg.num_objects - 2]]
    chosen = [source, target, *extra]
    order = rng.permutation(len(chosen))
    chosen = [chosen[i] for i in order]
    lo, hi = cfg.object_size + 0.02, 1.0 - cfg.object_size - 0.02
    positions = np.zeros((len(chosen), 2))
    for i in range(len(chosen)):
        for _ in range(1000):
            p = rng.uniform(lo, hi, size=2)
            if i == 0 or np.min(np.linalg.norm(positions[:i] - p, axis=1)) >= cfg.min_separation:
                break
        positions[i] = p
    template = TEMPLATES[rng.integers(len(TEMPLATES))]
    task = template.format(src=name_of(source), tgt=name_of(target))
    gripper = rng.uniform(0.05, 0.95, size=2)
    positions.setflags(write=False)  # the layout: ``succeeded`` compares the target against it
    return Scene(chosen, positions, chosen.index(source), chosen.index(target), task), gripper


def render_scene(cfg: VLAPushConfig, scene: Scene, positions: np.ndarray,
                 gripper: np.ndarray) -> np.ndarray:
    """(S, S, 3) uint8: objects drawn in list order, then the gripper (a white cross)."""
    s = cfg.image_size
    img = np.empty((s, s, 3), np.uint8)
    img[:] = BACKGROUND
    centres = (np.arange(s) + 0.5) / s
    x = centres[None, :]
    y = centres[::-1, None]  # row 0 is the top (y = 1)
    r = cfg.object_size
    for (color, shape), (cx, cy) in zip(scene.pairs, positions, strict=True):
        dx, dy = x - cx, y - cy
        if shape == "square":
            mask = (np.abs(dx) <= r * 0.85) & (np.abs(dy) <= r * 0.85)
        elif shape == "circle":
            mask = dx**2 + dy**2 <= r**2
        else:  # triangle, apex up: inside the band below the two slanted edges
            mask = (dy >= -r) & (dy <= r) & (np.abs(dx) <= (r - dy) * 0.6)
        img[mask] = COLORS[color]
    gx, gy = gripper
    col = int(np.clip(gx * s, 0, s - 1))
    row = int(np.clip((1.0 - gy) * s, 0, s - 1))
    img[row, max(col - 1, 0): col + 2] = GRIPPER
    img[max(row - 1, 0): row + 2, col] = GRIPPER
    return img


def expert_action(cfg: VLAPushConfig, scene: Scene, positions: np.ndarray, gripper: np.ndarray,
                  held: int | None) -> np.ndarray:
    """The scripted expert's (3,) action in [-1, 1]^3 (module docstring)."""
    if held == scene.source:
        goal = positions[scene.target]
        if np.linalg.norm(goal - gripper) < 1e-9:
            return np.array([0.0, 0.0, -1.0], np.float32)  # there: open
        grip = 1.0
    else:
        goal = positions[scene.source]
        grip = 1.0 if np.linalg.norm(goal - gripper) <= cfg.max_step * np.sqrt(2) else -1.0
        if held is not None:  # holding the wrong object: drop it first
            return np.array([0.0, 0.0, -1.0], np.float32)
    move = np.clip((goal - gripper) / cfg.max_step, -1.0, 1.0)
    return np.array([move[0], move[1], grip], np.float32)


def physics_step(cfg: VLAPushConfig, positions: np.ndarray, gripper: np.ndarray,
                 held: int | None, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(positions, gripper, held) after ``action`` (module docstring); inputs not modified."""
    positions = positions.copy()
    gripper = np.clip(gripper + cfg.max_step * np.asarray(action[:2], np.float64), 0.0, 1.0)
    if action[2] > 0:
        if held is None:
            dist = np.linalg.norm(positions - gripper, axis=1)
            nearest = int(np.argmin(dist))
            if dist[nearest] <= cfg.grab_radius:
                held = nearest
        if held is not None:
            positions[held] = gripper
    else:
        held = None
    return positions, gripper, held


def succeeded(cfg: VLAPushConfig, scene: Scene, positions: np.ndarray, held: int | None) -> bool:
    """The source released within ``success_radius`` of the target, and the target where the
    layout put it. Without the last condition success was symmetric: carrying the target to the
    source counted, so a policy that finds the two named objects but not which is which
    succeeded (with two objects the words were never needed: 94-97 % success whatever the
    instruction, session 51)."""
    gap = float(np.linalg.norm(positions[scene.source] - positions[scene.target]))
    unmoved = bool(np.array_equal(positions[scene.target], scene.positions[scene.target]))
    return held is None and gap <= cfg.success_radius and unmoved


@dataclass
class VLAPushDataset:
    """Expert demonstrations: images (N, T, S, S, 3) uint8, states (N, T, 3), actions (N, T, 3),
    lengths (N,) (steps until success; later steps repeat the final frame with the idle action),
    tasks (N instruction strings)."""

    images: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    lengths: np.ndarray
    tasks: list[str]


def relabel_scene(scene: Scene, rng: np.random.Generator, split: str = "train") -> Scene:
    """The same layout with another instruction: a (source, target) pair of the scene's objects
    drawn uniformly among those ``split`` may name (train: neither a held-out pair; held_out: a
    held-out source, a seen target), a template drawn afresh. ``scene`` itself is returned when
    no other pair is allowed."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    n = len(scene.pairs)
    allowed = [(i, j) for i in range(n) for j in range(n) if i != j
               and (scene.pairs[i] in HELD_OUT) == (split == "held_out")
               and scene.pairs[j] not in HELD_OUT and (i, j) != (scene.source, scene.target)]
    if not allowed:
        return scene
    i, j = allowed[rng.integers(len(allowed))]
    template = TEMPLATES[rng.integers(len(TEMPLATES))]
    task = template.format(src=name_of(scene.pairs[i]), tgt=name_of(scene.pairs[j]))
    return Scene(scene.pairs, scene.positions, i, j, task)


def generate_vla_push_dataset(cfg: VLAPushConfig, num_episodes: int, seed: int,
                              split: str = "train", instructions_per_scene: int = 1
                              ) -> VLAPushDataset:
    """Roll out the scripted expert on ``num_episodes`` episodes of ``split`` (deterministic).

    ``instructions_per_scene`` = m > 1: the episodes come in groups of m on one layout and
    gripper start, each with another instruction (:func:`relabel_scene`; fewer when the layout
    allows fewer). Within a group the first image is the same and only the words say where to
    go: counterfactual demonstrations, so that a policy that ignores the instruction pays for
    it in the loss on every group, not only on average over layouts."""
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    if isinstance(instructions_per_scene, bool) or not isinstance(
            instructions_per_scene, int) or not 1 <= instructions_per_scene <= 30:
        raise ValueError(f"instructions_per_scene must be an integer in [1, 30], got "
                         f"{instructions_per_scene!r}")
    rng = np.random.default_rng(seed)
    t, s = cfg.horizon, cfg.image_size
    images = np.zeros((num_episodes, t, s, s, 3), np.uint8)
    states = np.zeros((num_episodes, t, 3), np.float32)
    actions = np.zeros((num_episodes, t, 3), np.float32)
    lengths = np.full(num_episodes, t, np.int64)
    tasks = []
    idle = np.array([0.0, 0.0, -1.0], np.float32)
    group: list[Scene] = []
    start = np.zeros(2)
    for n in range(num_episodes):
        if n % instructions_per_scene == 0:
            scene, start = sample_scene(cfg, rng, split)
            group = [scene]
        else:
            scene = relabel_scene(group[0], rng, split)
            for _ in range(8):  # another pair than the group's so far, when there is one
                if all(scene.source != g.source or scene.target != g.target for g in group):
                    break
                scene = relabel_scene(group[0], rng, split)
            group.append(scene)
        tasks.append(scene.task)
        positions, gripper, held, done = scene.positions, start, None, False
        for step in range(t):
            images[n, step] = render_scene(cfg, scene, positions, gripper)
            states[n, step] = (*gripper, float(held is not None))
            a = idle if done else expert_action(cfg, scene, positions, gripper, held)
            actions[n, step] = a
            if not done:
                positions, gripper, held = physics_step(cfg, positions, gripper, held, a)
                if succeeded(cfg, scene, positions, held):
                    done, lengths[n] = True, step + 1
    return VLAPushDataset(images, states, actions, lengths, tasks)


class VLAPushEnv(gym.Env):
    """Gymnasium environment of the task (module docstring). ``reset(options={"split": ...})``
    overrides the config's split for one episode. ``step`` validates the action (a finite array
    of shape (3,) in [-1, 1]^3) and the call order (:mod:`...envs.validation`)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, config: VLAPushConfig | None = None, render_mode: str | None = None,
                 **overrides: Any) -> None:
        base = config or VLAPushConfig()
        self.cfg = VLAPushConfig(**{**base.__dict__, **overrides}) if overrides else base
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        s = self.cfg.image_size
        self.observation_space = spaces.Dict({
            "pixels": spaces.Box(0, 255, (s, s, 3), np.uint8),
            "agent_pos": spaces.Box(0.0, 1.0, (3,), np.float32)})
        self.action_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
        self._scene: Scene | None = None
        self._positions = np.zeros((self.cfg.num_objects, 2))
        self._gripper = np.zeros(2)
        self._held: int | None = None
        self._t = 0
        self._order = EpisodeOrder("VLAPushEnv")

    @property
    def task(self) -> str:
        """The current instruction (LeRobot's ``task``); '' before the first reset."""
        return "" if self._scene is None else self._scene.task

    @property
    def scene(self) -> Scene | None:
        return self._scene

    @property
    def held(self) -> int | None:
        """Index into ``scene.pairs`` of the object in the gripper, None when it holds none."""
        return self._held

    def _obs(self) -> dict[str, np.ndarray]:
        assert self._scene is not None
        return {"pixels": render_scene(self.cfg, self._scene, self._positions, self._gripper),
                "agent_pos": np.array([*self._gripper, float(self._held is not None)],
                                      np.float32)}

    def _info(self) -> dict[str, Any]:
        assert self._scene is not None
        gap = float(np.linalg.norm(self._positions[self._scene.source]
                                   - self._positions[self._scene.target]))
        return {"task": self._scene.task, "distance": gap,
                "is_success": succeeded(self.cfg, self._scene, self._positions, self._held)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        split = (options or {}).get("split", self.cfg.split)
        self._scene, self._gripper = sample_scene(self.cfg, self.np_random, split)
        self._positions = self._scene.positions.copy()
        self._held, self._t = None, 0
        self._order.started()
        return self._obs(), self._info()

    def expert_action(self) -> np.ndarray:
        """The scripted expert's action in the current state."""
        assert self._scene is not None, "call reset() first"
        return expert_action(self.cfg, self._scene, self._positions, self._gripper, self._held)

    def step(self, action):
        self._order.check()
        a = box_action(action, self.action_space)
        assert self._scene is not None
        self._positions, self._gripper, self._held = physics_step(
            self.cfg, self._positions, self._gripper, self._held, a)
        self._t += 1
        info = self._info()
        terminated = bool(info["is_success"])
        truncated = not terminated and self._t >= self.cfg.horizon
        self._order.stepped(terminated, truncated)
        return self._obs(), float(terminated), terminated, truncated, info

    def render(self):
        if self.render_mode != "rgb_array" or self._scene is None:
            return None
        return render_scene(self.cfg, self._scene, self._positions, self._gripper)
