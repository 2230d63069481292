"""Claims of 000 §8.3.6: in-context learning as gradient descent, Bayes, diversity, induction.

Each check measures with the project's own implementation (linear self-attention loaded with the
explicit construction, trained models, baselines, scores) and compares with a prediction
computed another way (GD from residuals, Neumann sums, closed forms, thresholds). Modules by
theme: ``gd_construction`` (one GD step, stacked layers and OLS), ``newton_schulz``,
``bayes``, ``trained_linear_attention`` (trained LSA vs GD and Ahn et al.'s preconditioner),
``task_diversity`` and ``induction_heads`` (trained transformers). Full-tier experiments go
through ``experiments.memo.memoized`` so that a claim and its falsifier train only once.
"""
