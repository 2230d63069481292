"""Issue 15 (hostile and careless input), RoPE part: a bounded cos/sin cache, buffers rebuilt
after the meta device, ``apply_rotary`` under ``torch.func`` (vmap, grad)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from transformer_math.functional.rope import apply_rotary, rope_cos_sin
from transformer_math.nn.position import (
    MAX_ROPE_POSITIONS,
    ROPE_CACHE_POSITIONS,
    ALiBi,
    RotaryEmbedding,
)

SCALINGS = [
    None,
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "ntk", "factor": 2.0},
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16},
    {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 16},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 16},
]


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- bounded cache


def test_huge_position_refused_before_any_allocation() -> None:
    rot = RotaryEmbedding(64, max_position_embeddings=16)
    cos_before = rot.cos_cached
    for bad in (10**8, MAX_ROPE_POSITIONS, 2**40):
        with pytest.raises(ValueError, match=rf"position_ids.*MAX_ROPE_POSITIONS="
                                             rf"{MAX_ROPE_POSITIONS}.*got max {bad}"):
            rot(torch.tensor([3, bad]))
    assert rot.cos_cached is cos_before and rot.cached_positions == 16
    with pytest.raises(ValueError, match="position_ids must be >= 0, got min -1"):
        rot(torch.tensor([-1, 2]))
    with pytest.raises(ValueError, match="position_ids must be < MAX_ROPE_POSITIONS"):
        rot(torch.tensor([1e8]))  # float positions too
    with pytest.raises(ValueError, match="position_ids must be finite"):
        rot(torch.tensor([1.0, float("nan")]))
    with pytest.raises(TypeError, match="position_ids must be a real tensor"):
        rot([1, 2])  # type: ignore[arg-type]


def test_huge_position_under_an_address_space_limit() -> None:
    """Before the fix one id of 1e8 asked for a 137 GB cache here (head_dim 128); now it is
    refused with the ValueError inside a 3 GB address space."""
    code = textwrap.dedent("""
        import resource, torch
        from transformer_math.nn.position import RotaryEmbedding
        rot = RotaryEmbedding(128)
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        try:
            rot(torch.tensor([10**8]))
        except ValueError as err:
            print("REFUSED", err)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "REFUSED position_ids must be < MAX_ROPE_POSITIONS" in out.stdout


def test_positions_up_to_the_maximum_still_work() -> None:
    rot = RotaryEmbedding(16, max_position_embeddings=8)
    edge = torch.tensor([0, 5, ROPE_CACHE_POSITIONS + 3, MAX_ROPE_POSITIONS - 1])
    cos, sin = rot(edge)
    want_cos, want_sin = rope_cos_sin(edge, rot.inv_freq)
    torch.testing.assert_close(cos, want_cos, atol=1e-6, rtol=0)
    torch.testing.assert_close(sin, want_sin, atol=1e-6, rtol=0)
    assert rot.cached_positions == 8  # past the cache bound: computed for this call only
    cos, _ = rot(torch.arange(ROPE_CACHE_POSITIONS - 4, ROPE_CACHE_POSITIONS))
    assert rot.cached_positions == ROPE_CACHE_POSITIONS  # grows by doubling, up to the bound
    torch.testing.assert_close(
        cos, rope_cos_sin(torch.arange(ROPE_CACHE_POSITIONS - 4, ROPE_CACHE_POSITIONS),
                          rot.inv_freq)[0], atol=1e-6, rtol=0)
    rot(torch.tensor([ROPE_CACHE_POSITIONS + 10]))
    assert rot.cached_positions == ROPE_CACHE_POSITIONS  # never past it
    # the cache grows only to what is used (doubling), as before
    small = RotaryEmbedding(16, max_position_embeddings=4)
    small(torch.arange(37))
    assert small.cached_positions == 64


