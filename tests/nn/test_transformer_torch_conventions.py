"""Issue 15, torch conventions of the Transformer: meta-device construction + load_state_dict,
torch.compile(fullgraph=True), torch.export, a compiled cached decoding step; clear errors for
empty sequences and out-of-range token ids."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from transformer_math.nn.attention import KVCache
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.generation import decode_step, generate
from transformer_math.nn.transformer import Transformer, build_transformer

VOCAB = 11


def _config(**overrides: Any) -> TransformerConfig:
    base: dict[str, Any] = dict(hidden_size=16, num_layers=2, num_heads=2, vocab_size=VOCAB,
                                max_seq_len=32, position="rope")
    base.update(overrides)
    return TransformerConfig(**base)


def _ids(b: int = 2, t: int = 7, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (b, t), generator=torch.Generator().manual_seed(seed))


VARIANTS = {
    "rope": {},
    "rope-linear": {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    "rope-dynamic": {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0,
                                      "original_max_position_embeddings": 4}},
    "rope-yarn": {"rope_scaling": {"rope_type": "yarn", "factor": 2.0,
                                   "original_max_position_embeddings": 4}},
    "rope-llama3": {"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 4}},
    "rope-partial-gqa": {"partial_rotary_factor": 0.5, "num_kv_heads": 1},
    "rope-tied": {"tie_embeddings": True},
    "sinusoidal": {"position": "sinusoidal"},
    "alibi": {"position": "alibi", "num_heads": 4},
    "relative": {"position": "relative"},
    "local_relative": {"position": "local_relative"},
    "learned": {"position": "learned"},
}


# ----------------------------------------------------------------------------- meta device


@pytest.mark.parametrize("how", ["to_empty", "assign"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_meta_construction_then_load_matches(variant: str, how: str) -> None:
    config = _config(**VARIANTS[variant])
    ref = build_transformer(config, 0).eval()
    x = _ids(t=9)
    want = ref(x)
    with torch.device("meta"):
        model = Transformer(config)
    if how == "to_empty":
        model.to_empty(device="cpu")
        model.load_state_dict(ref.state_dict())
    else:
        model.load_state_dict(ref.state_dict(), assign=True)
    model.eval()
    torch.testing.assert_close(model(x), want, atol=0, rtol=0)
    if config.tie_embeddings:
        assert model.lm_head is not None and model.embed_tokens is not None
        assert model.lm_head.weight is model.embed_tokens.weight
    # the cached path too (incremental decoding after the meta build)
    got_caches, want_caches = model.new_caches(), ref.new_caches()
    for chunk in (x[:, :5], x[:, 5:6], x[:, 6:]):
        torch.testing.assert_close(model(chunk, caches=got_caches), ref(chunk, caches=want_caches),
                                   atol=0, rtol=0)


# ----------------------------------------------------------------------------- compile / export


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_compile_fullgraph_matches_eager(backend: str) -> None:
    torch._dynamo.reset()
    model = build_transformer(_config(attention_backend=backend, num_layers=1), 0).eval()
    x = _ids()
    mask = torch.ones_like(x)
    mask[0, :2] = 0  # left padding: positions from the mask (cumsum), still no host read
    want = model(x, attention_mask=mask)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, attention_mask=mask), want, atol=1e-6, rtol=1e-6)


def test_compile_fullgraph_learned_positions() -> None:
    torch._dynamo.reset()
    model = build_transformer(_config(position="learned", num_layers=1), 0).eval()
    x = _ids()
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x), model(x), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_export_matches_eager(backend: str) -> None:
    model = build_transformer(_config(attention_backend=backend), 0).eval()
    x = _ids()
    program = torch.export.export(model, (x,))
    torch.testing.assert_close(program.module()(x), model(x), atol=1e-6, rtol=1e-6)
    other = _ids(seed=1)  # same shape, other data: the graph holds no baked-in ids
    torch.testing.assert_close(program.module()(other), model(other), atol=1e-6, rtol=1e-6)


class _CachedStep(torch.nn.Module):
    """A decoding step with the KV cache as plain tensors (export takes no KVCache objects)."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, keys: list[torch.Tensor], values: list[torch.Tensor]
                ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        caches = [KVCache(k, v) for k, v in zip(keys, values, strict=True)]
        logits = self.model(ids, caches=caches)
        return logits, [c.key for c in caches], [c.value for c in caches]  # type: ignore[misc]


