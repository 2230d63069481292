"""Claims about position encodings (000 §8.3.3; 004 "RoPE", ch. 9; CLAIMS.md "position").

Every check measures the project's own implementation (``functional/rope.py``,
``functional/rope_scaling.py``, ``functional/positional.py``, ``nn/position.py``,
``nn/attention.py``, ``experiments/rope_extrapolation.py``) and compares it with a prediction
obtained another way (closed form in ``theory/positions.py``, a different algebraic route, or the
primary source's statement). Each falsifier runs the same check on a deliberately wrong variant.

Every check reports its pass conditions as margins (``claims/registry.py``) and its verdict is
computed from them, so a verdict is ``failed`` exactly when a margin does not hold (issue 12).
A list of per-item conditions is one margin on its worst item; an exact condition (an error is
raised, a count is zero) is a margin with threshold 0 or 1.

Modules: ``encodings`` (sinusoidal code, learned table, KV-cache decoding), ``rope`` (rotation
algebra: relative scores, orthogonality and layouts, group property), ``rope_numerics`` (decay
bound, angle precision), ``axial`` (2-D / 3-D RoPE), ``alibi``, ``scaling`` (where extrapolation
breaks and what each context-extension method keeps), ``extrapolation`` (the trained length
study).
"""
