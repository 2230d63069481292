"""Tests of functional/rope.py and functional/rope_scaling.py (issue #3)."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.rope import (
    angles_to_cos_sin,
    apply_rotary,
    apply_rotary_complex,
    axial_rope_angles,
    axial_sections,
    half_to_interleaved_qk_weight,
    interleaved_to_half_permutation,
    interleaved_to_half_qk_weight,
    rope_angles,
    rope_cos_sin,
    rotary_matrix,
)
from transformer_math.functional.rope_scaling import (
    compute_rope_frequencies,
    default_inv_freq,
    rope_types,
    yarn_ramp_bounds,
)


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_known_frequencies_d128() -> None:
    inv, factor = compute_rope_frequencies("default", 128, 10000.0)
    assert inv.shape == (64,)
    assert inv[0].item() == pytest.approx(1.0)
    assert inv[1].item() == pytest.approx(0.86596, abs=1e-5)
    assert inv[-1].item() == pytest.approx(1.1548e-4, rel=1e-4)
    assert factor == 1.0


def test_registry_lists_every_type() -> None:
    assert set(rope_types()) == {"default", "linear", "ntk", "dynamic", "yarn", "llama3",
                                 "longrope"}


def test_linear_is_default_over_s() -> None:
    inv, _ = compute_rope_frequencies("linear", 64, 1e4, {"factor": 4.0})
    torch.testing.assert_close(inv, default_inv_freq(64, 1e4) / 4.0)


def test_ntk_keeps_first_and_divides_last_by_s() -> None:
    d, s = 64, 8.0
    inv, _ = compute_rope_frequencies("ntk", d, 1e4, {"factor": s})
    ref = default_inv_freq(d, 1e4)
    assert inv[0].item() == pytest.approx(1.0)
    assert (inv[-1] / ref[-1]).item() == pytest.approx(1.0 / s, rel=1e-12)
    assert bool((inv <= ref + 1e-15).all())


def test_dynamic_equals_default_below_original_and_grows_above() -> None:
    params = {"factor": 2.0, "original_max_position_embeddings": 512}
    ref = default_inv_freq(64, 1e4)
    for L in (None, 10, 512):
        inv, _ = compute_rope_frequencies("dynamic", 64, 1e4, params, L)
        torch.testing.assert_close(inv, ref)
    inv, _ = compute_rope_frequencies("dynamic", 64, 1e4, params, 2048)
    growth = 2.0 * 2048 / 512 - 1.0
    torch.testing.assert_close(inv, default_inv_freq(64, 1e4 * growth ** (64 / 62)))


def test_yarn_between_interpolated_and_default() -> None:
    s = 16.0
    inv, factor = compute_rope_frequencies(
        "yarn", 128, 1e4, {"factor": s, "original_max_position_embeddings": 4096})
    ref = default_inv_freq(128, 1e4)
    assert bool((inv <= ref * (1 + 1e-12)).all()) and bool((inv >= ref / s * (1 - 1e-12)).all())
    assert factor == pytest.approx(0.1 * math.log(s) + 1)
    low, high = yarn_ramp_bounds(128, 1e4, 4096, 32.0, 1.0)
    assert inv[: int(low) + 1].equal(ref[: int(low) + 1])  # high frequencies kept
    torch.testing.assert_close(inv[math.ceil(high):], ref[math.ceil(high):] / s)


def test_llama3_bands() -> None:
    p = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 8192}
    inv, _ = compute_rope_frequencies("llama3", 128, 500000.0, p)
    ref = default_inv_freq(128, 500000.0)
    wavelen = 2 * math.pi / ref
    short, long = wavelen < 8192 / 4, wavelen > 8192 / 1
    torch.testing.assert_close(inv[short], ref[short])
    torch.testing.assert_close(inv[long], ref[long] / 8)
    mid = ~short & ~long
    assert bool(((inv[mid] < ref[mid]) & (inv[mid] > ref[mid] / 8)).all())


def test_longrope_short_and_long() -> None:
    short = [1.0] * 8
    long = [float(i + 1) for i in range(8)]
    p = {"short_factor": short, "long_factor": long, "original_max_position_embeddings": 256,
         "factor": 4.0}
    ref = default_inv_freq(16, 1e4)
    inv_s, f = compute_rope_frequencies("longrope", 16, 1e4, p, 100)
    inv_l, _ = compute_rope_frequencies("longrope", 16, 1e4, p, 1000)
    torch.testing.assert_close(inv_s, ref)
    torch.testing.assert_close(inv_l, ref / torch.tensor(long, dtype=torch.float64))
    assert f == pytest.approx(math.sqrt(1 + math.log(4) / math.log(256)))


@pytest.mark.parametrize(
    ("rope_type", "params", "match"),
    [
        ("nope", {}, "rope_type must be one of"),
        ("linear", {}, "missing"),
        ("linear", {"factor": 2.0, "beta": 1}, "unknown"),
        ("linear", {"factor": 0.5}, "factor must be >= 1"),
        ("yarn", {"factor": 2.0}, "original_max_position_embeddings"),
        ("llama3", {"factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                    "original_max_position_embeddings": 10}, "high_freq_factor must exceed"),
        ("longrope", {"short_factor": [1.0], "long_factor": [1.0] * 8,
                      "original_max_position_embeddings": 10}, "short_factor must be a list"),
    ],
)
def test_scaling_validation(rope_type: str, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compute_rope_frequencies(rope_type, 16, 1e4, params)


def test_odd_rotary_dim_rejected() -> None:
    with pytest.raises(ValueError, match="rotary_dim must be a positive even integer"):
        compute_rope_frequencies("default", 15)


def test_layouts_agree_after_permutation_and_complex_reference() -> None:
    d = 16
    inv = default_inv_freq(d, 1e4).float()
    x = torch.randn(2, 3, 10, d, generator=_g())
    pos = torch.arange(10)
    ref = apply_rotary_complex(x, pos, inv)  # interleaved pairing
    cos_i, sin_i = rope_cos_sin(pos, inv, layout="interleaved")
    inter = apply_rotary(x, cos_i, sin_i, layout="interleaved")
    torch.testing.assert_close(inter, ref, atol=1e-5, rtol=1e-5)
    perm = interleaved_to_half_permutation(d)
    cos_h, sin_h = rope_cos_sin(pos, inv, layout="half")
    half = apply_rotary(x[..., perm], cos_h, sin_h, layout="half")
    torch.testing.assert_close(half, inter[..., perm], atol=1e-5, rtol=1e-5)
    # without the permutation the layouts disagree
    assert (apply_rotary(x, cos_h, sin_h, layout="half") - inter).abs().max() > 0.1


def test_rotary_matrix_is_orthogonal_and_matches_apply() -> None:
    inv = default_inv_freq(8, 1e4)
    for layout in ("half", "interleaved"):
        R = rotary_matrix(37, inv, layout=layout)
        torch.testing.assert_close(R.T @ R, torch.eye(8, dtype=torch.float64))
        x = torch.randn(8, generator=_g(1), dtype=torch.float64)
        cos, sin = rope_cos_sin(torch.tensor([37]), inv, layout=layout)
        got = apply_rotary(x.view(1, 8), cos, sin, layout=layout)[0].double()
        torch.testing.assert_close(got, R @ x, atol=1e-5, rtol=1e-5)


def test_partial_rotary_passes_the_rest() -> None:
    x = torch.randn(1, 1, 5, 12, generator=_g(2))
    cos, sin = rope_cos_sin(torch.arange(5), default_inv_freq(4, 1e4))
    y = apply_rotary(x, cos, sin)
    assert torch.equal(y[..., 4:], x[..., 4:])
    assert not torch.allclose(y[..., :4], x[..., :4])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


def test_qk_weight_permutation_preserves_logits() -> None:
    heads, hd, d_in = 2, 8, 6
    wq = torch.randn(heads * hd, d_in, generator=_g(3))
    wk = torch.randn(heads * hd, d_in, generator=_g(4))
    x = torch.randn(7, d_in, generator=_g(5))
    inv = default_inv_freq(hd, 1e4).float()
    pos = torch.arange(7)

    def logits(wq: torch.Tensor, wk: torch.Tensor, layout: str) -> torch.Tensor:
        cos, sin = rope_cos_sin(pos, inv, layout=layout)
        q = (x @ wq.T).view(7, heads, hd).transpose(0, 1)
        k = (x @ wk.T).view(7, heads, hd).transpose(0, 1)
        return apply_rotary(q, cos, sin, layout=layout) @ apply_rotary(
            k, cos, sin, layout=layout).transpose(-1, -2)

    meta = logits(wq, wk, "interleaved")
    hf = logits(interleaved_to_half_qk_weight(wq, heads, hd),
                interleaved_to_half_qk_weight(wk, heads, hd), "half")
    torch.testing.assert_close(hf, meta, atol=1e-4, rtol=1e-4)
    assert (logits(wq, wk, "half") - meta).abs().max() > 1e-2  # silently mixing = garbage
    back = half_to_interleaved_qk_weight(interleaved_to_half_qk_weight(wq, heads, hd), heads, hd)
    assert torch.equal(back, wq)


def test_angles_are_float32_even_for_bf16_positions() -> None:
    inv = default_inv_freq(64, 1e4).to(torch.bfloat16)
    ang = rope_angles(torch.tensor([4096]), inv)
    assert ang.dtype == torch.float32
    x = torch.randn(1, 1, 1, 64, generator=_g(6)).to(torch.bfloat16)
    cos, sin = rope_cos_sin(torch.tensor([4096]), default_inv_freq(64, 1e4))
    assert cos.dtype == torch.float32
    assert apply_rotary(x, cos, sin).dtype == torch.bfloat16


def test_axial_reduces_to_1d_and_is_relative() -> None:
    inv = default_inv_freq(16, 100.0).float()
    sections = axial_sections(8, 3)
    assert sections == [3, 3, 2]
    p = torch.tensor([[5.0, 5.0, 5.0]])
    torch.testing.assert_close(axial_rope_angles(p, inv, sections), rope_angles(
        torch.tensor([5.0]), inv))
    q = torch.randn(16, generator=_g(7))
    k = torch.randn(16, generator=_g(8))
    disp = torch.tensor([3.0, -2.0, 7.0])

    def score(pq: torch.Tensor, pk: torch.Tensor) -> float:
        from transformer_math.functional.rope import angles_to_cos_sin
        cq, sq = angles_to_cos_sin(axial_rope_angles(pq.view(1, 3), inv, sections))
        ck, sk = angles_to_cos_sin(axial_rope_angles(pk.view(1, 3), inv, sections))
        return float(apply_rotary(q.view(1, 16), cq, sq) @ apply_rotary(k.view(1, 16), ck, sk).T)

    a = score(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0]) + disp)
    b = score(torch.tensor([10.0, -4.0, 0.5]), torch.tensor([10.0, -4.0, 0.5]) + disp)
    assert a == pytest.approx(b, abs=1e-4)
    with pytest.raises(ValueError, match="sections must be positive and sum"):
        axial_rope_angles(p, inv, [4, 4, 4])


# ------------------------------------------------------------------ planted bugs (issue 14)
# Each test: the planted behaviour differs from the correct one, and the correct one is right.

from transformer_math.bugs import plant  # noqa: E402
from transformer_math.theory.positions import (  # noqa: E402
    axial_angles_closed_form,
    closed_form_rope_frequencies,
    roformer_frequencies,
)


def test_bug_angles_in_bf16() -> None:
    inv = default_inv_freq(64, 1e4)
    pos = torch.tensor([4000])
    exact = 4000 * inv
    good = rope_angles(pos, inv).double()[0]
    with plant("rope.angles-in-bf16"):
        bad = rope_angles(pos, inv).double()[0]
    assert float((good - exact).abs().max()) < 1e-3  # float32: ulp(4000)/2 ~ 2.4e-4
    assert float((bad - exact).abs().max()) > 1.0  # bf16: ulp(4000) = 16


def test_bug_cos_sin_swapped() -> None:
    angles = torch.tensor([[0.3, 1.1]])
    cos, sin = angles_to_cos_sin(angles, layout="interleaved")
    assert torch.allclose(cos, torch.tensor([[math.cos(0.3)] * 2 + [math.cos(1.1)] * 2]))
    with plant("rope.cos-sin-swapped"):
        bcos, bsin = angles_to_cos_sin(angles, layout="interleaved")
    assert torch.equal(bcos, sin) and torch.equal(bsin, cos)


@pytest.mark.parametrize("grad", [False, True])
def test_bug_rotation_sign(grad: bool) -> None:
    x = torch.tensor([[1.0, 0.0]], requires_grad=grad)  # plane (a, b) = (1, 0)
    cos, sin = rope_cos_sin(torch.tensor([1]), torch.tensor([math.pi / 2]), layout="half")
    good = apply_rotary(x, cos, sin)
    with plant("rope.rotation-sign"):
        bad = apply_rotary(x, cos, sin)
    assert torch.allclose(good, torch.tensor([[0.0, 1.0]]), atol=1e-6)  # R(90°) e1 = e2
    assert torch.allclose(bad, torch.tensor([[0.0, -1.0]]), atol=1e-6)


def test_bug_layout_no_permutation() -> None:
    assert interleaved_to_half_permutation(6).tolist() == [0, 2, 4, 1, 3, 5]
    with plant("rope.layout-no-permutation"):
        assert interleaved_to_half_permutation(6).tolist() == list(range(6))


def test_bug_axial_sections_interleaved() -> None:
    inv = default_inv_freq(12, 100.0).float()
    p = torch.tensor([[3.0, 7.0]])
    closed = axial_angles_closed_form(p, inv.double().tolist(), [3, 3])
    good = axial_rope_angles(p, inv, [3, 3]).double()
    with plant("rope.axial-sections-interleaved"):
        bad = axial_rope_angles(p, inv, [3, 3]).double()
    assert torch.allclose(good, closed, atol=1e-5)
    assert float((bad - closed).abs().max()) > 0.1


def test_bug_inv_freq_exponent() -> None:
    closed = torch.tensor(roformer_frequencies(16, 1e4), dtype=torch.float64)
    assert torch.allclose(default_inv_freq(16, 1e4), closed, rtol=1e-12)
    with plant("rope.inv-freq-exponent"):
        bad = default_inv_freq(16, 1e4)
    assert float(bad[1]) == pytest.approx(1e4 ** (-1 / 16))
    assert not torch.allclose(bad, closed, rtol=1e-3)


@pytest.mark.parametrize(("bug", "expected"), [
    ("rope.yarn-attention-factor-dropped", 1.0),
    ("rope.yarn-attention-factor-squared", (0.1 * math.log(8) + 1) ** 2),
])
def test_bug_yarn_attention_factor(bug: str, expected: float) -> None:
    params = {"factor": 8.0, "original_max_position_embeddings": 256}
    _, good = compute_rope_frequencies("yarn", 64, 1e4, params)
    assert good == pytest.approx(0.1 * math.log(8) + 1)
    assert good == pytest.approx(closed_form_rope_frequencies("yarn", 64, 1e4, params)[1])
    with plant(bug):
        _, bad = compute_rope_frequencies("yarn", 64, 1e4, params)
    assert bad == pytest.approx(expected)


def test_bug_dynamic_fixed_factor() -> None:
    params = {"factor": 2.0, "original_max_position_embeddings": 100}
    for length in (200, 800):
        good, _ = compute_rope_frequencies("dynamic", 16, 1e4, params, length)
        closed, _ = closed_form_rope_frequencies("dynamic", 16, 1e4, params, length)
        assert torch.allclose(good, torch.tensor(closed, dtype=torch.float64), rtol=1e-12)
    with plant("rope.dynamic-fixed-factor"):
        a, _ = compute_rope_frequencies("dynamic", 16, 1e4, params, 200)
        b, _ = compute_rope_frequencies("dynamic", 16, 1e4, params, 800)
    assert torch.equal(a, b)  # the growth no longer follows the length
    assert not torch.allclose(b, compute_rope_frequencies("dynamic", 16, 1e4, params, 800)[0])


def test_bug_longrope_switch_off_by_one() -> None:
    params = {"original_max_position_embeddings": 64, "short_factor": [1.0] * 4,
              "long_factor": [2.0] * 4}
    at_l0, _ = compute_rope_frequencies("longrope", 8, 1e4, params, 64)
    assert torch.allclose(at_l0, default_inv_freq(8, 1e4))  # seq_len == L0: short factors
    with plant("rope.longrope-switch-off-by-one"):
        bad, _ = compute_rope_frequencies("longrope", 8, 1e4, params, 64)
    assert torch.allclose(bad, default_inv_freq(8, 1e4) / 2)


def test_bug_llama3_bands_swapped() -> None:
    params = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 256}
    good, _ = compute_rope_frequencies("llama3", 64, 1e4, params)
    closed, _ = closed_form_rope_frequencies("llama3", 64, 1e4, params)
    assert torch.allclose(good, torch.tensor(closed, dtype=torch.float64), rtol=1e-12)
    inv = default_inv_freq(64, 1e4)
    assert float(good[0] / inv[0]) == pytest.approx(1.0)  # highest frequency kept
    with plant("rope.llama3-bands-swapped"):
        bad, _ = compute_rope_frequencies("llama3", 64, 1e4, params)
    assert float(bad[0] / inv[0]) == pytest.approx(1 / 8)
    assert float(bad[-1] / inv[-1]) == pytest.approx(1.0)


def test_closed_forms_match_every_scaling_type() -> None:
    """theory/positions.py's published formulas against functional/rope_scaling.py."""
    cases = [("default", {}, None), ("linear", {"factor": 4.0}, None),
             ("ntk", {"factor": 4.0}, None),
             ("yarn", {"factor": 4.0, "original_max_position_embeddings": 128}, None),
             ("longrope", {"original_max_position_embeddings": 128, "factor": 4.0,
                           "short_factor": [1.0] * 16, "long_factor": [3.0] * 16}, 500)]
    for rope_type, params, seq_len in cases:
        got, factor = compute_rope_frequencies(rope_type, 32, 1e4, params, seq_len)
        closed, closed_factor = closed_form_rope_frequencies(rope_type, 32, 1e4, params, seq_len)
        assert torch.allclose(got, torch.tensor(closed, dtype=torch.float64), rtol=1e-12)
        assert factor == pytest.approx(closed_factor)
