"""Claims about position encodings (000 §8.3.3; 004 "RoPE", ch. 9; CLAIMS.md "position").

Every check measures the project's own implementation (``functional/rope.py``,
``functional/rope_scaling.py``, ``functional/positional.py``, ``nn/position.py``,
``nn/attention.py``, ``experiments/rope_extrapolation.py``) and compares it with a prediction
obtained another way (closed form in ``theory/positions.py``, a different algebraic route, or the
primary source's statement). Each falsifier is a bug planted in the library code the check runs
(issue 14; ``transformer_math/bugs.py``): a wrong RoPE exponent, a cos/sin swap, a sign slip in
the rotation, a missing layout permutation, bf16 angles, the scaling bugs of
``functional/rope_scaling.py``, a truncated ALiBi slope table, positions restarting after the KV
cache, the library's sliding-window mask with its sign flipped.

Every check reports its pass conditions as margins (``claims/registry.py``) and its verdict is
``decide(margins, seed_margins)``: ``failed`` exactly when a margin does not hold (issue 12), and
``refuted`` only when the seed's own version, computed from the same measurement, fails.
A list of per-item conditions is one margin on its worst item; an exact condition (an error is
raised, a count is zero) is a margin with threshold 0 or 1.

Modules: ``encodings`` (sinusoidal code and its injectivity at any base, KV-cache decoding),
``rope`` (rotation algebra: relative scores, orthogonality and layouts, group property),
``representation`` (R_m = exp(m X), the faithful direct-sum representation of the torus, a
spectrum fixed by the base), ``rope_numerics`` (long-term decay of measured logits, angle
precision), ``axial`` (2-D / 3-D RoPE; the non-commuting SO(3) case), ``alibi``, ``scaling``
(where extrapolation breaks, a phase-coverage model, and what each context-extension method
keeps), ``window`` (a sliding window sees only trained distances), ``extrapolation`` (the
trained length study, three seeds).

Issue 18 (the seed audit): counterexamples and closed forms for the seeds' group-theory
statements live in ``theory/rope_audit.py``; the seeds' versions enter the checks as seed margins
on the same measurements, and bibliographic errors as ``Correction`` s (RoFormer's year on
``position.rope-relative``, LongRoPE's 2048K on ``position.scaling-methods``, the absent
"Theorem 3.1" on ``position.axial-rope``).

Issue 31 (the review of every claim, ``../shared/design/CLAIM_AUDIT.md``): each claim declares
its kind and answers the review in ``audit=``; one refutation per distinct seed error, quoted
verbatim (the 14 records of the extrapolation mechanism are three errors, the six of the RoPE
uniqueness none); questions, exercises and sufficient conditions are no longer refuted;
``position.learned-embedding-limit`` (an API check) is ``tests/nn/test_learned_position_limit.py``.
"""
