"""Claims ``robotics.*`` (000 §8.3.8): compounding error, chunking, multimodality, DT limits.

Full tier: every check trains the project's policies (``robotics/policies``) in its environments
(``robotics/envs``) through the experiments ``experiments/robotics_*.py`` at the size of the
context, over ``ctx.seeds`` seeds (``claims.seeds.over_seeds``), and decides on the worst seed.
Trainings go through ``experiments.memo.memoized``, which reuses a training under a
planted bug whose site it never passes (a falsifier in the executor or the DT's rollout does not
retrain). Quick tier: the DT's causal conditioning (``mechanics``), the AR decoder's sequential
step count (``ar_steps``), the chunked compounding bound (``bounds``) and DT vs RWR (``rwr``);
ACT's ensembling weights (``mechanics``) and the papers' reports (``sources``) are cited.
Modules: ``chunking`` (compounding error, chunking trade-off), ``multimodal`` (MSE vs CVAE),
``latent`` (ACT's zero latent), ``decoders`` (diffusion, flow matching and binned AR heads,
sampler steps), ``decision_transformer`` (stitching, return reachability).

Issue 31 moved the implementation checks (receding horizon, return-to-go, ACT's CVAE loss, the
decoders' samplers with exact networks, the ensembler's closed form) to
``tests/robotics/test_mechanics_checks.py``; their bugs name those tests (``Bug.test``).
"""
