"""transformer-math: the mathematics of Transformers, checked by running code.

Layers (ARCHITECTURE.md): ``functional`` (pure tensor math) -> ``nn`` (modules) -> ``theory``
(closed forms) -> ``diagnostics`` -> ``data`` -> ``experiments`` -> ``claims`` (the registry) ->
``report`` and ``cli``.

Bitwise reproducibility. PyTorch's CPU build does its matrix products in Intel MKL, whose kernels
choose a code path by the memory alignment of their operands: the same float64 product on the
same numbers changed in its last bit in 12 of 56 trials with shifted buffers here, so a claim's
numbers could depend on what ran before it (the order test of issue 12 caught 1 ulp in
``icl.neumann-ols``). MKL's strict conditional-numerical-reproducibility mode removes that
(0 of 56, at no measured cost). Importing the package before torch sets ``MKL_CBWR=AUTO,STRICT``
unless the variable is already set; MKL reads it at its first call, so it cannot be set once
torch has run.
"""

import os as _os
import sys as _sys

if "torch" not in _sys.modules:
    _os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

__version__ = "0.1.0"
