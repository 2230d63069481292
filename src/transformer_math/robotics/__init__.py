"""Robotics bridges (000 §8.3.8): gymnasium environments with scripted experts, and policies.

``envs/`` holds the tasks (point-mass tracking with a noisy expert and pushes, a bimodal obstacle
task, the A->B / B->C stitching gridworld, a 1-D runner for return conditioning); importing
``transformer_math.robotics.envs`` registers them with gymnasium under ``TransformerMath/...``.
``policies/`` holds Decision Transformer, ACT, a chunked behaviour-cloning MLP and tabular offline
Q-learning with a LeRobot-like interface (``select_action``, ``reset``, ``forward(batch) -> (loss,
info)``, ``predict_action_chunk``; keys ``observation.state`` and ``action``).
"""
