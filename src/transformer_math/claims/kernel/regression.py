"""Softmax attention and the Gaussian kernel (000 §8.3.2 theory A), in float64.

- ``kernel.gaussian-equivalence``: with equal key norms, softmax(q.k / s^2) rows are the
  normalised Gaussian-kernel rows exp(-|q - k|^2 / 2 s^2); with unequal norms only after the
  key factor exp(|k|^2 / 2 s^2) is put back (the seed says both factors cancel).

Issue 31: ``kernel.nadaraya-watson`` (attention = Nadaraya-Watson with the exponential kernel,
the definition rewritten) was retired to ``tests/nn/test_attention_kernel_identities.py``.
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Refutation,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.i18n.message import msg
from transformer_math.nn.kernel_regression import GaussianKernel, nadaraya_watson_weights

F64 = torch.float64


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.gaussian-equivalence",
    source="000 §8.3.2 theory A (RKHS: softmax kernel = normalised Gaussian kernel)",
    statement="""softmax(q.k / s^2) rows equal the normalised rows of
    exp(-|q - k|^2 / 2 s^2) exp(|k|^2 / 2 s^2): the query factor exp(-|q|^2/2s^2) cancels in the
    row normalisation, the key factor exp(-|k|^2/2s^2) only when all keys have the same norm
    (then softmax rows are normalised Gaussian-kernel rows). The seed says both factors cancel.""",
    falsifier="attention.scale-as-temperature",
    expected="refuted",
    version=3,
    kind="measurement",
    audit="""Issue 31 review: minor (d2), the falsifier broke the reference GaussianKernel (the
    prediction side). Fixed: the falsifier is now attention.scale-as-temperature in
    functional.attention, the attention whose weights are measured (an explicit scale
    1/s^2 used as a temperature); the reference kernel is unchanged and its bandwidth bug is
    killed by tests/nn/test_attention_kernel_identities.py. The refutation of 000:472 (V in the
    review) is kept and now quotes the seed; 000:474's qualifier "在范数归一化的意义下" is the
    equal-norm case this claim verifies (first margin). The correction of 000:428 (Tsai et al.'s
    authors) moved here from the retired kernel.nadaraya-watson.""",
    seed_refs=[("000", 466, 474), ("000", 484, 484), ("000", 428, 428)],
    corrections=[Correction(
        "000", 428, "Tsai, Bahar, Yamada 等人（2019）《Transformer Dissection ...》",
        "the authors are Yao-Hung Hubert Tsai, Shaojie Bai, Makoto Yamada, Louis-Philippe "
        "Morency and Ruslan Salakhutdinov (the second author is Shaojie Bai)",
        "Tsai et al., 'Transformer Dissection: An Unified Understanding for Transformer's "
        "Attention via the Lens of Kernel', EMNLP-IJCNLP 2019, pp. 4344-4353 (ACL Anthology "
        "D19-1443; arXiv:1908.11775)")],
    refutes=[Refutation(
        seed="000", line=472,
        quote="两端的 \\(\\exp(-\\|q\\|^2/\\cdots)\\)、\\(\\exp(-\\|k\\|^2/\\cdots)\\) "
        "是只依赖单边范数的因子，在 softmax 的逐行归一化中会被约掉（分子分母同除）",
        reading="for arbitrary keys (the seed does not restrict their norms at 472), softmax "
        "rows equal the normalised Gaussian-kernel rows to float64 rounding",
        says="exp(-|q|^2/2s^2) and exp(-|k|^2/2s^2) both cancel in the row normalisation, so "
        "softmax attention is a normalised Gaussian kernel",
        correct="only the query factor cancels; the key factor cancels only when all keys have "
        "the same norm (otherwise softmax = Gaussian kernel x exp(|k|^2/2s^2), renormalised)")],
)
def check_gaussian_equivalence(ctx: Context) -> Evidence:
    """Softmax weights vs normalised Gaussian-kernel weights, for unit keys and general keys.

    Measurement: the attention weights of one set of queries against keys of unit norm and
    against the same keys rescaled to norms in [0.5, 1.5] (the project's attention), and the
    Gaussian-kernel weights of ``nn.kernel_regression`` for both. Margins (the correct
    statement): |softmax - Gaussian| <= 1e-12 for unit keys, and |softmax - Gaussian x
    exp(|k|^2/2s^2) renormalised| <= 1e-12 for general keys. Seed margin (000:472, "both factors
    cancel"): |softmax - Gaussian| <= 1e-12 for general keys as well.

    Version 2 (issue 14): the falsifier is a planted bug in the library's Gaussian kernel
    (bandwidth not squared), not keys of unequal norms drawn by the claim; the seed's omission
    (SEED_AUDIT 000:472) is now measured and the claim expects ``refuted``.

    Version 3 (issue 31): the falsifier is attention.scale-as-temperature in the attention
    being measured (``functional.attention``), no longer a bug of the reference kernel; the
    margins and thresholds are unchanged.
    """
    n, t, d, bandwidth = 20, 10, 8, 0.7
    g = ctx.generator(3)
    k_unit = torch.randn(n, d, generator=g, dtype=F64)
    k_unit = k_unit / k_unit.norm(dim=-1, keepdim=True)
    q = torch.randn(t, d, generator=g, dtype=F64) / math.sqrt(d)
    v = torch.randn(n, 3, generator=g, dtype=F64)
    k_general = k_unit * (0.5 + torch.rand(n, 1, generator=g, dtype=F64))  # norms in [0.5, 1.5]
    kernel = GaussianKernel(bandwidth)
    errors = {}
    for name, k in (("unit keys", k_unit), ("general keys", k_general)):
        out = scaled_dot_product_attention(
            q[None, None], k[None, None], v[None, None], scale=1.0 / bandwidth**2,
            return_weights=True,
        )
        assert out.weights is not None
        measured = out.weights[0, 0]
        gauss = nadaraya_watson_weights(q, k, kernel)
        # the key factor put back: Gaussian x exp(|k|^2 / 2 s^2), renormalised per row
        key_factor = torch.exp(k.pow(2).sum(-1) / (2 * bandwidth**2))
        corrected = gauss * key_factor
        corrected = corrected / corrected.sum(-1, keepdim=True)
        errors[name] = {"gaussian": float((measured - gauss).abs().max()),
                        "with key factor": float((measured - corrected).abs().max())}
    tol = 1e-12  # float64 exponentials of logits below ~10 in magnitude
    margins = [
        at_most("unit keys: max |softmax - Gaussian kernel weights|",
                errors["unit keys"]["gaussian"], tol),
        at_most("general keys: max |softmax - Gaussian x exp(|k|^2/2s^2) weights|",
                errors["general keys"]["with key factor"], tol),
    ]
    seed_margins = [
        at_most("seed 000:472: general keys, max |softmax - Gaussian kernel weights|",
                errors["general keys"]["gaussian"], tol),
    ]
    return Evidence(
        predicted={"unit keys": 0.0, "general keys, with key factor": 0.0},
        measured=errors,
        tolerance=tol,
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            msg("max |softmax attention weights - normalised kernel weights| in float64; the "
            "Gaussian side uses explicit differences q - k (nn.kernel_regression)."),
            msg("Tolerance 1e-12: float64 exponentials of logits below ~10 in magnitude."),
            msg("bandwidth s = {bandwidth} (beta = 1/s^2); {t} queries, {n} keys in d = {d}; "
                "general keys: the unit keys times norms uniform in [0.5, 1.5].",
                bandwidth=bandwidth, t=t, n=n, d=d),
            msg("Refuted (000:472): the seed lets exp(-|k|^2/2s^2) cancel too; it is a factor per "
            "key, not per row, so it cancels only for equal key norms."),
        ],
    )
