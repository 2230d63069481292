"""The bug zoo at the model-level plumbing (issue 33 item 8): each planted bug here lives in the
library code a user runs (``nn/generation.py``, ``nn/transformer.py``, ``nn/attention.py``,
``nn/norms.py``) and is killed by the test that names it (``Bug.test``), mostly by parity with
``transformers`` on the real-config corpus (``real_configs.py``): every test first passes with
nothing planted, then fails its own check with the bug planted."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from transformer_math.bugs import BUGS, load_all, plant
from transformer_math.checkpoints.io import from_pretrained
from transformer_math.nn.generation import sampling_probs
from transformer_math.nn.transformer import Transformer

transformers = pytest.importorskip("transformers")

TOL = 2e-5  # float32 logits, as in test_real_configs.py
KILL = 1e-3  # a planted bug must move the checked quantity by more than this


def _corpus_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "real_configs", Path(__file__).with_name("real_configs.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RC = _corpus_module()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """``get(name, **overrides)`` -> (transformers model, ours), float32, cached per module."""
    root = tmp_path_factory.mktemp("plumbing")
    cache: dict[str, tuple[Any, Any]] = {}

    def get(name: str, **overrides: Any) -> tuple[Any, Any]:
        key = f"{name}-{sorted(overrides.items())}"
        if key not in cache:
            folder = root / key.replace(" ", "").replace("'", "")
            cfg = {**RC.scaled(name), **overrides}
            config = transformers.AutoConfig.for_model(
                **{k: v for k, v in cfg.items() if k != "architectures"})
            torch.manual_seed(0)
            model = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation="eager").float().eval()
            RC.redraw(model, 0)
            model.save_pretrained(folder)
            cache[key] = (model, from_pretrained(folder))
        return cache[key]

    return get


def _ids(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, RC.VOCAB - 4, (batch, length), generator=g)


def _err(hf: Any, ours: Any, ids: torch.Tensor, **kw: Any) -> float:
    with torch.no_grad():
        return float((ours(ids, **kw).logits - hf(ids, **kw).logits).abs().max())


def test_every_plumbing_bug_names_a_test_of_this_file():
    load_all()
    mine = [b for b in BUGS.values() if b.test.startswith("tests/checkpoints/test_plumbing")]
    assert len(mine) >= 11
    text = Path(__file__).read_text(encoding="utf-8")
    for bug in mine:
        assert f"def {bug.test.partition('::')[2]}(" in text, bug.name


def test_sampling_applies_temperature_before_top_k_and_top_p():
    """``sampling_probs`` equals transformers' Temperature -> TopK -> TopP warpers followed by
    softmax (``generation/logits_process.py``)."""
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    logits = 3.0 * torch.randn(4, RC.VOCAB, generator=torch.Generator().manual_seed(0))
    settings = {"temperature": 0.5, "top_k": 20, "top_p": 0.7}
    warpers = LogitsProcessorList([TemperatureLogitsWarper(0.5), TopKLogitsWarper(20),
                                   TopPLogitsWarper(0.7)])
    expected = torch.softmax(warpers(torch.zeros(4, 1, dtype=torch.long), logits), dim=-1)

    def err() -> float:
        return float((sampling_probs(logits, **settings) - expected).abs().max())

    assert err() <= 1e-6
    with plant("generation.temperature-after-filters"):
        assert err() > KILL


def test_finished_rows_continue_with_padding(corpus):
    """A row that emits eos is padded while the other row goes on, as in transformers."""
    hf, ours = corpus("llama-3.2-1b")
    prompt = _ids(2, 6, seed=7)
    free = ours.generate(prompt, 10, do_sample=False, eos_token_id=None)[:, 6:]
    # an eos that row 0 emits at step 2 and row 1 never emits
    eos = int(free[0, 2])
    assert eos not in free[0, :2].tolist() and eos not in free[1].tolist()
    pad = 0

    def generated() -> torch.Tensor:
        return ours.generate(prompt, 10, do_sample=False, eos_token_id=eos, pad_token_id=pad)

    with torch.no_grad():
        expected = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                               max_new_tokens=10, eos_token_id=eos, pad_token_id=pad)
    assert (expected[0, 9:] == pad).all()
    assert torch.equal(generated(), expected)
    with plant("generation.finished-rows-continue"):
        assert not torch.equal(generated(), expected)


def test_left_padded_positions_count_real_tokens(corpus):
    """Left-padded generation equals transformers' (positions from the mask), and the padded
    row's last logits equal the unpadded prompt's. GPT-2: its learned positions are absolute
    (RoPE is shift-invariant, so a uniform shift of a row's positions changes nothing there)."""
    hf, ours = corpus("gpt2")
    prompt = _ids(2, 9, seed=4)
    mask = torch.ones_like(prompt)
    prompt[1, :3], mask[1, :3] = 0, 0
    with torch.no_grad():
        expected = hf.generate(prompt, attention_mask=mask, do_sample=False, max_new_tokens=8,
                               pad_token_id=0)

    def padded_minus_unpadded() -> float:
        with torch.no_grad():
            padded = ours(prompt, attention_mask=mask).logits[1, -1]
            alone = ours(prompt[1:, 3:]).logits[0, -1]
        return float((padded - alone).abs().max())

    def generated() -> torch.Tensor:
        return ours.generate(prompt, 8, attention_mask=mask, do_sample=False, pad_token_id=0)

    assert torch.equal(generated(), expected)
    assert padded_minus_unpadded() <= TOL
    with plant("transformer.left-pad-positions-counted"):
        assert padded_minus_unpadded() > KILL
        assert not torch.equal(generated(), expected)


def test_loss_is_the_shifted_next_token_loss(corpus):
    """``model(ids, labels=ids).loss`` equals transformers' (logits[t] scored on labels[t+1])."""
    hf, ours = corpus("qwen2.5-0.5b")
    ids = _ids(2, 16)
    labels = ids.clone()
    labels[0, :4] = -100  # ignored positions count as in transformers

    def err() -> float:
        with torch.no_grad():
            return abs(float(ours(ids, labels=labels).loss) - float(hf(ids, labels=labels).loss))

    assert err() <= 1e-5
    with plant("transformer.loss-labels-unshifted"):
        assert err() > KILL


def test_logits_to_keep_is_the_last_k_positions(corpus):
    """``logits_to_keep=k`` gives transformers' logits of the last k positions (and 0 all of
    them), and greedy generation, whose prefill keeps one, equals transformers'."""
    hf, ours = corpus("llama-3.2-1b")
    ids = _ids(2, 12)
    for keep in (0, 1, 3, 40):
        assert _err(hf, ours, ids, logits_to_keep=keep) <= TOL
    with torch.no_grad():
        assert ours(ids, logits_to_keep=3).logits.shape == (2, 3, RC.VOCAB)
        want = hf.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(ids, 6, eos_token_id=None), want)
    with plant("transformer.logits-to-keep-first"):
        assert _err(hf, ours, ids, logits_to_keep=3) > KILL
        assert not torch.equal(ours.generate(ids, 6, eos_token_id=None), want)


