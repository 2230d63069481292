"""The one initialisation convention (issue 12): nn.init.seeded and reset_parameters(generator)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_math.checkpoints.adapters import llama
from transformer_math.experiments.induction_heads import InductionHeadsConfig
from transformer_math.experiments.presets import tiny_transformer_config
from transformer_math.experiments.rope_extrapolation import (
    RopeExtrapolationConfig,
    position_lm_config,
)
from transformer_math.experiments.task_diversity import TaskDiversityConfig
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import (
    as_generator,
    no_init_draws,
    private_rng,
    reset_parameters,
    seeded,
)
from transformer_math.nn.linear_self_attention import LinearSelfAttention
from transformer_math.nn.sets import DeepSets, SetTransformer
from transformer_math.nn.transformer import Transformer
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import (
    DecisionTransformer,
    DTConfig,
)

FACTORIES = {
    "mha-gqa": lambda: MultiHeadAttention(32, 4, num_kv_heads=2),
    "encoder": lambda: Transformer(TransformerConfig(hidden_size=16, num_heads=2, causal=False,
                                                     output_size=0)),
    "decoder": lambda: Transformer(TransformerConfig(hidden_size=16, num_heads=2,
                                                     norm_placement="post",
                                                     cross_attention=True, output_size=0)),
    "decoder-lm-tied": lambda: Transformer(TransformerConfig(
        vocab_size=11, max_seq_len=8, hidden_size=16, num_layers=2, num_heads=2,
        tie_embeddings=True)),
    "icl-gpt": lambda: Transformer(TaskDiversityConfig(x_dim=3, num_points=5).model_config()),
    "attention-only": lambda: Transformer(
        InductionHeadsConfig(vocab_size=16, d_model=16, num_heads=2).model_config(2)),
    "linear-self-attention": lambda: LinearSelfAttention(4, 2),
    "deepsets": lambda: DeepSets(2, 8, 1, pooling="max"),
    "set-transformer": lambda: SetTransformer(2, 8, 1, num_heads=2, num_sab=1),
    "tiny-transformer": lambda: Transformer(tiny_transformer_config(
        5, 5, hidden_size=16, num_heads=2, num_layers=1, max_seq_len=8, position="relative")),
    "position-lm": lambda: Transformer(position_lm_config(RopeExtrapolationConfig.tiny(),
                                                          "learned")),
    "checkpoint-llama": lambda: Transformer(llama.preset(
        vocab_size=13, hidden_size=16, intermediate_size=24, num_layers=1, num_heads=2,
        num_kv_heads=1, max_seq_len=32)),
    "act": lambda: ACTPolicy(ACTConfig(state_dim=2, action_dim=2, chunk_size=3, dim=16)),
    "bc": lambda: BCPolicy(BCConfig(2, 2, 1, 16, 2, "mse")),
    "dt": lambda: DecisionTransformer(DTConfig(state_dim=2, action_dim=2, context_len=4, dim=16,
                                               num_layers=1, num_heads=2)),
}


def _params(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_seeded_is_a_function_of_the_seed_and_leaves_the_global_rng_alone(name):
    factory = FACTORIES[name]
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = _params(seeded(factory, 7))
    assert torch.equal(before, torch.get_rng_state()), "construction drew from the global RNG"
    torch.manual_seed(999)  # a different global state must not change the model
    torch.randn(17)
    b = _params(seeded(factory, 7))
    c = _params(seeded(factory, 8))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
        assert torch.isfinite(a[key].float()).all(), f"{key} left uninitialised"
    moved = [k for k in a if a[k].is_floating_point() and a[k].numel() > 1 and a[k].std() > 0
             and not torch.equal(a[k], c[k])]
    assert moved, "another seed changed no parameter"


def test_reset_parameters_is_recursive_and_redraws_everything():
    model = seeded(FACTORIES["decoder-lm-tied"], 0)
    first = _params(model)
    reset_parameters(model, as_generator(1))
    changed = [k for k, v in _params(model).items() if not torch.equal(v, first[k])]
    matrices = [k for k, v in first.items() if v.dim() >= 2]
    assert set(matrices) <= set(changed)
    assert model.lm_head.weight is model.embed_tokens.weight  # tying survives


def test_module_with_parameters_and_no_rule_is_an_error():
    class Bare(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.zeros(3))

    with pytest.raises(TypeError, match=r"Bare.*reset_parameters\(generator\)"):
        reset_parameters(nn.Sequential(Bare()), torch.Generator())
    with pytest.raises(TypeError, match=r"torch\.Generator"):
        reset_parameters(nn.Linear(2, 2), 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int seed"):
        as_generator("0")  # type: ignore[arg-type]


def test_builtin_rules_match_torch_distributions():
    g = torch.Generator().manual_seed(0)
    lin = seeded(lambda: nn.Linear(400, 300), g)
    bound = 1 / 400**0.5
    assert lin.weight.abs().max() <= bound and lin.weight.abs().max() > 0.99 * bound
    # U(-b, b) has variance b^2 / 3
    assert abs(float(lin.weight.detach().var()) / (bound**2 / 3) - 1) < 0.02
    emb = seeded(lambda: nn.Embedding(500, 200, padding_idx=3), 0)
    assert abs(float(emb.weight.detach().std()) - 1) < 0.01 and emb.weight[3].abs().sum() == 0
    ln = seeded(lambda: nn.LayerNorm(7), 0)
    assert torch.equal(ln.weight, torch.ones(7)) and torch.equal(ln.bias, torch.zeros(7))


def test_no_init_draws_restores_torch_initialisers():
    original = nn.init.normal_
    with no_init_draws():
        assert nn.init.normal_ is not original
        t = torch.full((3,), 5.0)
        nn.init.normal_(t)
        assert torch.equal(t, torch.full((3,), 5.0))
    assert nn.init.normal_ is original


def test_private_rng_is_reproducible_and_restores_the_caller_state():
    torch.manual_seed(5)
    state = torch.get_rng_state()
    with private_rng(11):
        a = torch.rand(4)
    assert torch.equal(state, torch.get_rng_state())
    with private_rng(11):
        b = torch.rand(4)
    assert torch.equal(a, b)
