"""RoPE angles as transformers computes them (issue 33 item 2).

``precision="library"`` gives transformers 5.24's float32 ``inv_freq`` bit for bit for every
rope_type the project shares with it, and ``RotaryEmbedding`` then gives its cos/sin bit for bit
at positions up to 131,071 (cache lookups and direct computation alike); a loaded checkpoint
uses it, so logits of inputs placed far out (position_ids up to 131,071) agree with
transformers' as closely as at short positions. The float64 path stays the default of the plain
``Transformer`` and differs (by design) from transformers' float32 frequencies.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from transformer_math.functional.rope_scaling import compute_rope_frequencies
from transformer_math.nn.position import RotaryEmbedding

transformers = pytest.importorskip("transformers")

from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

HEAD_DIM, THETA, MAX_POS = 64, 500000.0, 8192
PAIRS = HEAD_DIM // 2
CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 2.0},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": 2048},
    "yarn-untruncated": {"factor": 3, "original_max_position_embeddings": 1000,
                         "beta_fast": 24, "beta_slow": 2, "truncate": False},
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 2048},
    "longrope": {"short_factor": [1.0 + 0.01 * i for i in range(PAIRS)],
                 "long_factor": [1.0 + 0.37 * i for i in range(PAIRS)],
                 "original_max_position_embeddings": 2048, "factor": 4.0},
}
LENGTHS = {"dynamic": [None, 1000, 8192, 8193, 9000, 131072],
           "longrope": [None, 2048, 2049, 131072]}


def _type(case: str) -> str:
    return case.split("-")[0]


def _hf_config(case: str) -> Any:
    params = {"rope_type": _type(case), "rope_theta": THETA, **CASES[case]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.LlamaConfig(
            hidden_size=4 * HEAD_DIM, num_attention_heads=4, head_dim=HEAD_DIM,
            max_position_embeddings=MAX_POS, rope_parameters=params)


def _ours(case: str) -> dict[str, Any]:
    params = dict(CASES[case])
    if case == "dynamic":  # transformers' dynamic NTK takes L0 = max_position_embeddings
        params["original_max_position_embeddings"] = MAX_POS
    return params


def _hf_inv_freq(case: str, seq_len: int | None) -> tuple[torch.Tensor, float]:
    config = _hf_config(case)
    if case == "default":
        return transformers.models.llama.modeling_llama.LlamaRotaryEmbedding \
            .compute_default_rope_parameters(config)
    # in its forward, transformers' dynamic update passes the length as an int64 tensor
    n = torch.tensor(seq_len) if case == "dynamic" and seq_len is not None else seq_len
    return ROPE_INIT_FUNCTIONS[_type(case)](config, None, seq_len=n)


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_inv_freq_is_transformers_bit_for_bit(case):
    for seq_len in LENGTHS.get(case, [None]):
        expected, factor = _hf_inv_freq(case, seq_len)
        got, got_factor = compute_rope_frequencies(_type(case), HEAD_DIM, THETA, _ours(case),
                                                   seq_len, precision="library")
        assert got.dtype == torch.float32
        assert torch.equal(got, expected), (case, seq_len)
        assert got_factor == factor
        f64, _ = compute_rope_frequencies(_type(case), HEAD_DIM, THETA, _ours(case), seq_len)
        assert f64.dtype == torch.float64  # the default path is unchanged
        torch.testing.assert_close(f64.float(), expected, rtol=3e-7, atol=0)


POSITIONS = [torch.arange(17), torch.arange(3000), torch.arange(60000, 70000),
             torch.arange(131072 - 4096, 131072), torch.tensor([5, 70000, 131071, 9, 2049])]


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_cos_sin_are_transformers_bit_for_bit(case):
    """cos/sin of (1, T) and (T,) position ids, from the cache (< 65536) and computed directly
    past it, equal the output of transformers' rotary embedding at positions up to 131,071."""
    rotary = RotaryEmbedding(HEAD_DIM, base=THETA, scaling={"rope_type": _type(case),
                                                            **_ours(case)},
                             max_position_embeddings=MAX_POS, precision="library")
    x = torch.zeros(1)
    for pos in POSITIONS:
        # a fresh module per call: transformers' dynamic type keeps the longest length seen
        hf = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(_hf_config(case))
        cos, sin = hf(x, pos[None])
        for ids, want_cos, want_sin in ((pos[None], cos, sin), (pos, cos[0], sin[0])):
            got_cos, got_sin = rotary(ids)
            assert torch.equal(got_cos, want_cos) and torch.equal(got_sin, want_sin), (
                case, int(pos.max()))


