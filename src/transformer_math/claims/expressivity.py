"""Claims of 000 §8.3.4: what a Transformer can represent (expressivity).

Each check compares a prediction of the theory with a value measured from the project's own
modules (TinyTransformer, MultiHeadAttention, explicit approximants, trained experiments).
"""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Size,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
    close_to,
)
from transformer_math.data.sequence_tasks import TaskSpec, equivariant_accuracy_ceiling
from transformer_math.diagnostics.sensitivity import fit_loglog_slope
from transformer_math.experiments import component_ablation, position_equivariance
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.tiny_transformer import (
    BLOCKS,
    TinyTransformerConfig,
    build_tiny_transformer,
)
from transformer_math.theory.approximation import (
    bilinear_grid_approximant,
    neurons_for_accuracy,
    rate_exponent,
    relu_interpolant_1d,
)

SEED_000_84 = "000 §8.3.4"


# ---------------------------------------------------------------- no positions => equivariant
@claim(
    "expressivity.no-position-equivariant",
    source=f"{SEED_000_84} (Yun et al., ICLR 2020, Theorem part 1); 000 §8.3.1 property (3); "
    "exercise 8.3.4-2",
    statement="""Without a position code every Transformer is permutation equivariant: equal
    tokens get equal outputs wherever they stand, so targets such as reverse or copy-first can
    only be met up to the equivariant Bayes ceiling; a position code breaks the symmetry.""",
    tier="quick",
    falsifier=Falsifier(
        "learned absolute positions",
        {"positions": "learned"},
        "the same random models with a learned position table: equal tokens differ",
    ),
)
def check_no_position_equivariant(ctx: Context, positions: str = "none") -> Evidence:
    """Random (untrained) TinyTransformers of every block kind, 1 and 2 layers, float64:
    max |f(x)_i - f(x)_j| over positions with x_i = x_j, and max |f(P x) - P f(x)|."""
    models_per_kind = 1 if ctx.size is Size.TINY else 3
    spec = TaskSpec(vocab_size=4, seq_len=8)
    gen = ctx.generator(11)
    x = torch.randint(0, spec.vocab_size, (16, spec.seq_len), generator=gen)
    perm = torch.randperm(spec.seq_len, generator=gen)
    equal_gap, perm_gap, scale = 0.0, 0.0, 0.0
    same = x[:, :, None] == x[:, None, :]  # (B, n, n) equal-token pairs
    count = 0
    for block, layers, r in itertools.product(BLOCKS, (1, 2), range(models_per_kind)):
        cfg = TinyTransformerConfig(vocab_size=spec.vocab_size, num_outputs=6, embed_dim=16,
                                    num_heads=2, num_layers=layers, block=block,
                                    positions=positions, max_len=spec.seq_len)
        model = build_tiny_transformer(cfg, ctx.seed * 1000 + 17 * count + r).double()
        with torch.no_grad():
            learned = getattr(model.positions, "table", None)
            if learned is not None:  # a trained table is far from its 0.02 init; use unit scale
                learned.weight.normal_(0.0, 1.0, generator=gen)
            y = model(x)  # (B, n, C)
            y_perm = model(x[:, perm])
        diff = (y[:, :, None, :] - y[:, None, :, :]).abs().amax(-1)  # (B, n, n)
        equal_gap = max(equal_gap, float(diff[same].max()))
        perm_gap = max(perm_gap, float((y_perm - y[:, perm]).abs().max()))
        scale = max(scale, float(y.abs().max()))
        count += 1
    tol = 1e-9 * max(1.0, scale)  # float64 rounding through two blocks (~1e-15 relative)
    unit = max(1.0, scale)
    margins = [
        at_most("max |f(x)_i - f(x)_j| over x_i = x_j, / max(1, output scale)",
                equal_gap / unit, 1e-9),
        at_most("max |f(P x) - P f(x)| / max(1, output scale)", perm_gap / unit, 1e-9),
    ]
    ok = all_hold(margins)
    ceil_gen = ctx.generator(12)
    ceilings = {
        task: equivariant_accuracy_ceiling(task, spec, 4000, ceil_gen)
        for task in ("reverse", "copy_first")
    }
    return Evidence(
        predicted={"equal_token_gap": 0.0, "permutation_gap": 0.0},
        measured={"equal_token_gap": equal_gap, "permutation_gap": perm_gap},
        tolerance=tol,
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"{count} random models (blocks {', '.join(BLOCKS)}; 1 and 2 layers), positions="
            f"{positions!r}, float64; inputs of length {spec.seq_len} over {spec.vocab_size} "
            "tokens so that equal tokens recur.",
            "Tolerance 1e-9 x output scale: exact symmetry up to float64 rounding.",
            "Consequence (exact given the multiset, Monte Carlo over 4000 multisets): no model "
            f"without positions exceeds accuracy {ceilings['reverse']:.3f} on reverse or "
            f"{ceilings['copy_first']:.3f} on copy-first at n = {spec.seq_len}, V = "
            f"{spec.vocab_size}. Training: claim expressivity.no-position-fit.",
        ],
        details={"equivariant_ceilings": ceilings, "output_scale": scale},
    )


