"""Closed forms about position encodings that the position claims compare against.

Nothing here trains or builds a model: each function is a formula (or the re-expression of a
seed's code, to measure what it computes) evaluated on tensors.

- :func:`roformer_relative_bound`: RoFormer's long-term-decay bound (Su et al. 2021 §3.4.3).
- :func:`aliased_fraction`: how often far RoPE distances alias onto trained ones on chosen pairs.
- :func:`alibi_closed_form_slopes`: ALiBi's slopes for any head count (Press et al. 2022 §3).
- :func:`reflection_family`: a norm-preserving family that is NOT a rotation group.
- :func:`seed_ndim_rope_tables`: what the third seed's NDimensionalRoPE builds (004 ch. 9).
- :func:`vaswani_sinusoid`, :func:`vaswani_shift_matrix`: the sinusoidal code and its shift
  rotation, written from the formulas of 000 §8.3.3 理论 A (lines 566-582) with Python floats,
  sharing no code with ``functional/positional.py``.
- :func:`roformer_frequencies`, :func:`closed_form_rope_frequencies`: RoPE's theta_i and every
  context-extension method's frequencies and attention factor from the published formulas
  (RoFormer eq. 15; Chen et al. 2023; bloc97 2023; Peng et al. 2023 as in HF
  ``_compute_yarn_parameters``; Llama 3.1 reference code; Ding et al. 2024), with Python floats,
  sharing no code with ``functional/rope_scaling.py``.
- :func:`axial_angles_closed_form`: M-RoPE angles with contiguous sections (Qwen2-VL).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.functional.rope import rope_angles

TWO_PI = 2 * math.pi


def roformer_relative_bound(inv_freq: Tensor, distances: Tensor) -> Tensor:
    """RoFormer §3.4.3: (1/(d/2)) sum_j |S_j|, S_j = sum_{k<j} e^{i s θ_k}, j = 1..d/2.

    With h_i = q_[2i:2i+2] k_[2i:2i+2]^* (complex), Abel summation gives
    |sum_i h_i e^{i s θ_i}| <= max_i |h_{i+1} - h_i| sum_j |S_j|; this returns the relative part
    (d/2 times smaller), float64, one value per distance s.
    """
    phases = distances.double().unsqueeze(-1) * inv_freq.double()  # (S, d/2)
    partial = torch.polar(torch.ones_like(phases), phases).cumsum(-1)  # S_1 .. S_{d/2}
    return partial.abs().mean(-1)


def aliased_fraction(inv_freq: Tensor, pairs: Tensor, train_len: int, test_len: int,
                     tolerance: float, step: int = 1) -> float:
    """Fraction of far distances s in [train_len, test_len) (every ``step``-th) whose phases
    s θ_i on ``pairs`` all lie within ``tolerance`` (mod 2π) of the phases of some trained
    distance s' in [1, train_len): false near matches, if attention read only those pairs."""
    far = torch.arange(train_len, test_len, step)
    near = torch.arange(1, train_len)
    pf = rope_angles(far, inv_freq[pairs]).double()
    pn = rope_angles(near, inv_freq[pairs]).double()
    diff = (pf.unsqueeze(1) - pn.unsqueeze(0) + math.pi).remainder(TWO_PI) - math.pi
    close = diff.abs().amax(-1) <= tolerance  # (far, near)
    return float(close.any(-1).double().mean())


def alibi_closed_form_slopes(num_heads: int) -> list[float]:
    """Press et al. 2022 §3 and reference code: with n = 2^floor(log2 H), m_k = 2^(-8k/n) for
    k = 1..n, then (H not a power of two) 2^(-4(2j-1)/n) for j = 1..H-n (the odd-indexed slopes
    of 2n heads)."""
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got {num_heads}")
    n = 1
    while 2 * n <= num_heads:
        n *= 2
    return [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)] + [
        2.0 ** (-4.0 * (2 * j - 1) / n) for j in range(1, num_heads - n + 1)]


def reflection_family(position: int, inv_freq: Tensor) -> Tensor:
    """f(m) = block-diagonal reflections across the lines at angle m θ_i / 2, float64 (d, d).

    Orthogonal like RoPE's R(m θ), but f(m)^T f(n) is the rotation R((n - m) θ) rather than
    f(n - m): the group property f(m)^T f(n) = f(n - m) (000 §8.3.3 练习 8.3.3-1) fails.
    """
    blocks = []
    for theta in inv_freq.double().tolist():
        c, s = math.cos(position * theta), math.sin(position * theta)
        blocks.append(torch.tensor([[c, s], [s, -c]], dtype=torch.float64))
    return torch.block_diag(*blocks)


def seed_ndim_rope_tables(head_dim: int, n_dims: int, max_pos: int, base: float = 10000.0
                          ) -> tuple[int, tuple[int, ...]]:
    """The third seed's NDimensionalRoPE construction (004 ch. 9, '实践代码'), re-expressed to
    measure it: per axis it takes ``arange(0, pairs_per_dim, 2) / pairs_per_dim`` exponents
    (pairs_per_dim = head_dim / (2 n_dims)) and builds its cache from a 1-D position vector.
    Returns (number of frequencies built, shape of its cos cache)."""
    pairs_per_dim = head_dim // (2 * n_dims)
    per_axis = torch.arange(0, pairs_per_dim, 2).float() / pairs_per_dim
    inv = torch.cat([1.0 / base ** per_axis for _ in range(n_dims)])
    freqs = torch.einsum("p,f->pf", torch.arange(max_pos).float(), inv)  # what 'd,p->dp' can do
    emb = torch.cat([freqs, freqs], dim=-1)
    return inv.numel(), tuple(emb.cos().unsqueeze(0).unsqueeze(0).shape)


