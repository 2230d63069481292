"""Contextual mapping (000 §8.3.4 toy example; Yun et al., ICLR 2020, Definition 3.1).

One self-attention layer with a residual, x + Attn(x), gives every (token, position, context)
entry a distinct code: the codes of equal tokens at equal positions differ through the
attention term alone, which mixes in the context.
"""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Size,
    agreement,
    all_hold,
    at_least,
    claim,
)
from transformer_math.functional.positional import sinusoidal_encoding
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import no_init_draws

SEED_000_84 = "000 §8.3.4"


def contextual_codes(ids: torch.Tensor, d: int, mixer: str, gen: torch.Generator
                     ) -> torch.Tensor:
    """codes = x + Attn(x) (``mixer="attention"``) or x (``"none"``) for x = E[ids] + PE, with a
    random embedding E and a random 2-head attention layer (weights N(0, 1/d)), float64;
    ids (B, n) -> (B, n, d)."""
    emb = torch.randn(2, d, generator=gen, dtype=torch.float64)
    x = emb[ids] + sinusoidal_encoding(torch.arange(ids.shape[1], dtype=torch.float64), d)
    with no_init_draws():  # every weight is drawn from ``gen`` below
        attn = MultiHeadAttention(d, 2, backend="reference").double()
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / math.sqrt(d))
        return x + attn(x) if mixer == "attention" else x.clone()


def code_distances(flat: torch.Tensor, sequences: list[str]) -> dict[str, float]:
    """Pairwise distances of the codes (one row per (sequence, position), in order): the
    minimum, the median, and the minimum over pairs sharing token and position."""
    n = len(sequences[0])
    labels = [(s, pos) for s in sequences for pos in range(n)]
    dist = torch.cdist(flat, flat)
    off = ~torch.eye(len(labels), dtype=torch.bool)
    same = [float(dist[i, j]) for i, j in itertools.combinations(range(len(labels)), 2)
            if labels[i][1] == labels[j][1]
            and labels[i][0][labels[i][1]] == labels[j][0][labels[j][1]]]
    return {"min": float(dist[off].min()), "median": float(dist[off].median()),
            "min_same_token_position": min(same)}


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
        flat = contextual_codes(ids, d, mixer, gen).reshape(8, d)
        dists = code_distances(flat, sequences)
        worst_all = min(worst_all, dists["min"])
        worst_context = min(worst_context, dists["min_same_token_position"])
        worst_ratio = min(worst_ratio, dists["min"] / dists["median"])
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