@claim(
    "expressivity.no-position-fit",
    source=f"{SEED_000_84} (Yun et al., ICLR 2020, Theorem parts 1 and 2)",
    statement="""Trained on a non-equivariant target (reverse), a model without positions stays
    at or below the exact equivariant Bayes ceiling, while the same model with learned
    positions fits it.""",
    tier="full",
    falsifier=Falsifier(
        "positions in the 'no-position' arm",
        {"no_position_arm": "learned"},
        "give the supposedly position-free arm a learned position table: it beats the ceiling",
    ),
)
def check_no_position_fit(ctx: Context, no_position_arm: str = "none") -> Evidence:
    arms = (no_position_arm, "learned")
    cfg = ctx.preset(position_equivariance.PositionEquivarianceConfig)(
        seed=ctx.seed, arms=tuple(dict.fromkeys(arms))
    )
    res = position_equivariance.run(cfg, progress=ctx.report_progress)
    acc_free = res.results[no_position_arm].eval_accuracy
    acc_pos = res.results["learned"].eval_accuracy
    if res.exact_eval:
        # every one of the V^n inputs evaluated once: exact accuracies, ceiling exact on the same
        # inputs; the inequality is exact and the tolerance is float rounding only
        tol, tol_text = 1e-9, f"float rounding (exact evaluation on all {cfg.spec.vocab_size}^" \
            f"{cfg.spec.seq_len} inputs)"
    else:
        # accuracy over eval_size sequences: 3 binomial standard errors at p = 1/2 (positions of
        # one sequence are correlated, so the sequence count is the honest sample size)
        tol = 3 * math.sqrt(0.25 / cfg.train.eval_size)
        tol_text = f"3 binomial standard errors over {cfg.train.eval_size} evaluation sequences"
    fit_threshold = 0.9
    margins = [
        at_most("no-position accuracy - equivariant ceiling", acc_free - res.equivariant_ceiling,
                tol),
        at_least("accuracy with learned positions", acc_pos, fit_threshold),
    ]
    ok = all_hold(margins)
    figure = Figure(
        title=f"{cfg.task}: training loss with and without positions",
        xlabel="step", ylabel="cross-entropy (nats)",
        series=[Series(f"positions={k}", [float(s) for s in v.curve_steps], v.curve_losses)
                for k, v in res.results.items()],
    )
    return Evidence(
        predicted={"no_positions_accuracy_at_most": round(res.equivariant_ceiling + tol, 4),
                   "with_positions_accuracy_at_least": fit_threshold},
        measured={"no_positions_accuracy": round(acc_free, 4),
                  "with_positions_accuracy": round(acc_pos, 4)},
        tolerance=tol,
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"task {cfg.task}, n = {cfg.spec.seq_len}, V = {cfg.spec.vocab_size}; "
            f"{cfg.num_layers}-layer full blocks, d = {cfg.embed_dim}, {cfg.train.steps} steps; "
            f"equivariant ceiling {res.equivariant_ceiling:.4f} (exact given the multiset).",
            f"Tolerance: {tol_text}. 'Fits' means accuracy >= 0.9 (chance is 1/V).",
            "issue 12 (tiny failed at seed 0: 20 steps fitted nothing, 0.36 with positions): "
            "tiny now trains 500 steps x batch 64 and evaluates on all 4^4 = 256 inputs, so "
            "the accuracies and the ceiling are exact and the no-position bound is an exact "
            "inequality (before: 64 sampled sequences, tolerance 0.19).",
            f"run time {res.seconds:.1f} s",
        ],
        figures=[figure],
        details={"ceiling": res.equivariant_ceiling,
                 "eval_loss": {k: v.eval_loss for k, v in res.results.items()},
                 "seconds": {k: v.seconds for k, v in res.results.items()}},
    )