def test_sliding_window_keeps_exactly_w_keys(corpus):
    """Mistral with a window of 5 (published fields otherwise) past the window: logits equal
    transformers' (whose window keeps keys j with p - W < j <= p)."""
    hf, ours = corpus("mistral-7b-v0.1", sliding_window=5)
    ids = _ids(2, 14)
    assert _err(hf, ours, ids) <= TOL
    with plant("transformer.sliding-window-off-by-one"):
        assert _err(hf, ours, ids) > KILL


def test_dropout_is_off_in_eval_mode(corpus):
    """The same weights in a model configured with dropout 0.3 give, in eval mode, the logits of
    the dropout-free checkpoint (and of transformers)."""
    hf, ours = corpus("phi-3-mini-128k")
    noisy = Transformer(dataclasses.replace(ours.config, dropout=0.3))
    noisy.load_state_dict(ours.state_dict())
    noisy.eval()
    ids = _ids(2, 12)
    with torch.no_grad():
        reference = hf(ids).logits

    def err() -> float:
        with torch.no_grad():
            return float((noisy(ids) - reference).abs().max())

    assert err() <= TOL
    with plant("attention.dropout-in-eval"):
        assert err() > KILL


def test_gemma_embedding_scale_and_norm_offset(corpus):
    """Gemma's sqrt(d) embedding scale and 1 + w norm gain, each against transformers."""
    hf, ours = corpus("gemma-2b")
    ids = _ids(2, 12)
    assert _err(hf, ours, ids) <= TOL
    with plant("transformer.embedding-scale-dropped"):
        assert _err(hf, ours, ids) > KILL
    with plant("norm.gemma-offset-dropped"):
        assert _err(hf, ours, ids) > KILL


def test_qwen2_qkv_biases_are_applied(corpus):
    """Qwen2's q, k, v biases (re-drawn, non-zero) change the logits as in transformers."""
    hf, ours = corpus("qwen2.5-7b-yarn")
    assert ours.config.attention_bias and not ours.config.out_bias
    ids = _ids(2, 12)
    assert _err(hf, ours, ids) <= TOL
    with plant("attention.qkv-bias-dropped"):
        assert _err(hf, ours, ids) > KILL


def test_repetition_penalty_lowers_seen_tokens():
    """``penalize_repeats`` equals transformers' ``RepetitionPenaltyLogitsProcessor``."""
    from transformers.generation.logits_process import RepetitionPenaltyLogitsProcessor

    from transformer_math.nn.generation import penalize_repeats

    g = torch.Generator().manual_seed(2)
    logits = 3.0 * torch.randn(2, RC.VOCAB, generator=g)
    history = torch.randint(0, RC.VOCAB, (2, 12), generator=g)
    seen = torch.zeros(2, RC.VOCAB, dtype=torch.bool).scatter(1, history, True)
    expected = RepetitionPenaltyLogitsProcessor(1.3)(history, logits.clone())

    def err() -> float:
        return float((penalize_repeats(logits, seen, 1.3) - expected).abs().max())

    assert err() <= 1e-6
    with plant("generation.repetition-penalty-inverted"):
        assert err() > KILL


def test_llama_rmsnorm_casts_before_the_gain():
    """Llama's RMSNorm in bfloat16 equals transformers' ``LlamaRMSNorm`` bit for bit (cast
    x_hat to bf16, then the gain); the float32 gain rounds differently."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from transformer_math.nn.norms import NORMS

    g = torch.Generator().manual_seed(3)
    theirs = LlamaRMSNorm(64, eps=1e-5)
    ours = NORMS.get("rmsnorm_hf")(64, eps=1e-5)
    with torch.no_grad():
        theirs.weight.copy_(1.0 + 0.3 * torch.randn(64, generator=g))
        ours.weight.copy_(theirs.weight)
    theirs, ours = theirs.to(torch.bfloat16), ours.to(torch.bfloat16)
    x = torch.randn(4, 16, 64, generator=g).to(torch.bfloat16)
    with torch.no_grad():
        expected = theirs(x)
        assert torch.equal(ours(x), expected)
        with plant("norm.llama-gain-in-float32"):
            assert not torch.equal(ours(x), expected)