def test_max_position_embeddings_is_validated() -> None:
    for bad in (0, -3, MAX_ROPE_POSITIONS + 1, 10**12, 2.5, True):
        with pytest.raises(ValueError, match="max_position_embeddings must be an int in"):
            RotaryEmbedding(8, max_position_embeddings=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_position_embeddings must be an int in"):
        RotaryEmbedding.from_inv_freq(8, torch.ones(4), max_position_embeddings=10**12)
    big = RotaryEmbedding(8, max_position_embeddings=MAX_ROPE_POSITIONS)  # allowed, capped
    assert big.cached_positions == ROPE_CACHE_POSITIONS


# ----------------------------------------------------------------------------- meta device


@pytest.mark.parametrize("scaling", SCALINGS, ids=lambda s: "default" if s is None
                         else s["rope_type"])
@pytest.mark.parametrize("how", ["to_empty", "assign"])
def test_rotary_built_on_meta_matches(scaling: dict | None, how: str) -> None:
    pos = torch.tensor([[0, 3, 7, 40], [1, 2, 3, 4]])
    ref = RotaryEmbedding(16, scaling=scaling, max_position_embeddings=8)
    with torch.device("meta"):
        rot = RotaryEmbedding(16, scaling=scaling, max_position_embeddings=8)
    assert rot.inv_freq.is_meta
    if how == "to_empty":
        rot.to_empty(device="cpu")
        assert rot.cached_positions == 8
    # "assign": the buffers stay on meta until the first call, which builds them
    for got, want in zip(rot(pos), ref(pos), strict=True):
        torch.testing.assert_close(got, want, atol=0, rtol=0)
    torch.testing.assert_close(rot.inv_freq, ref.inv_freq, atol=0, rtol=0)


def test_custom_frequencies_survive_to_empty() -> None:
    inv = torch.tensor([1.0, 0.1, 0.01])
    ref = RotaryEmbedding.from_inv_freq(8, inv, attention_factor=1.5, max_position_embeddings=4)
    rot = RotaryEmbedding.from_inv_freq(8, inv, attention_factor=1.5, max_position_embeddings=4)
    rot.to_empty(device="cpu")  # junk memory, then recomputed from the kept copy
    pos = torch.arange(9)
    torch.testing.assert_close(rot(pos)[0], ref(pos)[0], atol=0, rtol=0)
    with torch.device("meta"):
        lost = RotaryEmbedding.from_inv_freq(8, torch.ones(3))
    with pytest.raises(ValueError, match="meta-device inv_freq"):
        lost.to_empty(device="cpu")


def test_shared_rotary_visited_twice_by_to_empty() -> None:
    """One RoPE shared by several parents is visited once per parent by ``to_empty``."""
    with torch.device("meta"):
        rot = RotaryEmbedding(8, max_position_embeddings=4)
        parent = torch.nn.ModuleList([torch.nn.ModuleDict({"r": rot}) for _ in range(3)])
    parent.to_empty(device="cpu")
    torch.testing.assert_close(rot(torch.arange(6))[0],
                               RotaryEmbedding(8)(torch.arange(6))[0], atol=0, rtol=0)


@pytest.mark.parametrize("how", ["to_empty", "assign"])
def test_alibi_built_on_meta_matches(how: str) -> None:
    ref = ALiBi(6)
    with torch.device("meta"):
        alibi = ALiBi(6)
    if how == "to_empty":
        alibi.to_empty(device="cpu")
    q, k = torch.arange(3, 7), torch.arange(7)
    torch.testing.assert_close(alibi(q, k), ref(q, k), atol=0, rtol=0)


# ----------------------------------------------------------------------------- torch.func


def test_apply_rotary_under_vmap_and_grad() -> None:
    x = torch.randn(3, 2, 5, 8, generator=_g())
    inv = 1.0 / 10000 ** (torch.arange(0, 8, 2) / 8)
    for layout in ("half", "interleaved"):
        cos, sin = rope_cos_sin(torch.arange(5), inv, layout=layout)
        want = apply_rotary(x, cos, sin, layout=layout)  # eager out= path
        got = torch.func.vmap(lambda t, c=cos, s=sin, la=layout: apply_rotary(t, c, s,
                                                                            layout=la))(x)
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        # batched cos/sin as well (vmap over positions)
        pos = torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [2, 2, 2, 2, 2]])
        cs = rope_cos_sin(pos, inv, layout=layout)
        got = torch.func.vmap(lambda t, c, s, la=layout: apply_rotary(t, c, s, layout=la))(
            x, *cs)
        want = torch.stack([apply_rotary(x[i], cs[0][i], cs[1][i], layout=layout)
                            for i in range(3)])
        torch.testing.assert_close(got, want, atol=0, rtol=0)
    cos, sin = rope_cos_sin(torch.arange(5), inv)
    grad = torch.func.grad(lambda t: apply_rotary(t, cos, sin).square().sum())(x)
    torch.testing.assert_close(grad, 2 * x, atol=1e-5, rtol=1e-5)  # a rotation keeps norms
    rot = RotaryEmbedding(8)
    got = torch.func.vmap(lambda t: rot.rotate(t, torch.arange(5)))(x.unsqueeze(1))
    torch.testing.assert_close(got.squeeze(1), rot.rotate(x, torch.arange(5)), atol=0, rtol=0)


# ----------------------------------------------------------------------------- finite range


@pytest.mark.parametrize(("rope_type", "params", "message"), [
    ("yarn", {"factor": 4.0, "original_max_position_embeddings": 4096, "beta_slow": 5e-324},
     "no finite frequencies"),
    ("yarn", {"factor": 4.0, "original_max_position_embeddings": 4096, "attention_factor": 1e30},
     r"attention_factor 1e\+30 is outside"),
    ("longrope", {"short_factor": [1e-300] * 32, "long_factor": [1.0] * 32,
                  "original_max_position_embeddings": 4096}, "inverse frequencies outside"),
    ("longrope", {"short_factor": [1.0] * 32, "long_factor": [1e-300] * 32,
                  "original_max_position_embeddings": 4096}, "inverse frequencies outside"),
    ("linear", {"factor": 1e300}, "inverse frequencies outside"),
])
def test_scalings_whose_maths_leaves_float32_are_refused(rope_type, params, message) -> None:
    """Issue 39 item 4: well-typed but hostile scaling parameters loaded and gave NaN logits;
    they are refused with the bound in the message (both LongRoPE factor sets are checked)."""
    from transformer_math.functional.rope_scaling import compute_rope_frequencies

    with pytest.raises(ValueError, match=message):
        compute_rope_frequencies(rope_type, 64, 10000.0, params)


def test_published_scalings_stay_accepted() -> None:
    from transformer_math.functional.rope_scaling import compute_rope_frequencies

    for scaling in SCALINGS[1:]:
        params = {k: v for k, v in scaling.items() if k != "rope_type"}
        inv, factor = compute_rope_frequencies(scaling["rope_type"], 128, 500000.0, params)
        assert torch.isfinite(inv).all() and 1.0 <= float(factor) < 2.0
