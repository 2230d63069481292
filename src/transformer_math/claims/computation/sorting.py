"""Sorting and counting are in TC^0 (000:874, 000:887; Chandra, Stockmeyer & Vishkin 1984).

The main seed lists exact sorting of many objects among the tasks beyond TC^0 that a fixed-depth
Transformer cannot do, and exercise 8.3.5-2 asks to justify it by 'a complexity result'. The
circuits of ``theory/sorting_circuits.py`` sort with depth 5 and count with depth 2, polynomial
size, every gate a threshold gate; they are evaluated exhaustively on small inputs and on random
longer ones against ``torch.sort`` and ``sum``.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.theory.parity_margin import exhaustive_bits
from transformer_math.theory.sorting_circuits import all_inputs, counting_circuit, sorting_circuit


def _values(bits: torch.Tensor) -> torch.Tensor:
    return (bits.long() * (2 ** torch.arange(bits.shape[-1]))).sum(dim=-1)


def _sort_errors(x: torch.Tensor) -> int:
    """Inputs (B, n, b) on which the circuit's output differs from torch.sort."""
    return int((_values(sorting_circuit(x)) != torch.sort(_values(x), dim=1).values)
               .any(dim=1).sum())


@claim(
    "computation.sorting-counting-tc0",
    source="000 §8.3.5 (000:874, exercise 8.3.5-2 at 000:887); Chandra, Stockmeyer & Vishkin, "
    "SIAM J. Comput. 1984",
    statement="""Sorting and counting are in TC^0: a depth-5 threshold circuit of polynomial size
    sorts every input of 4 numbers of 3 bits (4 bits at default size) and random inputs of 16
    numbers of 8 bits, and a depth-2 threshold circuit outputs the binary count of ones of every
    string of length <= 10 and of random strings of length 64, with no error. The seed's
    'exact sorting is beyond TC^0' is refuted.""",
    statement_zh="""排序与计数属于 TC^0：一个多项式规模的深度 5 阈值电路对 4 个 3 比特数
    （默认规模 4 比特）的每个输入以及 16 个 8 比特数的随机输入都正确排序，一个深度 2 的阈值
    电路对每个长度 <= 10 的串以及长度 64 的随机串都正确输出 1 的个数的二进制表示，零错误。
    种子所说的'精确排序超出 TC^0'被驳斥。""",
    tier="quick",
    falsifier="computation.sorting-no-tie-break",
    expected="refuted",
    version=1,
    kind="construction",
    audit="""Issue 31 review (m, d1: falsifier in theory/sorting_circuits, claims only): agreed
    that this is a construction (hand-built threshold circuits), declared so; the review reads
    the refutation of 000:874 as fair (V): sorting and counting have constant-depth
    polynomial-size threshold circuits, evaluated exhaustively on small inputs and on random
    large ones with 0 errors (the seed margin needs >= 1).""",
    seed_refs=[("000", 874, 874), ("000", 887, 887)],
    refutes=[Refutation(
        seed="000", line=874,
        quote="需要精确多步算法的任务（精确排序大量物体、精确解约束方程、长链逻辑推理）"
        "——超出 \\(\\mathrm{TC}^0\\)，固定深度前向很可能出错",
        reading="exact sorting is outside TC^0: the constant-depth polynomial-size sorting "
        "circuit must err on some input",
        says="tasks needing exact multi-step algorithms (exactly sorting many objects, ...) are "
        "beyond TC^0, so a fixed-depth forward pass will likely fail",
        correct="sorting (and counting, multiplication) are in TC^0: constant-depth, "
        "polynomial-size threshold circuits compute them exactly; the TC^0 upper bound does "
        "not exclude them")],
)
def check_sorting_counting(ctx: Context) -> Evidence:
    """Margins: sorting-circuit errors = 0 (exhaustive small inputs, 64 random 16 x 8-bit
    inputs); counting-circuit errors = 0 (all strings n <= 10, 64 random strings of length 64).
    Seed margin (000:874): the constant-depth sorting circuit errs on some input (>= 1)."""
    bits = 3 if ctx.size is Size.TINY else 4
    g = ctx.generator(874)
    small = all_inputs(4, bits)
    large = torch.randint(0, 2, (64, 16, 8), generator=g)
    large[:16, :, :4] = 0  # many repeated values: ties must be broken by index
    sort_errors = _sort_errors(small) + _sort_errors(large)
    count_errors = 0
    for n in range(1, 11):
        s = exhaustive_bits(n)
        count_errors += int((_values(counting_circuit(s)) != s.sum(dim=1)).sum())
    s = torch.randint(0, 2, (64, 64), generator=g)
    count_errors += int((_values(counting_circuit(s)) != s.sum(dim=1)).sum())
    n, b = 16, 8
    gates = {"sorting": n * n + n * (n + 1) + n * n + n * n * b + n * b,
             "counting_n64": 64 + 7}
    margins = [
        at_most(f"sorting-circuit errors ({small.shape[0]} exhaustive + 64 random inputs)",
                float(sort_errors), 0.0),
        at_most("counting-circuit errors (all strings n <= 10 + 64 random of length 64)",
                float(count_errors), 0.0),
    ]
    seed_margins = [
        at_least("seed 000:874 'exact sorting beyond TC^0': errors of the depth-5 circuit "
                 "(must be >= 1)", float(sort_errors), 1.0),
    ]
    return Evidence(
        predicted={"errors": 0, "depth": {"sorting": 5, "counting": 2}},
        measured={"sorting_errors": sort_errors, "counting_errors": count_errors,
                  "gates_at_16x8": gates["sorting"], "gates_counting_n64": gates["counting_n64"]},
        tolerance=0,
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            msg("Sorting: all {shape_0} inputs of 4 numbers of {bits} bits, and 64 random inputs "
                "of 16 numbers of 8 bits (16 of them with only 16 distinct values, so ties "
                "occur), compared with torch.sort. Counting: every string of length 1..10 and 64 "
                "random strings of length 64, compared with the sum.", shape_0=small.shape[0],
                bits=bits),
            msg("Gate counts (polynomial): sorting 16 numbers of 8 bits uses {sorting} threshold "
                "gates in 5 layers; counting 64 bits uses {counting_n64} in 2.",
                sorting=gates['sorting'], counting_n64=gates['counting_n64']),
            msg("TC^0 membership of sorting does not mean a trained Transformer sorts; it means "
                "the TC^0 upper bound (Merrill & Sabharwal) gives no reason why it could not."),
        ],
    )
