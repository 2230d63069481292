"""ALOHA transfer-cube's scripted expert (ACT, Zhao et al. 2023, §5 "scripted policy"), replayed
in joint space.

As in the ACT paper, the expert acts in gym-aloha's end-effector environment
(``bimanual_viperx_end_effector_transfer_cube.xml``: each gripper welded to a mocap body whose
pose the action sets), and the joint positions it produces are the demonstration replayed in
the joint-space environment the policies are evaluated in (``gym_aloha/AlohaTransferCube-v0``,
same cube pose from the same seed: gym-aloha's ``sample_box_pose(seed)``). Mocap waypoints,
linearly interpolated (positions, and quaternions renormalised), gripper 1 = open, 0 = closed:
- right arm: from its start pose to 0.12 m above the cube by step 90, tilted -60 degrees about
  y; down to 0.01 m below the cube's centre by 130; close by 170; to the meeting point
  m = (0, 0.5, 0.25) (via m + (0.05, 0, 0) at 200) by 220; open at 310; away along +x by 360.
- left arm: to m + (-0.1, 0, -0.02), rotated 90 degrees about x, open, by 100; at step 220 it
  reads the cube's position c (the one closed-loop step of this expert: the cube sits in the
  right gripper wherever the grasp left it) and goes to c + (0.035, 0, 0) by 260, closes by
  310 and moves away along -x by 360.
The mocap body is the grasp point: MuJoCo 3 computes the weld's relative pose from the model's
reference configuration, which keeps ``gripper_link`` 0.135 m behind the mocap along the
gripper's axis. The joint demonstration's gripper entries are the commanded (normalised)
gripper positions, not the measured ones, as ACT records them.

Open loop (ACT's replay of the end-effector episode, :func:`transfer_cube_trajectory`) the
left gripper aims at where the cube sat in the end-effector simulation, which is not where
the joint-space arm, lagging its position targets, left it: 10 of 16 replays succeed
(reset seeds 100-115). Closed loop (:class:`TransferCubeExpert` with ``cube`` from the
joint-space ``environment_state``; the end-effector simulation then serves as the inverse
kinematics) 15 of 16 do. The offsets (:data:`RIGHT_ABOVE`, :data:`RIGHT_DOWN`,
:data:`LEFT_GRASP_OFFSET`) were picked on those seeds from a small grid; the success rates
reported in docs/lerobot.md are on other seeds (0 ..).
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

import numpy as np

from transformer_math.robotics.sim.community import require

EPISODE_LENGTH = 400
MEET = np.array([0.0, 0.5, 0.25])
RIGHT_ABOVE, RIGHT_DOWN = 0.12, -0.01
LEFT_GRASP_OFFSET = np.array([0.035, 0.0, 0.0])
LEFT_REPLAN_STEP = 220


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions (w, x, y, z)."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_axis(axis: tuple[float, float, float], degrees: float) -> np.ndarray:
    """The rotation by ``degrees`` about the unit ``axis`` as a quaternion (w, x, y, z)."""
    half = np.radians(degrees) / 2
    return np.concatenate([[np.cos(half)], np.sin(half) * np.asarray(axis, float)])


def _v(x: float, y: float, z: float) -> np.ndarray:
    """An offset vector (added to a position array)."""
    return np.array([x, y, z])


Waypoint = tuple[int, np.ndarray, np.ndarray, float]
"""(step, position, quaternion, gripper)."""


def interpolate(waypoints: list[Waypoint], t: int) -> np.ndarray:
    """The mocap pose and gripper (8 numbers) at step ``t``, linear between waypoints."""
    for (t0, p0, q0, g0), (t1, p1, q1, g1) in itertools.pairwise(waypoints):
        if t0 <= t <= t1:
            f = (t - t0) / (t1 - t0)
            q = (1 - f) * np.asarray(q0) + f * np.asarray(q1)
            return np.concatenate([(1 - f) * np.asarray(p0) + f * np.asarray(p1),
                                   q / np.linalg.norm(q), [(1 - f) * g0 + f * g1]])
    _, p, q, g = waypoints[-1]
    return np.concatenate([p, q, [g]])


def _ee_env(box_pose: np.ndarray) -> Any:
    from dm_control import mujoco
    from dm_control.rl import control
    from gym_aloha.constants import ASSETS_DIR, DT
    from gym_aloha.tasks.sim_end_effector import TransferCubeEndEffectorTask

    class Task(TransferCubeEndEffectorTask):
        """gym-aloha's end-effector task with the given cube pose (its own draws from the
        global NumPy generator) and no rendering."""

        def initialize_episode(self, physics: Any) -> None:
            self.initialize_robots(physics)
            i = physics.model.name2id("red_box_joint", "joint")
            np.copyto(physics.data.qpos[i:i + 7], box_pose)
            super(TransferCubeEndEffectorTask, self).initialize_episode(physics)

        def get_observation(self, physics: Any) -> collections.OrderedDict:
            obs = collections.OrderedDict()
            obs["qpos"] = self.get_qpos(physics)
            obs["env_state"] = self.get_env_state(physics)
            obs["mocap_pose_left"] = np.concatenate([physics.data.mocap_pos[0],
                                                     physics.data.mocap_quat[0]])
            obs["mocap_pose_right"] = np.concatenate([physics.data.mocap_pos[1],
                                                      physics.data.mocap_quat[1]])
            obs["gripper_ctrl"] = physics.data.ctrl.copy()
            return obs

    physics = mujoco.Physics.from_xml_path(
        str(ASSETS_DIR / "bimanual_viperx_end_effector_transfer_cube.xml"))
    return control.Environment(physics, Task(), float("inf"), control_timestep=DT,
                               n_sub_steps=None, flat_observation=False)


class TransferCubeExpert:
    """The scripted expert of one episode (reset seed ``seed``), stepped with the joint-space
    environment: :meth:`act` advances the end-effector simulation one step and returns its
    joint positions (grippers: the commanded positions) as the joint-space action.

    ``cube``: the joint-space environment's cube position where the caller has it (its
    ``environment_state``); the expert then aims its two re-planning steps (the right grasp at
    steps 0 and 60, the left grasp at :data:`LEFT_REPLAN_STEP`) at the cube the policy is
    evaluated on, with the end-effector simulation as its inverse kinematics. Without it, the
    end-effector simulation's own cube (open loop; :func:`transfer_cube_trajectory`)."""

    def __init__(self, seed: int) -> None:
        require("aloha-transfer-cube")
        from gym_aloha.utils import sample_box_pose

        self.env = _ee_env(sample_box_pose(seed))
        self.ts = self.env.reset()
        init_l = self.ts.observation["mocap_pose_left"]
        self.init_r = self.ts.observation["mocap_pose_right"]
        self.pick_q = quat_mul(self.init_r[3:], quat_axis((0, 1, 0), -60))
        self.meet_l_q = quat_axis((1, 0, 0), 90)
        self.left: list[Waypoint] = [(0, init_l[:3], init_l[3:], 0.0),
                                     (100, MEET + _v(-0.1, 0, -0.02), self.meet_l_q, 1.0),
                                     (EPISODE_LENGTH, MEET + _v(-0.1, 0, -0.02),
                                      self.meet_l_q, 1.0)]
        self.right: list[Waypoint] = []
        self.best = 0

    def _plan_right(self, c: np.ndarray) -> None:
        q = self.pick_q
        self.right = [(0, self.init_r[:3], self.init_r[3:], 0.0),
                      (90, c + _v(0, 0, RIGHT_ABOVE), q, 1.0),
                      (130, c + _v(0, 0, RIGHT_DOWN), q, 1.0),
                      (170, c + _v(0, 0, RIGHT_DOWN), q, 0.0),
                      (200, MEET + _v(0.05, 0, 0), q, 0.0), (220, MEET, q, 0.0),
                      (310, MEET, q, 1.0), (360, MEET + _v(0.1, 0, 0), q, 1.0),
                      (EPISODE_LENGTH, MEET + _v(0.1, 0, 0), q, 1.0)]

    def _plan_left(self, t: int, c: np.ndarray) -> None:
        grasp, level, q = c + LEFT_GRASP_OFFSET, np.array([1.0, 0.0, 0.0, 0.0]), self.meet_l_q
        self.left = [(t, interpolate(self.left, t)[:3], q, 1.0), (260, grasp, q, 1.0),
                     (310, grasp, q, 0.0), (360, c + _v(-0.12, 0, 0), level, 0.0),
                     (EPISODE_LENGTH, c + _v(-0.12, 0, 0), level, 0.0)]

    def act(self, t: int, cube: np.ndarray | None = None) -> np.ndarray:
        """The joint-space action (14) of step ``t`` (module and class docstrings)."""
        from gym_aloha.constants import normalize_puppet_gripper_position

        if t in (0, 60, LEFT_REPLAN_STEP):  # the cube falls onto the table first (0 -> 60)
            c = (np.asarray(cube, float)[:3] if cube is not None
                 else self.ts.observation["env_state"][:3].copy())
            if t == LEFT_REPLAN_STEP:
                self._plan_left(t, c)
            else:
                self._plan_right(c)
        self.ts = self.env.step(np.concatenate([interpolate(self.left, t),
                                                interpolate(self.right, t)]))
        self.best = max(self.best, int(self.ts.reward))
        q = self.ts.observation["qpos"].copy()
        ctrl = self.ts.observation["gripper_ctrl"]
        q[6] = normalize_puppet_gripper_position(ctrl[0])
        q[13] = normalize_puppet_gripper_position(ctrl[2])
        return q.astype(np.float32)


def transfer_cube_trajectory(seed: int) -> tuple[np.ndarray, int]:
    """The open-loop joint demonstration (400, 14) for reset seed ``seed`` and its maximum
    reward in end-effector space (ACT's replay: the end-effector simulation's own cube)."""
    expert = TransferCubeExpert(seed)
    joints = [expert.act(t) for t in range(EPISODE_LENGTH)]
    return np.asarray(joints, dtype=np.float32), expert.best


def scripted_actor(seed: int) -> Any:
    """``make_actor`` for :func:`.community.run_episodes`: the closed-loop expert
    (:class:`TransferCubeExpert`) reading the cube from ``observation.environment_state``
    where the observation has it (``environment_state_agent_pos``), else open loop."""
    from transformer_math.robotics.sim.community import ENV_STATE_KEY

    expert = TransferCubeExpert(seed)

    def act(batch: Any, t: int) -> np.ndarray:
        env_state = batch.get(ENV_STATE_KEY)
        cube = None if env_state is None else env_state[0, :3].numpy()
        return expert.act(min(t, EPISODE_LENGTH - 1), cube)

    return act
