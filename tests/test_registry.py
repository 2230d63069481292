"""The one Registry class: duplicates raise, metadata is read back, unknown names are named."""

from __future__ import annotations

import pytest

from transformer_math.registry import Registry


def test_register_get_metadata_and_mapping_protocol() -> None:
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1, exact=True)

    @reg.register("b", exact=False)
    def b() -> int:
        return 2

    assert reg.get("a") == 1 and reg["b"] is b
    assert reg.metadata("a")["exact"] is True
    assert reg.names() == ("a", "b") and list(reg) == ["a", "b"] and len(reg) == 2
    assert reg.where(exact=True) == ("a",)
    assert "a" in reg and "z" not in reg


def test_duplicates_raise_but_reregistering_the_same_object_is_a_no_op() -> None:
    reg: Registry[object] = Registry("widget")
    thing = object()
    reg.add("x", thing)
    reg.add("x", thing)
    with pytest.raises(ValueError, match="widget 'x' is already registered"):
        reg.add("x", object())


def test_unknown_name_lists_the_known_ones_and_metadata_is_read_only() -> None:
    reg: Registry[int] = Registry("rope type")
    reg.add("linear", 1, required=("factor",))
    with pytest.raises(ValueError, match=r"rope type must be one of \['linear'\], got 'yarn'"):
        reg.get("yarn")
    with pytest.raises(TypeError):
        reg.metadata("linear")["required"] = ()  # type: ignore[index]


def test_base_class_is_enforced() -> None:
    reg: Registry[type] = Registry("norm", base=int)
    reg.add("ok", bool)
    with pytest.raises(TypeError, match="subclass of int"):
        reg.add("bad", str)


def test_project_registries_carry_the_metadata_their_consumers_read() -> None:
    from transformer_math.functional.attention import ATTENTION_BACKENDS, exact_backends
    from transformer_math.functional.rope_scaling import (
        LENGTH_DEPENDENT_TYPES,
        ROPE_SCALING_FUNCTIONS,
        rope_parameter_names,
    )

    assert "linear" in ATTENTION_BACKENDS and "linear" not in exact_backends()
    assert {"reference", "sdpa", "tiled"} <= set(exact_backends())
    assert {"dynamic", "longrope"} == LENGTH_DEPENDENT_TYPES
    assert rope_parameter_names("yarn")[:2] == ("factor", "original_max_position_embeddings")
    assert ROPE_SCALING_FUNCTIONS.metadata("ntk")["in_transformers"] is False


def test_a_new_rope_type_is_one_registration() -> None:
    import torch

    from transformer_math.functional.rope_scaling import (
        ROPE_SCALING_FUNCTIONS,
        compute_rope_frequencies,
        default_inv_freq,
        register_rope_scaling,
    )

    @register_rope_scaling("halved", required=("factor",), description="test only")
    def halved(rotary_dim, base, params, seq_len):  # type: ignore[no-untyped-def]
        return default_inv_freq(rotary_dim, base) / (2 * params["factor"]), 1.0

    try:
        inv, _ = compute_rope_frequencies("halved", 8, 10000.0, {"factor": 1.0})
        assert torch.allclose(inv, default_inv_freq(8, 10000.0) / 2)
        with pytest.raises(ValueError, match="missing"):
            compute_rope_frequencies("halved", 8, 10000.0, {})
    finally:
        ROPE_SCALING_FUNCTIONS.remove("halved")
