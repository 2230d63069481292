"""transformer-math: the mathematics of Transformers, checked by running code.

Layers (ARCHITECTURE.md): ``functional`` (pure tensor math) -> ``nn`` (modules) -> ``theory``
(closed forms) -> ``diagnostics`` -> ``data`` -> ``experiments`` -> ``claims`` (the registry) ->
``report`` and ``cli``.
"""

__version__ = "0.1.0"
