"""Additive position codes: the sinusoidal code's shift matrix and KV-cache decoding with an
additive code or RoPE (000 §8.3.3; 004 "RoPE vs Sinusoidal"). The learned table's limit is a
test since issue 31 (tests/nn/test_learned_position_limit.py)."""

from __future__ import annotations

import math

import torch

from transformer_math.claims.position._common import SEED_000, randn
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
    exceeds,
)
from transformer_math.functional.positional import sinusoidal_table
from transformer_math.i18n.message import msg
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer
from transformer_math.theory.positions import vaswani_shift_matrix, vaswani_sinusoid
from transformer_math.theory.rope_audit import sinusoid_shift_distance


@claim(
    "position.sinusoidal-shift",
    source=(f"{SEED_000} 理论 A (PE(pos+Δ) as a rotation of PE(pos); 为什么底数取 10000; "
            "时钟类比的边界); Vaswani et al. 2017 §3.5"),
    statement="""The implementation's sinusoidal code equals Vaswani et al.'s PE[pos, 2i] =
    sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)); PE(pos + D) = M(D) PE(pos)
    with the paper's block rotation M(D), which does not depend on pos; every value lies in
    [-1, 1] and distinct positions get distinct codes. The code is injective at every integer
    position for every base, even far beyond the lowest wavelength and with a single pair
    (θ_0 = 1, π irrational); the base sets near-collisions and adjacent resolution, not
    injectivity: the main seed's 'base 100 makes positions 200 and 200 + wavelength collide' is
    refuted (its 'injective as long as the length is far below the lowest wavelength' is a
    sufficient condition and holds). Of the four terms of (x_m + PE_m)^T (x_n + PE_n),
    PE_m^T PE_n = sum_i cos((m - n) θ_i) is exactly relative; the cross terms x_m^T PE_n depend
    on absolute positions.""",
    statement_zh="""实现的正弦编码等于 Vaswani 等人的 PE[pos, 2i] = sin(pos / 10000^(2i/d))、
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d))；PE(pos + D) = M(D) PE(pos)，其中论文的分块旋转M(D)
    与 pos 无关；所有取值在 [-1, 1] 内，不同位置得到不同编码。对任意底数、
    在任意整数位置上编码都是单射的，即使远超最低频波长、即使只有一对维度（θ_0 = 1，π 是无理数）
    ；底数决定的是近似碰撞与相邻分辨率，而不是单射性：主文'底数 100 时位置 200
    与200+波长编码相同'被驳斥（其'只要序列长度远小于最低频波长，编码就是单射的'是充分条件，
    成立）。(x_m + PE_m)
    ^T (x_n + PE_n) 的四项中，PE_m^T PE_n = sum_i cos((m - n) θ_i) 严格只依赖相对位置；交叉项
    x_m^T PE_n 依赖绝对位置。""",
    falsifier="sinusoid.frequency-exponent",
    expected="refuted",
    version=4,
    kind="measurement",
    audit="""Issue 31 review (P; c): 000:574 fairly refuted; 000:576
    '只要序列长度远小于最低频波长，编码就是单射的' is a sufficient condition, quoted as
    'injective only while...' and its seed margin tested the converse. Fixed: the 576 record
    and its seed margin are dropped (the sufficient condition is true, and the measured
    injectivity beyond the wavelength stays part of the verified statement); the 574 record
    stays, with its verbatim quote and the reading its seed margin tests.""",
    seed_refs=[("000", 564, 584), ("004", 184, 203)],
    refutes=[
        Refutation(seed="000", line=574,
                   quote="底数太小（如 100）则最低频波长太短，长序列上会周期重复"
                         "（位置 200 和位置 200+波长编码相同，混淆）",
                   reading="with base 100 (d = 64) the codes of positions 200 and 200 + 544 "
                           "(the lowest wavelength) coincide: |PE(744) - PE(200)| <= 1e-2",
                   says="a too small base (e.g. 100) makes the lowest wavelength short, so "
                        "long sequences repeat periodically: positions 200 and 200 + wavelength "
                        "get the same code",
                   correct="with base 100 only the lowest pair nearly repeats after its "
                           "wavelength; the other pairs do not, so PE(200) and PE(200 + 544) "
                           "stay as far apart as random codes (d = 64)"),
    ],
)
def check_sinusoidal_shift(ctx: Context) -> Evidence:
    """Issue 14 (version 2): the prediction (the paper's table and M(D)) is computed by
    ``theory/positions.py`` with Python floats, sharing no code with
    ``functional/positional.py``, so a wrong frequency in the implementation fails both the
    table margin and the shift margin (before, both sides used one theta).

    Issue 18 (version 3, 000:574-576): the library's table at base 100 (d = 64) over positions
    reaching more than twice the lowest wavelength (2π 100^(62/64) = 544), and with a single
    pair (d = 2, θ = 1) over shifts to 4095: the smallest distance between codes against the
    closed form (``theory/rope_audit.sinusoid_shift_distance``). The seed's collision at
    positions 200 and 200 + 544 is a seed margin on the same tables.

    Issue 31 (version 4): the seed margin of 000:576 is gone (a sufficient condition, read as a
    necessary one)."""
    dim, n = 64, 1024 if ctx.size is not Size.TINY else 256
    table = sinusoidal_table(n + 200, dim).double()  # the implementation, float32 angles
    reference = vaswani_sinusoid(n + 200, dim)  # the paper's formula, float64
    table_err = float((table - reference).abs().max())
    shifts = [1, 7, 33, 200]
    residual = 0.0
    for D in shifts:
        M = vaswani_shift_matrix(D, dim)  # 000 line 582, independent of the implementation
        residual = max(residual, float((table[D:D + n] - table[:n] @ M.T).abs().max()))
    bounded = float(table.abs().max())
    dist = torch.cdist(table[:n], table[:n]) + torch.eye(n, dtype=torch.float64) * 1e9
    min_dist = float(dist.min())
    inj = _injectivity_at_small_base(ctx)
    # 000:584: the four terms of the additive score; which of them are relative
    g = ctx.generator(12)
    mn = torch.randint(0, n, (64, 2), generator=g)
    shift = torch.randint(1, 200, (64,), generator=g)
    x = torch.randn(64, dim, generator=g, dtype=torch.float64)

    def gram(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (table[a] * table[b]).sum(-1)

    m_, n_ = mn[:, 0], mn[:, 1]
    pe_relative = float((gram(m_, n_) - gram(m_ + shift, n_ + shift)).abs().max())
    cross_change = float(((x * table[n_]).sum(-1) - (x * table[n_ + shift]).sum(-1)).abs().max())
    # float32 angles pos * theta at pos < 1300: the product's rounding (ulp(1300)/2 = 6e-5)
    # plus theta's (1300 * 6e-8 = 8e-5) bound each entry's error by ~1.5e-4; the shift residual
    # adds two such errors times |cos| + |sin| <= sqrt 2 (~4e-4). 1e-3 covers both.
    margins = [
        at_most("max |PE - Vaswani et al.'s formula|", table_err, 1e-3),
        at_most("max |PE(pos+D) - M(D) PE(pos)|", residual, 1e-3),
        at_most("max |PE|", bounded, 1.0),
        at_least("min distance between codes", min_dist, 1e-3),
        # base 100: the nearest two codes over > 2 wavelengths are adjacent ones (~1.95)
        at_least("base 100, d 64: min distance between codes over > 2 lowest wavelengths",
                 inj["base100_min_distance"], 0.5),
        # one pair: the nearest return (D = 710, 2|sin 355| = 6.0e-5) is > 0; float32 sin/cos
        # at |angle| < 4096 err by ~5e-7, so 1e-5 is both a floor and the closed-form tolerance
        exceeds("one pair (d = 2): min over shifts 1..4095 of |PE(D) - PE(0)|",
                inj["one_pair_min_distance"], 1e-5),
        close_to("one pair: measured nearest return vs closed form", inj["one_pair_min_distance"],
                 inj["one_pair_predicted"], abs_=1e-5),
        at_least("adjacent distance |PE(1) - PE(0)|: base 100 minus base 1e4",
                 inj["adjacent"][0] - inj["adjacent"][1], 0.1),
        at_least("adjacent distance: base 1e4 minus base 1e6",
                 inj["adjacent"][1] - inj["adjacent"][2], 0.1),
        # float32 table entries err by ~1.5e-4: a 64-term dot product by ~1e-2 at worst
        at_most("PE_m·PE_n under a common shift (relative term), max change",
                pe_relative, 2e-2),
        at_least("x_m·PE_n under the same shift (cross term, absolute), max change",
                 cross_change, 0.5),
    ]
    seed_margins = [
        at_most("seed (000:574): base 100, |PE(200 + 544) - PE(200)| ≈ 0 (collision)",
                inj["collision_distance"], 1e-2),
    ]
    return Evidence(
        predicted={"max |PE - formula|": 0.0, "max |PE(pos+D) - M(D) PE(pos)|": 0.0,
                   "max |PE|": "<= 1", "min distance": "> 0",
                   "base 100 min distance (closed form)": inj["base100_predicted"],
                   "one pair nearest return (closed form)": inj["one_pair_predicted"],
                   "seed: |PE(744) - PE(200)| at base 100": 0.0},
        measured={"max |PE - formula|": table_err, "residual": residual, "max |PE|": bounded,
                  "min distance": min_dist,
                  "base 100 min distance": inj["base100_min_distance"],
                  "one pair nearest return": inj["one_pair_min_distance"],
                  "one pair nearest shift": inj["one_pair_shift"],
                  "base 100 |PE(744) - PE(200)|": inj["collision_distance"],
                  "base 100 lowest pair |Δ| at shift 544": inj["lowest_pair_distance"],
                  "base 100 pairs within 0.01 at shift 544": inj["pairs_repeating"],
                  "adjacent distance (base 100, 1e4, 1e6)": inj["adjacent"],
                  "PE_m·PE_n change under a shift": pe_relative,
                  "x·PE_n change under a shift": cross_change},
        tolerance="1e-3 (float32 angles at pos < 1300), min distance > 1e-3; one pair: 1e-5",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[msg("dim {dim}, positions 0..{value}, shifts {shifts}; the formula and M(D) from "
                   "theory/positions.py (Python floats), PE from functional/positional.py",
                   dim=dim, value=n + 199, shifts=shifts),
               msg("base 100, d 64: lowest wavelength 544; positions 0..{value}; |PE(p + D) - "
                   "PE(p)| = (sum_i 4 sin^2(D θ_i/2))^(1/2) is the same for every p",
                   value=inj['base100_n'] - 1),
               msg("one pair (d = 2, θ = 1): PE(p) = PE(q) would need p - q ∈ 2πZ; the nearest "
                   "return below 4096 is D = 710 (710 / 113 ≈ 2π), still 6e-5 away")],
    )


def _injectivity_at_small_base(ctx: Context) -> dict:
    """The library's sinusoidal table at base 100 (d 64) and with one pair (d 2), against the
    closed-form distances of ``theory/rope_audit``."""
    wavelength = 2 * math.pi / theta_list(64, 100.0)[-1]  # 544.1 (closed form)
    D = round(wavelength)
    n = ctx.pick(1200, 1600, 2400)  # > 2 wavelengths
    t100 = sinusoidal_table(n, 64, base=100.0).double()
    # every pair (p, p + D) is as far apart as (0, D) (the shift margin measures M(D)); the
    # distances from position 0 and from position 200 both cover every shift below n - 200
    dist = torch.cat([(t100[1:] - t100[0]).norm(dim=-1), (t100[201:] - t100[200]).norm(dim=-1)])
    closed100 = min(sinusoid_shift_distance(s, theta_list(64, 100.0)) for s in range(1, n))
    per_pair = (t100[200 + D] - t100[200]).view(32, 2).norm(dim=-1)
    one = sinusoidal_table(4096, 2).double()  # θ_0 = 1 whatever the base
    d_one = (one[1:] - one[0]).norm(dim=-1)
    k = int(d_one.argmin())
    adjacent = [float((sinusoidal_table(2, 64, base=b)[1] - sinusoidal_table(2, 64, base=b)[0])
                      .double().norm()) for b in (100.0, 1e4, 1e6)]
    return {"base100_min_distance": float(dist.min()), "base100_predicted": closed100,
            "base100_n": n, "collision_distance": float((t100[200 + D] - t100[200]).norm()),
            "lowest_pair_distance": float(per_pair[-1]),
            "pairs_repeating": int((per_pair < 1e-2).sum()),
            "one_pair_min_distance": float(d_one[k]), "one_pair_shift": k + 1,
            "one_pair_predicted": sinusoid_shift_distance(k + 1, [1.0]),
            "adjacent": adjacent}


def theta_list(dim: int, base: float) -> list[float]:
    """θ_i = base^(-2i/d) as Python floats (the closed form of 000:570)."""
    return [base ** (-2 * i / dim) for i in range(dim // 2)]


@claim(
    "position.kv-cache-compatibility",
    source="004 'RoPE vs Sinusoidal' table row 'KV Cache兼容: 需重新计算 | 自然兼容'",
    statement="""Incremental decoding with a KV cache equals full recomputation both for an
    additive sinusoidal code (added to the token embedding at its absolute position) and for
    RoPE; the third seed's 'sinusoidal needs recomputation' is refuted for standard decoding.""",
    falsifier="position.kv-positions-restart",
    expected="refuted",
    version=2,
    seed_refs=[("004", 272, 278)],
    kind="measurement",
    audit="""Issue 31 review: sound (S); 004:277 ('sinusoidal needs recomputation') is wrong for
    an additive input code, measured on the project's Transformer. Kept; declarations only
    (kind, verbatim quote, reading), version 2 kept. The falsifier (positions restarting after
    the cache) is planted in nn/transformer.py, code every cached decoder runs.""",
    refutes=[Refutation(
        seed="004", line=277, quote="KV Cache兼容 需重新计算",
        reading="a sinusoidal model decoding with a KV cache departs from the full pass by more "
                "than rounding (1e-5) unless it recomputes",
        says="KV Cache兼容: Sinusoidal 需重新计算 (a sinusoidal model must recompute its cache)",
        correct="the sinusoidal code is added before the K/V projections, so cached keys and "
                "values never change: cached decoding equals full recomputation, as for RoPE")],
)
def check_kv_cache_compatibility(ctx: Context) -> Evidence:
    """Two-layer ``Transformer`` decoders on vector inputs, one per scheme: the prefix in one
    call, then one token per call with the layers' ``KVCache``, against one full pass.

    Issue 14 (version 2): the positions of the cached steps are the model's own (past ..
    past + t - 1 from the cache length; none are passed in), so the falsifier is a bug in that
    computation; the seed's version ("needs recomputation": cached != full) is a seed margin
    on the same measured sinusoidal error, so the refutation is measured."""
    d, heads, t, prefix = 32, 4, 12, 5
    x = randn(ctx.generator(10), 2, t, d)
    errors: dict[str, float] = {}
    for scheme in ("sinusoidal", "rope"):
        config = TransformerConfig(hidden_size=d, num_heads=heads, num_layers=2, output_size=0,
                                   max_seq_len=t, position=scheme, attention_backend="reference")
        model = build_transformer(config, ctx.generator(0))
        with torch.no_grad():
            full = model(inputs_embeds=x)
            caches = model.new_caches()
            outs = [model(inputs_embeds=x[:, :prefix], caches=caches)]
            for i in range(prefix, t):
                outs.append(model(inputs_embeds=x[:, i:i + 1], caches=caches))
        errors[scheme] = float((torch.cat(outs, dim=1) - full).abs().max())
    # float32 attention over 12 keys: differences come from summation order only (~1e-6).
    margins = [at_most(f"{scheme} |cached - full|", e, 1e-5) for scheme, e in errors.items()]
    # The seed's version: without recomputation the sinusoidal model's cached decoding departs
    # from the full pass by more than rounding.
    seed_margins = [at_least("seed: sinusoidal cached decoding departs from the full pass "
                             "(needs recomputation)", errors["sinusoidal"], 1e-5)]
    return Evidence(
        predicted={"sinusoidal |cached - full|": 0.0, "rope |cached - full|": 0.0},
        measured=errors,
        tolerance="1e-5 (float32 summation order)",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[msg("2-layer pre-LN Transformer (hidden 32, 4 heads), prefix 5 then 7 cached "
                   "steps; the sinusoidal code is added before the K/V projections, so a cached "
                   "key at position j never changes; recomputation is only needed when positions "
                   "of cached tokens change (e.g. sliding windows with re-indexing, dynamic NTK)")],
    )
