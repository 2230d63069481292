"""Robotics bridges (000 §8.3.8): gymnasium environments with scripted experts, and policies.

``envs/`` holds the tasks (point-mass tracking with a noisy expert and pushes, a bimodal obstacle
task, the A->B / B->C stitching gridworld, a 1-D runner for return conditioning); importing
``transformer_math.robotics.envs`` (or gymnasium 0.26-0.29's ``gymnasium.envs`` entry point, or
an id ``"transformer_math.robotics.envs:TransformerMath/..."``) registers them with gymnasium.
``policies/`` holds Decision Transformer, ACT, a chunked behaviour-cloning MLP and tabular offline
Q-learning with a LeRobot-like interface (``select_action``, ``reset``, ``forward(batch) -> (loss,
info)``, ``predict_action_chunk``; keys ``observation.state``, ``observation.images.<camera>``,
``action``, ``action_is_pad``) saved as LeRobot-style folders (``save_pretrained`` /
``from_pretrained``: ``config.json`` + ``model.safetensors``).
"""