# --------------------------------------------------------------- independent closed forms


def vaswani_sinusoid(num_positions: int, dim: int, base: float = 10000.0) -> Tensor:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)) (000 §8.3.3
    理论 A, line 568; Vaswani et al. 2017 §3.5), float64 (num_positions, dim), Python floats."""
    rows = []
    for pos in range(num_positions):
        row: list[float] = []
        for i in range(dim // 2):
            angle = pos / base ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


def vaswani_shift_matrix(shift: int, dim: int, base: float = 10000.0) -> Tensor:
    """M(D) of 000 §8.3.3 line 582: per pair i, (sin, cos)((pos + D) theta_i) =
    [[cos D theta_i, sin D theta_i], [-sin D theta_i, cos D theta_i]] (sin, cos)(pos theta_i)."""
    m = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        a = shift / base ** (2 * i / dim)
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    return m


def roformer_frequencies(rotary_dim: int, base: float = 10000.0) -> list[float]:
    """theta_i = base^(-2i/d), i = 0 .. d/2 - 1 (RoFormer eq. 15; 000 §8.3.3 line 618)."""
    return [base ** (-2 * i / rotary_dim) for i in range(rotary_dim // 2)]


def closed_form_rope_frequencies(rope_type: str, rotary_dim: int, base: float,
                                 params: dict, seq_len: int | None = None
                                 ) -> tuple[list[float], float]:
    """(theta'_i, attention factor) of a context-extension method from its published formula.

    - linear (Chen et al. 2023): theta_i / s.
    - ntk (bloc97 2023): base b' = b s^(d/(d-2)).
    - dynamic (HF DynamicNTK): for L = seq_len > L0, b' = b (s L/L0 - (s - 1))^(d/(d-2)).
    - yarn (Peng et al. 2023, HF ``_compute_yarn_parameters``): ramp over the pair index between
      floor(c(beta_fast)) and ceil(c(beta_slow)), c(r) = d ln(L0/(2 pi r)) / (2 ln b);
      theta' = theta/s on the ramp's 1 side, theta on its 0 side; factor 0.1 ln s + 1.
    - llama3 (Llama 3.1 ``apply_scaling``): wavelength < L0/hff kept, > L0/lff divided by s,
      smooth blend between.
    - longrope (Ding et al. 2024; HF): theta_i / ext_i with ext = long factors iff seq_len > L0;
      factor sqrt(1 + ln s / ln L0).
    """
    d, b = rotary_dim, float(base)
    theta = roformer_frequencies(d, b)
    s = float(params.get("factor", 1.0))
    if rope_type == "default":
        return theta, 1.0
    if rope_type == "linear":
        return [t / s for t in theta], 1.0
    if rope_type in ("ntk", "dynamic"):
        L0 = params.get("original_max_position_embeddings")
        if rope_type == "dynamic":
            if seq_len is None or seq_len <= L0:
                return theta, 1.0
            growth = s * seq_len / L0 - (s - 1)
        else:
            growth = s
        return roformer_frequencies(d, b * growth ** (d / (d - 2))), 1.0
    if rope_type == "yarn":
        L0 = float(params["original_max_position_embeddings"])
        fast, slow = float(params.get("beta_fast", 32.0)), float(params.get("beta_slow", 1.0))

        def corr(r: float) -> float:
            return d * math.log(L0 / (r * 2 * math.pi)) / (2 * math.log(b))

        low, high = max(math.floor(corr(fast)), 0), min(math.ceil(corr(slow)), d - 1)
        if low == high:
            high += 0.001
        out = []
        for j, t in enumerate(theta):
            ramp = min(max((j - low) / (high - low), 0.0), 1.0)  # 1: interpolate, 0: keep
            out.append(t / s * ramp + t * (1 - ramp))
        return out, (0.1 * math.log(s) + 1.0 if s > 1 else 1.0)
    if rope_type == "llama3":
        L0 = float(params["original_max_position_embeddings"])
        lff, hff = float(params["low_freq_factor"]), float(params["high_freq_factor"])
        out = []
        for t in theta:
            wavelen = 2 * math.pi / t
            if wavelen < L0 / hff:
                out.append(t)
            elif wavelen > L0 / lff:
                out.append(t / s)
            else:
                sm = (L0 / wavelen - lff) / (hff - lff)
                out.append((1 - sm) * t / s + sm * t)
        return out, 1.0
    if rope_type == "longrope":
        L0 = float(params["original_max_position_embeddings"])
        long = seq_len is not None and seq_len > L0
        ext = params["long_factor"] if long else params["short_factor"]
        factor = math.sqrt(1 + math.log(s) / math.log(L0)) if s > 1 else 1.0
        return [t / float(e) for t, e in zip(theta, ext, strict=True)], factor
    raise ValueError(f"no closed form for rope type {rope_type!r}")


def axial_angles_closed_form(positions: Tensor, inv_freq: list[float], sections: list[int]
                             ) -> Tensor:
    """M-RoPE (Qwen2-VL): plane j of the a-th contiguous section turns by p_a theta_j.
    positions (N, n_axes) -> (N, d/2) float64, explicit loops."""
    axis = [a for a, n in enumerate(sections) for _ in range(n)]
    rows = [[float(p[axis[j]]) * inv_freq[j] for j in range(len(inv_freq))]
            for p in positions.tolist()]
    return torch.tensor(rows, dtype=torch.float64)
