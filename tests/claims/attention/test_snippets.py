"""attention.variance-snippet and attention.dk-scale-uniform (issue 31, 000:361-370 and 394)."""

from __future__ import annotations

import torch

from transformer_math.claims.attention.scaling import (
    SNIPPET_D_K,
    _entropy_deficits,
    _seed_variance_snippet,
)


def _snippet_as_written(n_trials: int) -> tuple[float, float]:
    """000:361-370 verbatim (the global RNG, restored afterwards)."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        d_k = SNIPPET_D_K
        q = torch.randn(n_trials, d_k)
        k = torch.randn(n_trials, d_k)
        dot = (q * k).sum(dim=1)
        return dot.var().item(), (dot / d_k**0.5).var().item()
    finally:
        torch.random.set_rng_state(state)


def test_the_chunked_replica_draws_the_seeds_stream():
    """The claim draws q and k in chunks of 10,000 rows from a private generator; across a
    chunk boundary it must print what the seed's code prints."""
    trials = 25_000
    var, var_scaled, *_ = _seed_variance_snippet(trials)
    ref, ref_scaled = _snippet_as_written(trials)
    assert var == ref and var_scaled == ref_scaled


def test_dk_scaling_flattens_the_rows_and_the_planted_temperature_bug_sharpens_them():
    from transformer_math.bugs import plant

    g = torch.Generator().manual_seed(0)
    by_dk, by_sqrt = _entropy_deficits(64, 64, 256, g)
    # (n-1)/(2 n d_k) = 0.0077 at d_k = 64; the standard scale ~1/2 nat
    assert abs(float(by_dk.mean()) - 63 / (2 * 64 * 64)) < 1e-3
    assert 0.3 < float(by_sqrt.mean()) < 0.7
    with plant("attention.scale-as-temperature"):
        bad_dk, _ = _entropy_deficits(64, 64, 256, torch.Generator().manual_seed(0))
    assert float(bad_dk.mean()) > 1.0  # the logits multiplied by d_k: far from uniform
