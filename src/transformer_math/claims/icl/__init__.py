"""Claims of 000 §8.3.6: in-context learning as gradient descent, Bayes, diversity, induction.

Kinds (issue 31): constructions (the project's linear self-attention or Transformer loaded with
hand-set weights: ``gd_construction`` one GD step and stacked layers -> OLS, ``depth_precision``
layers vs condition number, ``demo_risk`` risk vs number and noise of demos, ``newton_schulz``
the iteration run by one looped LSA layer, the hand-built induction circuit); measurements on
trained models or library code (``trained_linear_attention``: trained LSA vs GD and Ahn et al.'s
preconditioner, and the Monte Carlo moment of Gamma on the library's sampler;
``task_diversity``: trained transformers and the prompt layout; ``induction_heads``: trained
transformers); and one analytic model (``bayes``). Full-tier experiments go through
``experiments.memo.memoized`` so that a claim trains once per seed; training claims run
``ctx.seeds`` seeds (``claims.seeds.over_seeds``) and decide on the worst. Every falsifier is a
bug planted in the library (``transformer_math.bugs``); a measurement's sits on the model side
(the sampler, the layer, the training loop), so its falsifier run trains again.
"""
