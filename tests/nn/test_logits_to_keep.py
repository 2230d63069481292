"""``Transformer.forward(logits_to_keep=k)`` (transformers' convention, issue 36 item 3): the
head at the last k positions only, 0 at all of them; generation's prefill keeps one. Parity
with transformers and the planted bug are in tests/checkpoints/test_plumbing_bugs.py."""

from __future__ import annotations

import pytest
import torch

from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.generation import accepts_logits_to_keep, generate
from transformer_math.nn.transformer import Transformer, build_transformer


def _model() -> Transformer:
    cfg = TransformerConfig(vocab_size=50, max_seq_len=64, hidden_size=32, num_heads=4,
                            num_kv_heads=2, num_layers=2, position="rope")
    return build_transformer(cfg, 0).eval()


def _ids() -> torch.Tensor:
    return torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("keep", [1, 4, 9, 20])
def test_the_kept_logits_are_the_last_positions_of_the_full_forward(keep):
    model, ids = _model(), _ids()
    with torch.no_grad():
        full = model(ids)
        kept = model(ids, logits_to_keep=keep)
    assert kept.shape == (2, min(keep, 9), 50)
    torch.testing.assert_close(kept, full[:, -keep:], rtol=0, atol=1e-6)
    with torch.no_grad():
        assert torch.equal(model(ids, logits_to_keep=0), full)


@pytest.mark.parametrize("bad", [-1, 1.0, True, "1", None])
def test_a_bad_logits_to_keep_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="logits_to_keep must be an int >= 0") as info:
        _model()(_ids(), logits_to_keep=bad)
    assert repr(bad) in str(info.value)


def test_logits_to_keep_with_labels_is_refused():
    ids = _ids()
    with pytest.raises(ValueError, match="cannot be combined with labels"):
        _model()(ids, labels=ids, logits_to_keep=1)


def test_generation_prefill_runs_the_head_at_one_position():
    model, ids = _model(), _ids()
    assert accepts_logits_to_keep(model)
    seen: list[int] = []
    hook = model.lm_head.register_forward_hook(lambda m, i, o: seen.append(i[0].shape[1]))
    try:
        out = generate(model, ids, 5)
    finally:
        hook.remove()
    assert seen == [1] * 5  # prefill (9 positions) and four cached steps: one row each
    with torch.no_grad():  # the same tokens as choosing from the full forward's last row
        ref = ids
        for _ in range(5):
            ref = torch.cat([ref, model(ref)[:, -1:].argmax(-1)], dim=1)
    assert torch.equal(out, ref)


def test_a_model_of_the_bare_contract_is_called_without_it():
    inner = _model()

    class Bare(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner, self.config = inner, inner.config

        def forward(self, ids, attention_mask=None, caches=None):
            return self.inner(ids, attention_mask=attention_mask, caches=caches)

        def new_caches(self):
            return self.inner.new_caches()

    bare = Bare().eval()
    assert not accepts_logits_to_keep(bare)
    ids = _ids()
    assert torch.equal(generate(bare, ids, 4), generate(inner, ids, 4))
