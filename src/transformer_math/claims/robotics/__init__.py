"""Claims ``robotics.*`` (000 §8.3.8): compounding error, chunking, multimodality, DT limits.

Full tier: every check trains the project's policies (``robotics/policies``) in its environments
(``robotics/envs``) through the experiments ``experiments/robotics_*.py`` at the size of the
context, over ``ctx.seeds`` seeds (``claims.seeds.over_seeds``), and decides on the worst seed.
Trainings go through ``experiments.memo.memoized``, which reuses a training under a
planted bug whose site it never passes (a falsifier in the executor or the DT's rollout does not
retrain). Quick tier (``mechanics``): the executors, the return-to-go, the DT's causal
conditioning and ACT's CVAE objective on scripted inputs, no training; they kill every planted
``robotics.*`` bug. Modules: ``chunking`` (compounding error, chunking trade-off), ``multimodal``
(MSE vs CVAE), ``decoders`` (diffusion, flow matching and binned AR heads, sampler steps),
``decision_transformer`` (stitching, return reachability), ``mechanics`` and
``decoder_mechanics`` (the decoders' samplers with exact networks: quick, no training).
"""
