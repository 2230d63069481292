"""The task codec carries data exactly and reads back only data (execution/codec.py)."""

from __future__ import annotations

import fractions
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from transformer_math.claims.registry import Evidence, Figure, Margin, Series, Verdict
from transformer_math.claims.seeds import SeedRun
from transformer_math.execution import codec


def _roundtrip(value):
    text = json.dumps(codec.encode(value), allow_nan=False)
    return codec.decode(json.loads(text))


@given(st.floats(allow_nan=False))
def test_floats_round_trip_exactly(x):
    back = _roundtrip(x)
    assert back == x and math.copysign(1, back) == math.copysign(1, x)


def test_containers_enums_dataclasses_and_non_finite_floats():
    value = {1.0: (float("nan"), float("inf"), -math.inf), "k": [1, True, None, "s"],
             "f": fractions.Fraction(7, 3), "s": frozenset({1, 2}), (1, 2): {"a": 0.1}}
    back = _roundtrip(value)
    assert math.isnan(back[1.0][0]) and back[1.0][1:] == (math.inf, -math.inf)
    assert back["k"] == [1, True, None, "s"] and back["f"] == fractions.Fraction(7, 3)
    assert back["s"] == frozenset({1, 2}) and back[(1, 2)] == {"a": 0.1}
    evidence = Evidence(predicted=[1.0], measured=0.5, tolerance=None, verdict=Verdict.REFUTED,
                        figures=[Figure("t", "x", "y", [Series("a", [1.0], [2.0])])],
                        margins=[Margin("m", 1.0, 0.5)], per_seed={"seeds": [0]})
    back = _roundtrip(evidence)
    assert back == evidence and back.verdict is Verdict.REFUTED
    run = SeedRun(seed=3, values={"a": 0.25}, extra=(1, [2.5]), seconds=0.1, reached=["x"])
    assert _roundtrip(run) == run


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.bool])
def test_tensors_keep_dtype_shape_and_bits(dtype):
    g = torch.Generator().manual_seed(0)
    t = (torch.randn(3, 4, generator=g) * 100).to(dtype)
    back = _roundtrip(t)
    assert back.dtype == dtype and back.shape == t.shape and torch.equal(back, t)
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    back_a = _roundtrip(a)
    assert back_a.dtype == a.dtype and np.array_equal(back_a, a)
    assert _roundtrip(np.float32(0.1)) == np.float32(0.1)
    assert type(_roundtrip(np.float32(0.1))) is np.float32


class Foreign:
    pass


@pytest.mark.parametrize("value", [Foreign(), object(), lambda: 0, torch.nn.Linear(1, 1),
                                   torch.zeros(1, dtype=torch.complex64)])
def test_refuses_to_carry_what_is_not_data(value):
    with pytest.raises(codec.CodecError, match="value"):
        codec.encode(value)


@pytest.mark.parametrize("document", [
    {"$dataclass": "os:system", "fields": {}},                      # not our package
    {"$dataclass": "transformer_math.execution.codec:CodecError", "fields": {}},  # not a dataclass
    {"$dataclass": "transformer_math.claims.seeds:SeedRun", "fields": {"seed": 1}},  # fields
    {"$enum": "transformer_math.claims.registry:Verdict", "value": "maybe"},
    {"$enum": "builtins:int", "value": 1},
    {"$tensor": "float32", "shape": [2], "data": [1.0]},            # wrong count
    {"$tensor": "object", "shape": [1], "data": [1]},
    {"$tensor": "float32", "shape": [1], "data": ["x"]},
    {"$pickle": "gASVAAAA"},                                        # unknown tag
    {"$dict": [[1]]},
    {"$fraction": [1, 0]},
    {},
    float("nan"),
])
def test_decode_rejects_what_encode_never_writes(document):
    with pytest.raises(codec.CodecError):
        codec.decode(document)


def test_deep_nesting_is_refused_not_a_recursion_error():
    deep: list = []
    for _ in range(codec.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(codec.CodecError, match="deeper"):
        codec.encode(deep)


def test_a_log_written_before_a_field_was_added_decodes_with_its_default():
    """Issue 38.3 added fields to Margin: a ``--resume`` log written before reads back, the new
    fields at their defaults; an unknown field is still refused."""
    old = codec.encode(Margin("m", 1.0, 0.5))
    for new_field in ("predicted", "measured", "tested", "bound"):
        del old["fields"][new_field]
    back = codec.decode(json.loads(json.dumps(old)))
    assert back == Margin("m", 1.0, 0.5) and back.predicted is None and back.tested == ""
    old_run = codec.encode(SeedRun(seed=1, values={}))
    del old_run["fields"]["reached"]
    assert codec.decode(old_run).reached == []  # a default_factory gives a fresh value
    stranger = codec.encode(Margin("m", 1.0, 0.5))
    stranger["fields"]["colour"] = "teal"
    with pytest.raises(codec.CodecError, match="fields"):
        codec.decode(stranger)
