"""Depth vs width (000 §8.3.4 '深度换宽度', 000:767; Telgarsky, COLT 2016).

The seed's insight is that depth can save width exponentially. Measured on Telgarsky's
sawtooth (``theory/sawtooth.py``): k tent layers of width 2 (2k ReLU units) make 2^k linear
pieces, while a one-hidden-layer ReLU network with m units has at most m + 1 pieces, so it needs
2^k - 1 units for the same function; the interpolant with 2^k units attains it (tight).
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.i18n.message import msg
from transformer_math.nn.init import no_init_draws
from transformer_math.theory.approximation import relu_interpolant_1d
from transformer_math.theory.sawtooth import count_linear_pieces, sawtooth_network

F64 = torch.float64


def _random_shallow(m: int, g: torch.Generator, cells: int) -> torch.nn.Sequential:
    """x -> sum_j c_j ReLU(w_j x + b_j) with breakpoints -b_j / w_j at random points of the
    uniform grid of ``cells`` cells of [0, 1] (a breakpoint inside a cell would make that cell's
    secant slope differ from both neighbours and be counted twice)."""
    w = torch.randn(m, generator=g, dtype=F64)
    b = -w * torch.randint(1, cells, (m,), generator=g).to(F64) / cells
    c = torch.randn(m, generator=g, dtype=F64)
    with no_init_draws():
        hidden = torch.nn.Linear(1, m, dtype=F64)
        out = torch.nn.Linear(m, 1, dtype=F64)
    with torch.no_grad():
        hidden.weight.copy_(w[:, None])
        hidden.bias.copy_(b)
        out.weight.copy_(c[None, :])
        out.bias.zero_()
    return torch.nn.Sequential(hidden, torch.nn.ReLU(), out)


@claim(
    "expressivity.depth-separation",
    source="000 §8.3.4 ('深度换宽度——指数 vs 多项式', 000:767); Telgarsky, 'Benefits of depth "
    "in neural networks', COLT 2016",
    statement="""Depth saves width exponentially: k tent layers of width 2 (2k ReLU units)
    compute a sawtooth with exactly 2^k linear pieces (log2 pieces vs k has slope 1), while
    every one-hidden-layer ReLU network with m units has at most m + 1 pieces, so it needs
    2^k - 1 units to represent it; the interpolant with 2^k units reproduces it exactly.""",
    statement_zh="""深度能指数地节省宽度：k 层宽度为 2 的 tent 层（2k 个 ReLU 单元）计算出
    恰有 2^k 个线性段的锯齿函数（log2 段数对 k 的斜率为 1），而任何 m 个单元的单隐层 ReLU
    网络至多有 m + 1 段，因此需要 2^k - 1 个单元才能表示它；2^k 个单元的插值网络恰好复现它。""",
    tier="quick",
    falsifier="expressivity.tent-second-slope",
    expected="verified",
    version=1,
    kind="construction",
    audit="""Issue 31 review (m, d1: Telgarsky's sawtooth is built by theory/sawtooth, used only
    by claims, with the falsifier in that construction): agreed; declared kind construction
    (a hand-built deep network shows the exponential saving is attainable; the shallow side
    is measured on random one-hidden-layer nets). The seed is right here (000:767).""",
    seed_refs=[("000", 767, 767)],
)
def check_depth_separation(ctx: Context) -> Evidence:
    """Margins: pieces of t^k = 2^k for every k (counted on a dyadic grid of 2^(k+3) cells);
    slope of log2(pieces) vs k = 1; random shallow nets with m units have <= m + 1 pieces
    (counted the same way on 2^12 cells, 2^14 at default); the 2^k-unit interpolant equals
    t^k to 1e-12."""
    tiny = ctx.size is Size.TINY
    ks = list(range(1, 9 if tiny else 13))
    pieces, interp_err = [], 0.0
    for k in ks:
        grid = torch.linspace(0, 1, 2 ** (k + 3) + 1, dtype=F64)[:, None]
        deep = sawtooth_network(k)
        with torch.no_grad():
            values = deep(grid)[:, 0]
            pieces.append(count_linear_pieces(values, grid[:, 0]))
            shallow = relu_interpolant_1d(lambda t, net=deep: net(t[:, None])[:, 0], 2 ** k,
                                          0.0, 1.0)
            interp_err = max(interp_err, float((shallow(grid) - deep(grid)).abs().max()))
    g = ctx.generator(767)
    cells = 2 ** 12 if tiny else 2 ** 14
    fine = torch.linspace(0, 1, cells + 1, dtype=F64)[:, None]
    excess = -float("inf")
    for m in (4, 16, 64):
        for _ in range(6 if tiny else 50):
            with torch.no_grad():
                v = _random_shallow(m, g, cells)(fine)[:, 0]
            excess = max(excess, count_linear_pieces(v, fine[:, 0]) - (m + 1))
    slope = fit_power_law([2.0 ** k for k in ks], [float(p) for p in pieces]).exponent
    margins = [
        at_most("max over k of |pieces of t^k - 2^k|",
                max(abs(p - 2 ** k) for p, k in zip(pieces, ks, strict=True)), 0.0),
        close_to("slope of log2(pieces) vs k", slope, 1.0, abs_=1e-9),
        at_most("max over random shallow nets of pieces - (units + 1)", excess, 0.0),
        at_most("max |interpolant with 2^k units - t^k| over k", interp_err, 1e-12),
    ]
    deep_units = [2 * k for k in ks]
    shallow_units = [p - 1 for p in pieces]
    fig = Figure(
        title=msg("Units needed for the depth-k sawtooth: deep (width 2) vs one hidden layer"),
        xlabel=msg("k (depth of the deep network)"), ylabel=msg("ReLU units"), logy=True,
        series=[Series(msg("deep: 2k"), [float(k) for k in ks], [float(u) for u in deep_units],
                       style="o-"),
                Series(msg("shallow: pieces - 1 = 2^k - 1"), [float(k) for k in ks],
                       [float(u) for u in shallow_units], style="s-")],
    )
    return Evidence(
        predicted={"pieces": [2 ** k for k in ks], "shallow_pieces_at_most": "units + 1"},
        measured={"pieces": pieces, "slope": slope, "shallow_excess_max": excess,
                  "interpolant_error": interp_err, "deep_units": deep_units,
                  "shallow_units_needed": shallow_units},
        tolerance={"pieces": 0, "interpolant": 1e-12},
        verdict=decide(margins),
        margins=margins,
        notes=[
            msg("k = {k_first}..{k_last}; pieces counted from the network's outputs on a "
                "uniform grid (slope changes between cells, relative tolerance 1e-9); the dyadic "
                "grid contains every breakpoint j/2^k of t^k.", k_first=ks[0], k_last=ks[-1]),
            msg("Shallow nets: {value} random one-hidden-layer nets per width m in {{4, 16, 64}} "
                "with breakpoints at random points of the counting grid ({cells} cells of [0, "
                "1]), so each breakpoint is one slope change; coinciding breakpoints merge. "
                "'pieces <= m + 1' is the measured side of the bound.", value=6 if tiny else 50,
                cells=cells),
            msg("At k = {ks}: {deep_units} units in {ks} layers vs {shallow_units} units in one "
                "layer. The seed is right here (000:767).", ks=ks[-1], deep_units=deep_units[-1],
                shallow_units=shallow_units[-1]),
        ],
        figures=[fig],
    )