# ---------------------------------------------------------------- component ablation
@claim(
    "expressivity.component-ablation",
    source=f"{SEED_000_84} ('反面': FFN-only, attention-only, one layer; '核心洞察: 两者缺一不可'; "
    "Yun et al. 2020 proof steps 2-3); exercises 8.3.4-1 and 8.3.4-3 (Arqand et al. 2025)",
    statement="""On a task that needs both context and a nonlinearity (y_i = T[x_i, k], k = number
    of high tokens): an FFN-only model stays at the token-wise Bayes ceiling, the full block
    succeeds with one layer, and a one-layer attention-only model falls short of it. The seed's
    'attention and FFN are both indispensable' is refuted: with two layers, attention alone
    (softmax as the nonlinearity) also fits the task.""",
    tier="full",
    falsifier=Falsifier(
        "a task without context",
        {"task": "context_free"},
        "y_i = T[x_i, 0]: the check must notice that FFN-only no longer fails",
    ),
)
def check_component_ablation(ctx: Context, task: str = "context_lookup") -> Evidence:
    cfg = ctx.preset(component_ablation.ComponentAblationConfig)(seed=ctx.seed, task=task)
    res = component_ablation.run(cfg, progress=ctx.report_progress)
    acc = {k: v.eval_accuracy for k, v in res.results.items()}
    ffn = max(v for k, v in acc.items() if k.startswith("ffn_only"))
    full_1 = acc.get("full/1L", math.nan)
    attn_1 = acc.get("attention_only/1L", math.nan)
    attn_deep = max((v for k, v in acc.items()
                     if k.startswith("attention_only") and not k.endswith("/1L")),
                    default=math.nan)
    success, gap = 0.9, 0.1
    if res.exact_eval:  # all V^n inputs evaluated: exact accuracies, tolerance = float rounding
        tol = 1e-9
        tol_text = f"float rounding (exact evaluation on all {cfg.spec.vocab_size}^" \
            f"{cfg.spec.seq_len} inputs)"
    else:
        tol = 3 * math.sqrt(0.25 / cfg.train.eval_size)
        tol_text = f"3 binomial standard errors over {cfg.train.eval_size} evaluation sequences"
    margins = [
        at_most("FFN-only accuracy - token-wise ceiling", ffn - res.tokenwise_ceiling, tol),
        at_most("FFN-only accuracy (fails: <= 0.9)", ffn, success),
        at_least("full block, 1 layer, accuracy", full_1, success),
        at_least("full/1L - attention_only/1L accuracy", full_1 - attn_1, gap),
    ]
    if not math.isnan(attn_deep):
        margins.append(at_least("attention-only, 2 layers, accuracy (seed refuted)", attn_deep,
                                success))
    checks = {m.name: m.holds for m in margins}
    ok = all_hold(margins)
    names = list(res.results)
    figure = Figure(
        title=f"Component ablation on {task}: final evaluation loss",
        xlabel="variant (index)", ylabel="cross-entropy (nats)",
        series=[Series(name, [float(i)], [res.results[name].eval_loss], kind="bar")
                for i, name in enumerate(names)],
    )
    curves = Figure(
        title=f"Component ablation on {task}: training loss",
        xlabel="step", ylabel="cross-entropy (nats)",
        series=[Series(k, [float(s) for s in v.curve_steps], v.curve_losses)
                for k, v in res.results.items()],
    )
    return Evidence(
        predicted={"ffn_only_at_most": round(min(res.tokenwise_ceiling + tol, success), 4),
                   "full/1L_at_least": success, "attention_only/1L_at_most": "full/1L - 0.1",
                   "attention_only/2L_at_least": success},
        measured={k: round(v, 4) for k, v in acc.items()},
        tolerance=tol,
        verdict=agreement(ok, refutes_seed=True),
        margins=margins,
        notes=[
            f"task {task}: V = {cfg.spec.vocab_size}, n = {cfg.spec.seq_len}, "
            f"C = {cfg.spec.num_classes}; d = {cfg.embed_dim}, {cfg.num_heads} heads, "
            f"{cfg.train.steps} steps x batch {cfg.train.batch_size}, no positions "
            "(the task is permutation equivariant); one seed.",
            f"token-wise Bayes ceiling (exact) {res.tokenwise_ceiling:.4f}; tolerance: "
            f"{tol_text}.",
            "What the seed gets right: without attention no context (FFN-only sits exactly at "
            "the ceiling); one attention layer without an FFN falls short (a likely reason, "
            "not proven here: for a fixed own token, one head's output moves along a segment "
            "between value means as k varies, so a linear readout of it is monotone in k, and "
            "two heads add little). What it gets wrong: 'both are "
            "indispensable'. The first design of this check predicted attention-only to fail "
            "at both depths; the measurement (two layers fit the task) is kept and the "
            "statement corrected, in line with exercise 8.3.4-3 (Arqand et al. 2025).",
            "issue 12 (tiny failed at seed 0: 20 steps x batch 16 trained nothing, full/1L "
            "0.86): tiny is now V = 4, n = 6, C = 4 (token-wise ceiling 0.461 instead of "
            "0.875; see ComponentAblationConfig.tiny), d = 32, 800 steps x batch 64, "
            "attention-only with "
            "2 layers included, and every model is evaluated on all 4^6 inputs (exact "
            "accuracies; tolerance float rounding instead of 3 standard errors of 64 "
            "sequences, 0.19).",
            "checks: " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in checks.items()),
            f"run time {res.seconds:.1f} s",
        ],
        figures=[figure, curves],
        details={"accuracy": acc, "loss": {k: v.eval_loss for k, v in res.results.items()},
                 "tokenwise_ceiling": res.tokenwise_ceiling, "checks": checks,
                 "seconds": {k: v.seconds for k, v in res.results.items()}},
    )


