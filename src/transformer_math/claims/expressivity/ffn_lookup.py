"""The FFN as a lookup table (000:741; Yun et al. 2020 step 3; Zhang et al., ICLR 2017, Thm 1).

The codes of one self-attention layer (``contextual_mapping.code_model``: the project's
Transformer, one attention-only block) are distinct for every (token, position, context); a
two-layer ReLU network with one hidden unit per code (``theory/relu_lookup.py``) then maps them
to arbitrary targets exactly. Together: one attention layer and one ReLU FFN memorise an
arbitrary sequence-to-sequence function on a finite set of sequences (Kajitsuka & Sato, ICLR
2024, prove this for one layer in general).
"""

from __future__ import annotations

import torch

from transformer_math.claims.expressivity.contextual_mapping import (
    all_sequences,
    code_model,
    contextual_codes,
)
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Size,
    at_most,
    claim,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.theory.relu_lookup import relu_lookup


@claim(
    "expressivity.ffn-lookup",
    source="000 §8.3.4 (step 3 'FFN 查表', 000:741); Zhang, Bengio, Hardt, Recht & Vinyals, "
    "ICLR 2017, Theorem 1; Kajitsuka & Sato, ICLR 2024",
    statement="""A two-layer ReLU network with N hidden units maps N distinct codes to arbitrary
    targets exactly: applied to the 324 codes that one self-attention layer of the project's
    Transformer gives all 81 sequences of {a, b, c}^4, it reproduces random targets to within
    1e-6 (float64 rounding), so one attention layer plus one ReLU FFN memorise an arbitrary
    sequence-to-sequence map on that set.""",
    statement_zh="""一个有 N 个隐藏单元的两层 ReLU 网络可以把 N 个互不相同的编码精确映射到任意
    目标：作用于项目 Transformer 的一个自注意力层给 {a, b, c}^4 全部 81 个序列的 324 个编码，
    它以 1e-6 以内的误差（float64 舍入）重现随机目标，因此一个注意力层加一个 ReLU FFN
    就能在该集合上记住任意的序列到序列映射。""",
    tier="quick",
    falsifier="expressivity.relu-lookup-bias-on-point",
    expected="verified",
    version=1,
    kind="construction",
    audit="""Issue 31 review (a, d1: theory.relu_lookup builds the network that interpolates the
    N codes and the claim checks that it does; bug in the same construction): agreed that this
    is a construction and not evidence about the engine; declared kind construction. It is
    kept, not retired to a test, because it is the constructive half of the seed's step 3
    (000:741: a two-layer ReLU FFN maps finitely many distinct codes to any outputs), run on
    the codes the project's attention layer actually produces; the tautology the review names
    is what a construction check is (the proof, executed), and the report labels it so.
    theory.vla_design also cites it as a basis of decision point 1.""",
    seed_refs=[("000", 741, 743)],
)
def check_ffn_lookup(ctx: Context) -> Evidence:
    """Margins: max over trials and codes of |lookup(code) - target| <= 1e-6 (targets N(0, 1)
    in R^2); hidden width = number of codes. The float64 forward substitution's error grows
    like eps / (smallest gap between projected codes): gaps ~1e-5 give ~1e-9, so 1e-6 is
    rounding with room, while any inexact map (an approximation) errs by O(1)."""
    trials = 2 if ctx.size is Size.TINY else 10
    sequences = all_sequences(3, 4)
    ids = torch.tensor([[ord(c) - ord("a") for c in s] for s in sequences])
    worst, widths, min_gaps = 0.0, [], []
    gen = ctx.generator(611)
    for _ in range(trials):
        model = code_model(8, gen, vocab=3)
        codes = contextual_codes(model, ids).reshape(-1, 8)  # (324, 8)
        targets = torch.randn(codes.shape[0], 2, generator=gen, dtype=torch.float64)
        net = relu_lookup(codes, targets, gen)
        with torch.no_grad():
            err = float((net(codes) - targets).abs().max())
        worst = max(worst, err) if err == err else float("nan")
        widths.append(net[0].out_features)
        z = torch.sort(codes @ net[0].weight[0].detach()).values
        min_gaps.append(float((z[1:] - z[:-1]).min()))
    margins = [
        at_most("max |lookup(code) - target| over trials and codes", worst, 1e-6),
        at_most("hidden units - number of codes", max(widths) - codes.shape[0], 0.0),
    ]
    return Evidence(
        predicted={"max_error": 0.0, "hidden_units": codes.shape[0]},
        measured={"max_error": worst, "hidden_units": widths,
                  "min_gap_between_projected_codes": min_gaps},
        tolerance={"max_error": 1e-6},
        verdict=decide(margins),
        margins=margins,
        notes=[
            msg("{trials} random one-layer attention maps (expressivity.contextual-mapping's "
                "code_model, vocabulary 3, d = 8, float64) on all 81 sequences of length 4: 324 "
                "codes; targets N(0, 1) in R^2 per code; lookup = Linear(8, 324) -> ReLU -> "
                "Linear(324, 2) built by theory.relu_lookup (biases between sorted projections, "
                "output weights by forward substitution).", trials=trials),
            msg("The seed's step 3 (000:741) is right that a two-layer ReLU FFN maps finitely many "
                "distinct codes to any outputs; it is an exact interpolation (memorisation) result "
                "with N units, not only the approximation of the Cybenko/Leshno theorems."),
            msg("Falsifier: the biases placed on the points instead of between them (zero "
                "diagonal, non-finite output weights)."),
        ],
    )
