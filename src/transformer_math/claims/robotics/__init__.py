"""Claims ``robotics.*`` (000 §8.3.8): compounding error, chunking, multimodality, DT limits.

Every check trains the project's policies (``robotics/policies``) in its environments
(``robotics/envs``) through the experiments ``experiments/robotics_*.py`` at the size of the
context, and compares the seed's (or the literature's) qualitative prediction with the measured
numbers. Trained runs go through ``experiments.memo.memoized``, so a falsifier that changes only
the executor does not retrain. Modules: ``chunking`` (compounding error, chunking trade-off),
``multimodal`` (MSE vs CVAE), ``decision_transformer`` (stitching, return reachability).
"""
