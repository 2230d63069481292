"""Claims of 000 §8.3.6: in-context learning as gradient descent, Bayes, diversity, induction.

Each check measures with the project's own implementation (linear self-attention loaded with the
explicit construction, trained models, baselines, scores) and compares with a prediction
computed another way (GD from residuals, Neumann sums, closed forms, thresholds). Modules by
theme: ``gd_construction`` (one GD step, stacked layers and OLS, the line-searched step),
``value_matrix`` (the seed's W_V against the working one), ``depth_precision`` (layers vs
condition number, one preconditioned step), ``demo_risk`` (risk vs number and noise of demos),
``newton_schulz``, ``bayes``, ``trained_linear_attention`` (trained LSA vs GD and Ahn et al.'s
preconditioner; the quick Monte Carlo check of Gamma), ``task_diversity`` (trained
transformers; the quick check of the prompt layout) and ``induction_heads`` (trained
transformers; the hand-built induction circuit). Full-tier experiments go through
``experiments.memo.memoized`` so that a claim trains once per seed; training claims run
``ctx.seeds`` seeds (``claims.seeds.over_seeds``) and decide on the worst. Every falsifier is a
bug planted in the library (``transformer_math.bugs``); the falsifier run trains again, since
the memo keys on the planted bugs.
"""
