"""Claims of 000 §8.3.4: what a Transformer can represent (expressivity).

Each check compares a prediction of the theory with a value measured from the project's own
modules (the one ``Transformer`` through ``experiments.presets``, ``MultiHeadAttention``,
explicit approximants, trained experiments). Modules: ``equivariance`` (no positions, no order),
``component_ablation`` (attention vs FFN), ``contextual_mapping`` (Yun et al.'s codes; one
layer suffices, Kajitsuka & Sato 2024), ``ffn_lookup`` (a two-layer ReLU FFN maps the codes to
any targets), ``depth_separation`` (Telgarsky's sawtooth), ``approximation`` (the rate
eps^(-d/s)).
"""