def test_set_precision_switches_and_rejects_unknown_values():
    rotary = RotaryEmbedding(HEAD_DIM, base=THETA, scaling={"rope_type": "llama3",
                                                            **_ours("llama3")})
    assert rotary.precision == "float64"
    f64 = rotary.inv_freq.clone()
    cos64 = rotary(torch.arange(4000))[0]
    assert rotary.set_precision("library") is rotary
    expected = _hf_inv_freq("llama3", None)[0]
    assert torch.equal(rotary.inv_freq, expected) and not torch.equal(f64, expected)
    assert not torch.equal(rotary(torch.arange(4000))[0], cos64)  # the cache was rebuilt
    assert "precision='library'" in repr(rotary)
    rotary.set_precision("float64")
    assert torch.equal(rotary.inv_freq, f64)
    with pytest.raises(ValueError, match="precision must be one of"):
        rotary.set_precision("float16")
    with pytest.raises(ValueError, match="precision must be one of"):
        compute_rope_frequencies("default", 8, precision="fp32")
    with pytest.raises(ValueError, match="precision must be one of"):
        RotaryEmbedding(8, precision="double")


def test_ntk_has_no_transformers_formula_and_keeps_its_values():
    f64, _ = compute_rope_frequencies("ntk", 16, 10000.0, {"factor": 2.0})
    lib, _ = compute_rope_frequencies("ntk", 16, 10000.0, {"factor": 2.0}, precision="library")
    assert lib.dtype == torch.float32 and torch.equal(lib, f64.float())


# ------------------------------------------------------------- loaded checkpoints, far positions

FAR = (0, 8000, 65000, 100000, 131072 - 16)
FAR_TOL = 2e-5  # measured <= 5.2e-6 (logits of order 4); the float64 angles give 3e-4..7e-3
LONG_ROPES: dict[str, dict[str, Any]] = {
    "llama3": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
               "rope_theta": 500000.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
             "rope_theta": 1000000.0},
}


def _far_errors(hf_model: Any, ours: Any, ids: torch.Tensor) -> float:
    worst = 0.0
    with torch.no_grad():
        for offset in FAR:
            pos = torch.arange(offset, offset + ids.shape[1])[None]
            expected = hf_model(ids, position_ids=pos).logits
            got = ours(ids, position_ids=pos).logits
            assert expected.abs().max() > 0.5
            worst = max(worst, float((got - expected).abs().max()))
    return worst


@pytest.mark.parametrize("rope", sorted(LONG_ROPES))
def test_loaded_llama_logits_match_far_out(tmp_path, ref, rope):
    hf_model = ref.llama(tmp_path, rope=LONG_ROPES[rope], max_position_embeddings=131072)
    from transformer_math.checkpoints.io import from_pretrained

    ours = from_pretrained(tmp_path)
    assert ours.rotary.precision == "library"
    assert _far_errors(hf_model, ours, ref.tokens(1, 16)) <= FAR_TOL


def test_loaded_phi3_longrope_logits_match_far_out(tmp_path, ref):
    pairs = 4  # head_dim 8
    rope = {"rope_type": "longrope", "rope_theta": 10000.0,
            "short_factor": [1.0, 1.1, 1.3, 1.7][:pairs],
            "long_factor": [1.0, 2.5, 9.0, 30.0][:pairs]}
    hf_model = ref.family("phi3", tmp_path, rope_parameters=rope,
                          max_position_embeddings=131072, original_max_position_embeddings=4096)
    from transformer_math.checkpoints.io import from_pretrained

    ours = from_pretrained(tmp_path)
    assert ours.rotary.precision == "library" and ours.rotary.rope_type == "longrope"
    assert _far_errors(hf_model, ours, ref.tokens(1, 16)) <= FAR_TOL
