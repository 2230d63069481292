"""Policies of the robotics bridges: Decision Transformer, ACT, chunked BC, offline Q-learning."""
