"""Contextual mapping (000 §8.3.4 toy example; Yun et al., ICLR 2020, Definition 3.1).

One self-attention layer with a residual, x + Attn(x), gives every (token, position, context)
entry a distinct code: the codes of equal tokens at equal positions differ through the
attention term alone, which mixes in the context. The codes are the hidden states of the
project's Transformer (one attention-only block, no norms, sinusoidal positions, token inputs
with their attention mask), random weights.

Kajitsuka & Sato ("Are Transformers with One Layer Self-Attention Using Low-Rank Weight
Matrices Universal Approximators?", ICLR 2024, arXiv 2307.14023) prove that a single softmax
self-attention layer (one head, low-rank weights) is a contextual mapping of any finite set of
inputs; the main seed says the opposite (000:704, 000:739: one layer only captures one-hop pairs
and cannot distinguish all sequences, so depth is needed). The check measures both on the seed's
own toy (V = 2, n = 2) and on every sequence of a larger set (V = 3, n = 4: 81 sequences).
"""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Refutation,
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer, build_transformer

SEED_000_84 = "000 §8.3.4"
KS = "Kajitsuka & Sato, ICLR 2024 (arXiv 2307.14023)"


def code_model(d: int, gen: torch.Generator, vocab: int = 2) -> Transformer:
    """One attention-only block without norms over ``vocab`` tokens + sinusoidal positions, no
    head: hidden states x + Attn(x), x = E[ids] + PE; E ~ N(0, 1), attention weights
    ~ N(0, 1/d)."""
    cfg = TransformerConfig(hidden_size=d, num_layers=1, num_heads=2, vocab_size=vocab,
                            output_size=0, position="sinusoidal", sublayers="attention_only",
                            norm="none", final_norm=False, causal=False,
                            attention_backend="reference")
    model = build_transformer(cfg, gen).double()
    with torch.no_grad():
        assert model.embed_tokens is not None
        model.embed_tokens.weight.copy_(torch.randn(vocab, d, generator=gen,
                                                    dtype=torch.float64))
        for p in model.layers[0].parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / math.sqrt(d))
    return model