def _prefilled(model: Transformer, t: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    caches = model.new_caches()
    model(_ids(t=t, seed=t), caches=caches)
    return [c.key for c in caches], [c.value for c in caches]  # type: ignore[misc]


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_export_cached_step_with_dynamic_past_length(backend: str) -> None:
    model = build_transformer(_config(attention_backend=backend, num_layers=1), 0).eval()
    step = _CachedStep(model)
    nxt = _ids(t=1, seed=3)
    keys, values = _prefilled(model, 5)
    past = torch.export.Dim("past", min=1, max=1000)
    program = torch.export.export(step, (nxt, keys, values),
                                  dynamic_shapes=(None, [{2: past}], [{2: past}]))
    for t in (5, 9):  # the traced length and another one
        keys, values = _prefilled(model, t)
        got, want = program.module()(nxt, keys, values), step(nxt, keys, values)
        torch.testing.assert_close(got[0], want[0], atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(got[1][0], want[1][0], atol=0, rtol=0)
        assert got[1][0].shape[2] == t + 1


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_compiled_cached_decode_step_matches_eager(backend: str) -> None:
    torch._dynamo.reset()
    model = build_transformer(_config(attention_backend=backend, num_layers=1), 0).eval()
    step = torch.compile(decode_step, fullgraph=True, backend="eager")
    prompt = _ids(t=5)
    mask = torch.ones_like(prompt)
    mask[1, :2] = 0  # one left-padded row
    eager_caches, compiled_caches = model.new_caches(), model.new_caches()
    ids_e = ids_c = prompt
    mask_e = mask_c = mask
    tokens_e, tokens_c = [], []
    with torch.no_grad():
        for _ in range(2):  # the prompt, then one cached step
            ids_e = decode_step(model, ids_e, attention_mask=mask_e, caches=eager_caches)
            ids_c = step(model, ids_c, attention_mask=mask_c, caches=compiled_caches)
            tokens_e.append(ids_e)
            tokens_c.append(ids_c)
            mask_e = torch.cat([mask_e, torch.ones_like(ids_e)], dim=1)
            mask_c = torch.cat([mask_c, torch.ones_like(ids_c)], dim=1)
    assert torch.equal(torch.cat(tokens_c, 1), torch.cat(tokens_e, 1))
    for ce, cc in zip(eager_caches, compiled_caches, strict=True):
        assert ce.key is not None and cc.key is not None and cc.value is not None
        assert cc.seq_len == ce.seq_len == 5 + 1
        torch.testing.assert_close(cc.key, ce.key, atol=1e-6, rtol=1e-6)
    # and generate (which calls decode_step) gives the same continuation
    assert torch.equal(generate(model, prompt, 2, attention_mask=mask)[:, 5:],
                       torch.cat(tokens_e, 1))


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_vmap_and_grad_over_the_rope_transformer(backend: str) -> None:
    """before: vmap over token ids failed on ``.item()`` (the token range check)."""
    model = build_transformer(_config(attention_backend=backend, num_layers=1), 0).eval()
    ids = torch.stack([_ids(seed=s) for s in range(3)])  # (3, B, T)
    got = torch.func.vmap(model)(ids)
    torch.testing.assert_close(got, torch.stack([model(i) for i in ids]), atol=1e-6, rtol=1e-6)
    params = dict(model.named_parameters())

    def loss(p: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.func.functional_call(model, p, (ids[0],)).square().sum()

    grads = torch.func.grad(loss)(params)
    model.zero_grad()
    loss(params).backward()
    for name, p in params.items():
        assert p.grad is not None
        torch.testing.assert_close(grads[name], p.grad, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("backend", ["sdpa", "reference", "linear"])
def test_empty_sequences_refused_clearly(backend: str) -> None:
    model = build_transformer(_config(attention_backend=backend), 0)
    empty = torch.zeros(2, 0, dtype=torch.long)
    for call in (lambda: model(empty), lambda: model.hidden_states(empty)):
        with pytest.raises(ValueError, match=r"input_ids must hold at least one position"):
            call()
    with pytest.raises(ValueError, match=r"input_ids must have shape \(batch, seq>=1\)"):
        generate(model, empty, 3)
    vectors = build_transformer(_config(attention_backend=backend, vocab_size=None,
                                        input_size=3), 0)
    with pytest.raises(ValueError, match=r"inputs_embeds must hold at least one position"):
        vectors(inputs_embeds=torch.zeros(2, 0, 3))


def test_out_of_range_token_ids_refused_clearly() -> None:
    model = build_transformer(_config(), 0)
    pattern = rf"input_ids: token ids must be in \[0, {VOCAB}\) \(vocab_size={VOCAB}\)"
    for bad in ([[1, VOCAB]], [[-1, 2]], [[0, 10**9]]):
        ids = torch.tensor(bad)
        for call in (lambda i=ids: model(i), lambda i=ids: model.hidden_states(i),
                     lambda i=ids: model.embed(i, None, torch.arange(2)),
                     lambda i=ids: generate(model, i, 2)):
            with pytest.raises(ValueError, match=pattern):
                call()
    with pytest.raises(ValueError, match="input_ids must be a LongTensor"):
        model(torch.tensor([[1.0, 2.0]]))
    vectors = build_transformer(_config(vocab_size=None, input_size=3), 0)
    with pytest.raises(ValueError, match="takes inputs_embeds, not input_ids"):
        vectors(torch.tensor([[1, 2]]))
    ok = torch.tensor([[0, VOCAB - 1]])  # the edges are fine
    assert model(ok).shape == (1, 2, VOCAB)