# ---------------------------------------------------------------- contextual mapping
def _sinusoid(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / (10000.0 ** (i / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


@claim(
    "expressivity.contextual-mapping",
    source=f"{SEED_000_84} (toy example 'aa, ab, ba, bb'); Yun et al., ICLR 2020, Definition 3.1",
    statement="""For vocabulary {a, b} and n = 2, one self-attention layer (with residual) gives
    every (token, position, context) entry of the four sequences a distinct code: the minimum
    pairwise distance of the 8 codes is positive with margin, including the pairs that share
    token and position and differ only in context.""",
    tier="quick",
    falsifier=Falsifier(
        "no attention (token-wise map only)",
        {"mixer": "none"},
        "codes computed without attention: a@1 in 'aa' and in 'ab' coincide",
    ),
)
def check_contextual_mapping(ctx: Context, mixer: str = "attention") -> Evidence:
    if mixer not in ("attention", "none"):
        raise ValueError(f"mixer must be 'attention' or 'none', got {mixer!r}")
    d, trials = 8, (5 if ctx.size is Size.TINY else 50)
    sequences = ["aa", "ab", "ba", "bb"]
    ids = torch.tensor([[0 if c == "a" else 1 for c in s] for s in sequences])  # (4, 2)
    worst_all, worst_context, worst_ratio = math.inf, math.inf, math.inf
    example: dict[str, float] = {}
    gen = ctx.generator(21)
    for _ in range(trials):
        emb = torch.randn(2, d, generator=gen, dtype=torch.float64)
        x = emb[ids] + _sinusoid(2, d)  # (4, 2, d)
        with no_init_draws():  # every weight is drawn from ``gen`` below
            attn = MultiHeadAttention(d, 2, backend="reference").double()
        with torch.no_grad():
            for p in attn.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / math.sqrt(d))
            codes = x + attn(x).output if mixer == "attention" else x.clone()
        flat = codes.reshape(8, d)
        labels = [(s, pos) for s in sequences for pos in range(2)]
        dist = torch.cdist(flat, flat)
        off = ~torch.eye(8, dtype=torch.bool)
        median = float(dist[off].median())
        worst_all = min(worst_all, float(dist[off].min()))
        ctx_pairs = [
            float(dist[i, j]) for i, j in itertools.combinations(range(8), 2)
            if labels[i][1] == labels[j][1] and labels[i][0][labels[i][1]]
            == labels[j][0][labels[j][1]]
        ]
        worst_context = min(worst_context, min(ctx_pairs))
        worst_ratio = min(worst_ratio, float(dist[off].min()) / median)
        if not example:
            example = {"a@1 in ab": float(flat[2, 0]), "a@1 in aa": float(flat[0, 0]),
                       "a@2 in ba": float(flat[5, 0]), "a@2 in aa": float(flat[1, 0])}
    threshold = 1e-4
    # In decades: the threshold is set in orders of magnitude (float32 resolution 1.2e-7 with
    # three to spare), so the distance to it is measured in orders of magnitude too.
    margins = [at_least("log10(min pairwise code distance / median distance)",
                        math.log10(worst_ratio) if worst_ratio > 0 else -math.inf,
                        math.log10(threshold))]
    ok = all_hold(margins)
    return Evidence(
        predicted={"min_distance_over_median_at_least": threshold},
        measured={"min_pairwise_distance": worst_all,
                  "min_same_token_same_position_distance": worst_context,
                  "min_distance_over_median": worst_ratio},
        tolerance=threshold,
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"{trials} random single-layer attention maps (2 heads, d = {d}, float64) on "
            "token embedding + sinusoidal position; codes = x + Attn(x); worst case over trials.",
            "Margin: the smallest distance must exceed 1e-4 x the median distance, i.e. the codes "
            "stay distinct even after rounding to float32 (relative resolution 1.2e-7) with three "
            "orders to spare. The pairs that share token and position differ only through the "
            "attention term: that is the 'tail' of the seed's toy encoding.",
            "issue 12: the margin is reported in decades, log10(ratio) >= -4 (the same verdict): "
            "the ratio itself varies 0.06-0.2 between seeds, three orders above the threshold, "
            "and its linear spread says nothing about how close a seed comes to 1e-4.",
            "first coordinate of some codes (trial 1): "
            + ", ".join(f"{k}: {v:.4f}" for k, v in example.items()),
        ],
        details={"example_codes_first_coordinate": example, "trials": trials},
    )


# ---------------------------------------------------------------- approximation rate
_EXPONENT_RULES = {
    "d/s": rate_exponent,
    "s/d": lambda d, s: s / d,  # the falsifier: smoothness and dimension swapped
}


def _measured_exponents(ctx: Context) -> dict[str, dict[str, float]]:
    """Fit eps(N) ~ N^(-s/d) for explicit approximants; return the measured d/s per case."""
    small = ctx.size is Size.TINY
    x = torch.linspace(-1, 1, 4001 if small else 20001, dtype=torch.float64)[:, None]
    cases = {}
    one_d = {
        "d=1,s=2 (sin 3x, ReLU net)": (lambda t: torch.sin(3 * t), 1, 2.0),
        "d=1,s=1.5 (|x|^1.5, ReLU net)": (lambda t: t.abs() ** 1.5, 1, 1.5),
    }
    units = [15, 31, 63, 127] if small else [15, 31, 63, 127, 255, 511]  # odd: 0 mid-cell
    for name, (fn, dim, s) in one_d.items():
        errs = []
        for m in units:
            with torch.no_grad():
                errs.append(float((relu_interpolant_1d(fn, m)(x) - fn(x)).abs().max()))
        fit = fit_loglog_slope([float(m) for m in units], errs)
        cases[name] = {"dim": dim, "s": s, "measured_d_over_s": -1.0 / fit.slope,
                       "r2": fit.r_squared, "units": units, "errors": errs}
    pts = torch.rand(10_000 if small else 40_000, 2, generator=ctx.generator(31),
                     dtype=torch.float64) * 2 - 1

    def f2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sin(2 * a) * torch.cos(3 * b)

    per_axis = [5, 9, 17, 33] if small else [5, 9, 17, 33, 65]
    errs = []
    for m in per_axis:
        approx = bilinear_grid_approximant(f2, m)
        errs.append(float((approx(pts) - f2(pts[:, 0], pts[:, 1])).abs().max()))
    params = [float(m * m) for m in per_axis]
    fit = fit_loglog_slope(params, errs)
    cases["d=2,s=2 (sin 2x cos 3y, bilinear grid)"] = {
        "dim": 2, "s": 2.0, "measured_d_over_s": -1.0 / fit.slope, "r2": fit.r_squared,
        "units": params, "errors": errs}
    return cases


@claim(
    "expressivity.approximation-rate",
    source=f"{SEED_000_84} ('逼近率与深度-宽度权衡'), exercise 8.3.4-4; DeVore, Howard & "
    "Micchelli 1989; Yarotsky 2017",
    statement="""Approximating a function of smoothness s in dimension d to accuracy eps needs
    about eps^(-d/s) units: d = 10, s = 2, eps = 0.1 gives 1e5; s = 5 gives 1e2. The exponent
    d/s is measured on explicit approximants (ReLU interpolants in d = 1, a bilinear grid in
    d = 2).""",
    tier="quick",
    falsifier=Falsifier(
        "exponent s/d instead of d/s",
        {"exponent_rule": "s/d"},
        "the rate with dimension and smoothness swapped",
    ),
)
def check_approximation_rate(ctx: Context, exponent_rule: str = "d/s") -> Evidence:
    if exponent_rule not in _EXPONENT_RULES:
        raise ValueError(f"exponent_rule must be one of {sorted(_EXPONENT_RULES)}, "
                         f"got {exponent_rule!r}")
    rule = _EXPONENT_RULES[exponent_rule]
    exercise_answers = {"d=10,s=2,eps=0.1": 1e5, "d=10,s=5,eps=0.1": 1e2}  # exercise 8.3.4-4
    if exponent_rule == "d/s":
        calculator = {"d=10,s=2,eps=0.1": neurons_for_accuracy(0.1, 10, 2),
                      "d=10,s=5,eps=0.1": neurons_for_accuracy(0.1, 10, 5)}
    else:
        calculator = {"d=10,s=2,eps=0.1": 0.1 ** (-rule(10, 2)),
                      "d=10,s=5,eps=0.1": 0.1 ** (-rule(10, 5))}
    cases = _measured_exponents(ctx)
    rel = 0.05
    exponent_margins = {
        name: close_to(f"measured d/s, {name}", c["measured_d_over_s"], rule(c["dim"], c["s"]),
                       rel=rel)
        for name, c in cases.items()
    }
    exponent_ok = {name: m.holds for name, m in exponent_margins.items()}
    calc_err = max(abs(calculator[k] - v) / abs(v) for k, v in exercise_answers.items())
    calc_ok = calc_err <= 1e-9
    margins = [at_most("max relative error of the calculator vs the exercise's answers",
                       calc_err, 1e-9), *exponent_margins.values()]
    ok = all_hold(margins)
    figure = Figure(
        title="Approximation error vs number of units (log-log); slope -s/d",
        xlabel="units / parameters N", ylabel="sup error", logx=True, logy=True,
        series=[Series(name, [float(u) for u in c["units"]], c["errors"], style="o-")
                for name, c in cases.items()],
    )
    return Evidence(
        predicted={"exercise": exercise_answers,
                   "d_over_s": {k: rule(c["dim"], c["s"]) for k, c in cases.items()}},
        measured={"calculator": calculator,
                  "d_over_s": {k: round(c["measured_d_over_s"], 4) for k, c in cases.items()}},
        tolerance={"calculator_rel": 1e-9, "exponent_rel": rel},
        verdict=agreement(ok),
        margins=margins,
        notes=[
            "The exercise's numbers are the calculator's (theory/approximation.py) evaluated at "
            "the exercise's inputs and compared with the recorded answers 1e5 and 1e2.",
            "Measured exponents: sup error of explicit approximants fitted as N^(-s/d) by least "
            "squares in log-log; N = hidden ReLU units (d = 1) or grid values (d = 2). The "
            "|x|^1.5 case uses an odd number of segments so the kink sits mid-cell (no lucky "
            "alignment).",
            "Tolerance 5 % on d/s: pre-asymptotic curvature of the log-log fit over N = 15..511 "
            "(the measured fits have R^2 > 0.999).",
            "This measures the rate of grid/interpolation schemes in d <= 2; d = 10 is only "
            "computed, not measured (1e5 units are easy, but a sup error in 10-D is not).",
        ],
        figures=[figure],
        details={"cases": cases, "calculator_ok": calc_ok, "exponent_ok": exponent_ok},
    )
