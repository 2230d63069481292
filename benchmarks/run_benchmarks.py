"""Run the project's benchmarks: the same as ``tmath bench`` (arguments are passed through).

    python benchmarks/run_benchmarks.py                       # every benchmark
    python benchmarks/run_benchmarks.py -k attention.fast --repeats 30 --json bench-results.json

Benchmarks live in ``transformer_math/bench/`` (see that package's docstring); this script only
forwards to the command line so that there is one way to run them.
"""

from __future__ import annotations

import sys

from transformer_math.cli import main

if __name__ == "__main__":
    main(["bench", *sys.argv[1:]])