def contextual_codes(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """The model's hidden states for ids (B, n) with an all-ones attention mask: (B, n, d)."""
    with torch.no_grad():
        return model(ids, attention_mask=torch.ones_like(ids))


def all_sequences(vocab: int, n: int) -> list[str]:
    """Every string of length n over the first ``vocab`` letters, in lexicographic order."""
    letters = "abcdefghij"[:vocab]
    return ["".join(t) for t in itertools.product(letters, repeat=n)]


def code_distances(flat: torch.Tensor, sequences: list[str]) -> dict[str, float]:
    """Pairwise distances of the codes (one row per (sequence, position), in order): the
    minimum, the median, and the minimum over pairs sharing token and position."""
    n = len(sequences[0])
    tokens = [s[pos] for s in sequences for pos in range(n)]
    positions = [pos for _ in sequences for pos in range(n)]
    dist = torch.cdist(flat, flat)
    m = len(tokens)
    off = ~torch.eye(m, dtype=torch.bool)
    tok = torch.tensor([ord(t) for t in tokens])
    pos = torch.tensor(positions)
    same = (tok[:, None] == tok[None, :]) & (pos[:, None] == pos[None, :]) & off
    return {"min": float(dist[off].min()), "median": float(dist[off].median()),
            "min_same_token_position": float(dist[same].min())}


def _worst_over_trials(ctx: Context, vocab: int, n: int, trials: int, d: int,
                       offset: int) -> dict[str, float]:
    """Worst case over random one-layer maps: log10(min distance / (2 float32 rounding))."""
    sequences = all_sequences(vocab, n)
    ids = torch.tensor([[ord(c) - ord("a") for c in s] for s in sequences])
    worst = {"log_ratio": math.inf, "context": math.inf, "rounding": 0.0,
             "median_ratio": math.inf}
    gen = ctx.generator(offset)
    example: dict[str, float] = {}
    for _ in range(trials):
        model = code_model(d, gen, vocab)
        codes64 = contextual_codes(model, ids)
        codes32 = contextual_codes(model.float(), ids).double()
        flat = codes64.reshape(len(sequences) * n, d)
        dists = code_distances(flat, sequences)
        # rounding: the same layer in float32 moves each code by at most delta (measured);
        # two codes farther apart than 2 delta stay distinct in float32
        delta = float((codes32 - codes64).norm(dim=-1).max())
        ratio = dists["min"] / (2 * delta) if delta > 0 else math.inf
        worst["log_ratio"] = min(worst["log_ratio"],
                                 math.log10(ratio) if ratio > 0 else -math.inf)
        worst["rounding"] = max(worst["rounding"], delta)
        worst["context"] = min(worst["context"], dists["min_same_token_position"])
        worst["median_ratio"] = min(worst["median_ratio"], dists["min"] / dists["median"])
        if not example and vocab == 2 and n == 2:
            example = {"a@1 in ab": float(flat[2, 0]), "a@1 in aa": float(flat[0, 0]),
                       "a@2 in ba": float(flat[5, 0]), "a@2 in aa": float(flat[1, 0])}
    return {**worst, "codes": float(len(sequences) * n), **example}


@claim(
    "expressivity.contextual-mapping",
    source=f"{SEED_000_84} (toy example 'aa, ab, ba, bb'; '只有一层'); Yun et al., ICLR 2020, "
    f"Definition 3.1; {KS}",
    statement="""One self-attention layer (with residual) is a contextual mapping: for the seed's
    toy (vocabulary {a, b}, n = 2) and for all 81 sequences over {a, b, c} of length 4, every
    (token, position, context) entry gets a distinct code, with a minimum pairwise distance,
    including the pairs that share token and position and differ only in context, beyond what
    float32 rounding of the same layer can blur. The seed's 'one attention layer only captures
    one-hop pairs and cannot distinguish all sequences' is refuted (Kajitsuka & Sato 2024).""",
    statement_zh="""一个（带残差的）自注意力层就是上下文映射：对种子的玩具例子（词表 {a, b}，
    n = 2）以及 {a, b, c} 上全部 81 个长度为 4 的序列，每个（token、位置、上下文）条目都得到
    互不相同的编码，其两两最小距离（包括 token 与位置相同、仅上下文不同的那些对）超过同一层
    float32 舍入所能造成的模糊。种子所说的'单层注意力只能捕捉一跳两两关系、不足以区分所有序列'
    被驳斥（Kajitsuka & Sato 2024）。""",
    tier="quick",
    falsifier="transformer.padding-mask-inverted",
    expected="refuted",
    version=4,
    kind="measurement",
    audit="""Issue 31 review (b: '2x float32 rounding' is met by almost any generic map; c:
    000:704 is about multi-step reasoning): 000:704 agreed and dropped (it says single-layer
    attention struggles with dependencies that need multi-step reasoning, not that it cannot
    separate sequences). On the threshold, disputed in part and strengthened: the statement
    under test (000:739) is that one layer cannot distinguish all sequences, so the pass
    condition is distinguishability in the arithmetic the model runs in, and that a generic
    attention layer meets it is exactly Kajitsuka & Sato's result, not a weakness of the check;
    the 2x-rounding floor is kept and reported as such (its measured clearance, 5-6 decades,
    is in the notes). A read-out criterion was tried for version 4 (a ReLU lookup from
    theory.relu_lookup fitted to the float64 codes, reading random labels back from the
    float32 codes, error < 1/2): it held at tiny (0.19) and failed at default (1.35) because
    that lookup reads a 1-D projection of the codes, whose gaps are far smaller than the code
    distances; it measured the reader, not the codes, and was not kept. Nearest-code decoding
    is exactly the 2x-rounding condition. The null model (context removed, the falsifier)
    gives equal codes for equal (token, position) and fails it.""",
    seed_refs=[("000", 703, 704), ("000", 727, 739), ("000", 743, 743), ("000", 750, 750)],
    refutes=[
        Refutation(
            seed="000", line=739,
            quote="如果**只有一层**注意力，确实只能捕捉一跳的两两关系，不足以区分所有序列",
            reading="with one attention layer some two (token, context) entries of a finite "
            "set of sequences get codes that cannot be told apart (in the float32 arithmetic "
            "the model runs in)",
            says="with only one attention layer, only one-hop pairwise relations are captured, "
            "not enough to distinguish all sequences; depth is what makes it work",
            correct="one softmax self-attention layer already gives every entry of every "
            "sequence of a finite set a distinct code (a contextual mapping; Kajitsuka & Sato, "
            "ICLR 2024); measured here on 81 sequences with random weights"),
    ],
    corrections=[
        Correction(
            seed="000", line=743,
            says="the three eps/3 terms are quantisation, contextual mapping and FFN lookup",
            correct="Yun et al.'s three eps/3 terms are (i) f vs a piecewise-constant "
            "approximation on a grid, (ii) the piecewise-constant function vs a 'modified' "
            "Transformer (hardmax attention, piecewise-linear activations), (iii) the modified "
            "vs a standard Transformer (softmax, ReLU); quantisation, contextual mapping and "
            "value mapping are the three sub-steps of (ii)",
            source="Yun, Bhojanapalli, Rawat, Reddi & Kumar, 'Are Transformers universal "
            "approximators of sequence-to-sequence functions?', ICLR 2020, section 4 (proof "
            "of Theorem 2)"),
        Correction(
            seed="000", line=750,
            says="Gumaan (2025) proved a single-layer Transformer is a universal approximator; "
            "earlier proofs needed many layers",
            correct="one self-attention layer (with two token-wise FFNs) was already proved a "
            "universal approximator of continuous permutation-equivariant functions by "
            "Kajitsuka & Sato (ICLR 2024); Gumaan's arXiv 2507.10581 (2025) is not the first",
            source=f"{KS}, abstract and Theorem 2"),
    ],
)
def check_contextual_mapping(ctx: Context) -> Evidence:
    """Margins: on both sets, log10(min pairwise code distance / (2 x the measured float32
    rounding of a code)) >= 0 for every random layer. Seed margin (000:739): one layer leaves
    some pair of codes that cannot be told apart (log ratio <= 0 on the larger set)."""
    d = 8
    tiny = ctx.size is Size.TINY
    toy = _worst_over_trials(ctx, 2, 2, 5 if tiny else 50, d, 21)
    big = _worst_over_trials(ctx, 3, 4, 3 if tiny else 20, d, 521)
    margins = [
        at_least("toy {a,b}^2: log10(min pairwise code distance / (2 x float32 rounding))",
                 toy["log_ratio"], 0.0),
        at_least("{a,b,c}^4 (81 sequences): log10(min pairwise code distance / (2 x float32 "
                 "rounding))", big["log_ratio"], 0.0),
    ]
    seed_margins = [
        at_most("seed 000:739 'one layer cannot distinguish all sequences': log10(min "
                "distance / (2 x rounding)) on {a,b,c}^4 (must be <= 0)", big["log_ratio"], 0.0),
    ]
    example = {k: v for k, v in toy.items() if "@" in k}
    return Evidence(
        predicted={"min_distance_over_twice_rounding_at_least": 1.0},
        measured={
            "toy": {"min_same_token_same_position_distance": toy["context"],
                    "max_float32_rounding_of_a_code": toy["rounding"],
                    "log10_min_distance_over_twice_rounding": round(toy["log_ratio"], 3)},
            "81_sequences": {"codes": int(big["codes"]),
                             "min_same_token_same_position_distance": big["context"],
                             "max_float32_rounding_of_a_code": big["rounding"],
                             "log10_min_distance_over_twice_rounding":
                                 round(big["log_ratio"], 3)},
        },
        tolerance="codes distinct in float32: min distance > 2 x the measured float32 rounding "
        "of a code (each code moves by at most that)",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[
            "Version 4 (issue 31): 000:704 (multi-step reasoning) is no longer refuted. The "
            "2x-rounding floor is a weak bar (generic maps clear it by decades) and is reported "
            "as such: it is the distinguishability the seed denies, nothing more.",
            msg("Random single-layer attention maps (2 heads, d = {d}, float64) of the project's "
                "Transformer: token embedding + sinusoidal position, one attention-only block "
                "without norms, so the hidden state is x + Attn(x); the ids are passed with their "
                "attention mask (all ones). Worst case over the trials of each set.", d=d),
            "Version 3 (issue 18): the seed's 'one layer cannot distinguish all sequences' "
            "(000:739) is a seed margin on the same measurement, and the check runs "
            "on every sequence of {a,b,c}^4 as well as the toy: one layer separates all "
            f"{int(big['codes'])} codes, so the claim is refuted (Kajitsuka & Sato 2024 prove "
            "it for any finite set, with one head of rank-1 weights).",
            msg("Version 2 (issue 14): 'distinct' is measured against the arithmetic the model "
            "runs in: the same layer is evaluated in float32, each code moves by at most "
            "delta, and two codes farther apart than 2 delta cannot coincide. The pairs that "
            "share token and position differ only through the attention term (the 'tail' of "
            "the seed's toy encoding); a layer whose attention carries no context (falsifier: "
            "attention_mask inverted into the key padding mask, every key masked) gives them "
            "distance 0."),
            msg("first coordinate of some codes (toy, trial 1): a@1 in ab: {ab:.4f}, a@1 in aa: "
                "{aa1:.4f}, a@2 in ba: {ba:.4f}, a@2 in aa: {aa2:.4f}", ab=example["a@1 in ab"],
                aa1=example["a@1 in aa"], ba=example["a@2 in ba"], aa2=example["a@2 in aa"]),
        ],
        details={"example_codes_first_coordinate": example, "toy": toy, "81_sequences": big},
    )
