"""The PARITY construction's margin (000 §8.3.5 exercise 8.3.5-5; Chiang & Cholak, ACL 2022).

A fixed-n soft-attention construction (``theory/parity_margin.py``) computes PARITY exactly, but
its output is y = (-1)^k / (n + 1): the decision margin shrinks like 1/(n + 1), so the gain that
reads it at a fixed confidence grows like n + 1.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.data.parity import parity
from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.theory.parity_margin import ParityMarginConstruction, exhaustive_bits

SEED_000_85 = "000 §8.3.5"


def _margin_figure(lengths: list[int], margins: list[float], predicted: list[float]) -> Figure:
    return Figure(
        title="PARITY construction: decision margin vs n",
        xlabel="n", ylabel="min |y| over inputs", logx=True, logy=True,
        series=[
            Series("measured margin", [float(n) for n in lengths], margins, style="o-"),
            Series("1/(n+1)", [float(n) for n in lengths], predicted, style="--"),
        ],
    )


@claim(
    "computation.parity-margin",
    source=f"{SEED_000_85} (exercise 8.3.5-5); Chiang & Cholak, ACL 2022",
    statement="""A fixed-n soft-attention construction computes PARITY exactly for every n, but
    its decision margin, measured through the project's softmax attention (uniform weights over
    the n + 1 keys), is 1/(n+1) (log-log slope -1), so the gain needed to read it at a fixed
    confidence, and the FFN's own input gain, grow linearly with n.""",
    tier="quick",
    falsifier="computation.parity-position-off-by-one",
    expected="verified",
    version=2,
    seed_refs=[("000", 866, 866), ("000", 893, 893)],
)
def check_parity_margin(ctx: Context) -> Evidence:
    lengths = [2, 4, 8, 16, 64, 128] if ctx.size is Size.TINY else [2, 4, 8, 16, 64, 256, 1024]
    margins, predicted, accuracy = [], [], []
    for n in lengths:
        bits = (exhaustive_bits(n) if n <= 12
                else torch.randint(0, 2, (16, n), generator=ctx.generator(300 + n)))
        net = ParityMarginConstruction(n)  # the library's construction, gain n + 1
        scores = net.score(bits)
        margins.append(float(scores.abs().min()))
        predicted.append(ParityMarginConstruction(n).predicted_margin())
        accuracy.append(float((net.predict(bits) == parity(bits)).double().mean()))
    # float64 sums of n + 1 terms: relative rounding <= (n + 1) * 1.1e-16 < 1e-12 here
    rel = 1e-9
    # a zero margin (a wrong construction) has no logarithm: the slope is then undefined (nan)
    slope = (fit_power_law([float(n + 1) for n in lengths], margins).exponent
             if min(margins) > 0 else float("nan"))
    conditions = [
        at_most("max over n of |margin - 1/(n+1)| / (1/(n+1))",
                max(abs(m - p) / p for m, p in zip(margins, predicted, strict=True)), rel),
        at_least("min over n of the accuracy", min(accuracy), 1.0),
        # margins within 1e-9 relative of (n+1)^-1 move the fitted slope by < 1e-8
        close_to("log-log slope of the margin vs n + 1", slope, -1.0, abs_=1e-6),
    ]
    figure = _margin_figure(lengths, margins, predicted)
    return Evidence(
        predicted={"margin": "1/(n+1)", "accuracy": 1.0, "slope_vs_n+1": -1.0},
        measured={"margins": [float(f"{m:.6g}") for m in margins], "accuracy": min(accuracy),
                  "slope_vs_n+1": round(slope, 4),
                  "required_gain": [round(1 / m, 2) if m > 0 else None for m in margins]},
        tolerance={"margin_rel": rel},
        verdict=decide(conditions),
        notes=[
            "Two uniform-attention layers (the project's MultiHeadAttention on its reference "
            "softmax backend, W_Q = W_K = 0, float64) and a token-wise ReLU network with input "
            "gain n + 1; inputs exhaustive for n <= 12, 16 random strings otherwise. The 1/(n+1) "
            "is not written into any weight: it is the softmax weight of each of the n + 1 keys "
            "(BOS and the bits), so the measured margin tests the project's attention.",
            "version 2 (issue 14): backend sdpa -> reference (the project's own softmax); "
            "falsifier = planted bug computation.parity-position-off-by-one in "
            "theory/parity_margin.py (positions i / n instead of i / (n + 1)); it was a gain "
            "chosen by the check; slope margin added.",
            "Required gain = 1 / margin: the amplification that maps the margin to a fixed "
            "confidence of 1 (what Chiang & Cholak's layer normalisation provides); it equals "
            "n + 1, and the FFN's input gain is n + 1 as well.",
            "Simplified construction in the spirit of Chiang & Cholak (our weights, not the "
            "paper's). Worked values: n = 3, bits 101 -> y = +1/4, bits 100 -> y = -1/4.",
        ],
        figures=[figure],
        details={"lengths": lengths, "accuracy": accuracy, "predicted_margin": predicted},
        margins=conditions,
    )
