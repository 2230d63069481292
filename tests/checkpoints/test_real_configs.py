"""The real-config corpus (issue 33 item 6): eleven published ``config.json`` files, scaled down
in width and depth only (``real_configs.py``), written by ``transformers`` in float32 and
bfloat16 and sharded, load with :func:`from_pretrained` and behave like ``transformers`` on the
same folder: logits and loss in float32, greedy and left-padded generation token for token,
logits at positions far out (``position_ids`` up to 100k), and bfloat16 logits within 2x
transformers' own bfloat16-vs-float32 difference.

Measured (CPU, transformers 5.24; the table per config is in docs/checkpoints.md, "Real-config
corpus"): float32 logits of std ~4 agree to <= 1.61e-5 at every position tried, hence
:data:`TOL` = 2e-5.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from transformer_math.checkpoints.io import from_pretrained

transformers = pytest.importorskip("transformers")

TOL = 2e-5
"""float32 logits, ours vs transformers eager on the same folder (worst measured 1.61e-5)."""
LOSS_TOL = 1e-5
BF16_RATIO = 2.0
"""Our bf16 logits vs transformers' float32 on the same (bf16-rounded) weights may differ by at
most this multiple of transformers' own bf16-vs-float32 difference."""


def _corpus_module() -> Any:
    """``real_configs.py`` loaded by path (no sibling imports under --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location(
        "real_configs", Path(__file__).with_name("real_configs.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RC = _corpus_module()
NAMES = sorted(RC.PUBLISHED)


class Loaded:
    """One config of the corpus: its two folders, transformers' models and ours."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.folders = RC.write(name, root / name)
        kw: dict[str, Any] = {"local_files_only": True, "attn_implementation": "eager"}
        auto = transformers.AutoModelForCausalLM
        self.hf = auto.from_pretrained(self.folders["fp32"], **kw).eval()
        self.hf_bf16 = auto.from_pretrained(self.folders["bf16"], dtype="auto", **kw).eval()
        self.hf_bf16_as_fp32 = auto.from_pretrained(self.folders["bf16"], dtype=torch.float32,
                                                    **kw).eval()
        self.ours = from_pretrained(self.folders["fp32"])
        self.ours_bf16 = from_pretrained(self.folders["bf16"])
        cfg = RC.scaled(name)
        pad = cfg.get("pad_token_id")
        eos = cfg.get("eos_token_id")
        self.pad = pad if isinstance(pad, int) else eos


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("real_configs")
    cache: dict[str, Loaded] = {}

    def get(name: str) -> Loaded:
        if name not in cache:
            cache[name] = Loaded(name, root)
        return cache[name]

    return get


def _ids(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, RC.VOCAB - 4, (batch, length), generator=g)  # no special ids


def _logits(model: Any, ids: torch.Tensor, **kw: Any) -> torch.Tensor:
    with torch.no_grad():
        return model(ids, **kw).logits.float()


def _max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    assert a.shape == b.shape
    return float((a - b).abs().max())


@pytest.mark.parametrize("name", NAMES)
def test_fp32_logits_and_loss(corpus, name):
    c = corpus(name)
    assert c.ours.checkpoint_info.family == RC.PUBLISHED[name]["model_type"]
    assert {p.dtype for p in c.ours.parameters()} == {torch.float32}
    ids = _ids(2, 24)
    expected = _logits(c.hf, ids)
    assert expected.softmax(-1).amax(-1).mean() > 0.4  # peaked, not near-uniform
    assert _max_err(_logits(c.ours, ids), expected) <= TOL
    with torch.no_grad():
        theirs = c.hf(ids, labels=ids).loss
        ours = c.ours(ids, labels=ids).loss
    assert abs(float(ours) - float(theirs)) <= LOSS_TOL


def _hf_generate(c: Loaded, ids: torch.Tensor, mask: torch.Tensor, n: int) -> torch.Tensor:
    with torch.no_grad():
        return c.hf.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=n,
                             pad_token_id=c.pad)


@pytest.mark.parametrize("name", NAMES)
def test_greedy_generation_token_equal(corpus, name):
    c = corpus(name)
    prompt = _ids(2, 8, seed=3)
    expected = _hf_generate(c, prompt, torch.ones_like(prompt), 20)
    got = c.ours.generate(prompt, 20, do_sample=False, pad_token_id=c.pad)
    assert torch.equal(got, expected)


@pytest.mark.parametrize("name", NAMES)
def test_left_padded_generation_token_equal(corpus, name):
    c = corpus(name)
    prompt = _ids(2, 9, seed=4)
    mask = torch.ones_like(prompt)
    prompt[1, :3] = c.pad
    mask[1, :3] = 0
    expected = _hf_generate(c, prompt, mask, 12)
    got = c.ours.generate(prompt, 12, attention_mask=mask, do_sample=False, pad_token_id=c.pad)
    assert torch.equal(got, expected)


def _far_offsets(name: str, length: int) -> list[int]:
    """Offsets of a short input placed far out: past 4096 (every LongRoPE/YaRN/llama3 switch the
    short configs have) and at the end of the reach of the config (<= 100k)."""
    reach = RC.LONG_POSITION[name]
    return sorted({min(4100, reach - length), reach - length})


@pytest.mark.parametrize("name", NAMES)
def test_fp32_logits_at_far_positions(corpus, name):
    c = corpus(name)
    ids = _ids(2, 16, seed=5)
    for offset in _far_offsets(name, ids.shape[1]):
        pos = torch.arange(offset, offset + ids.shape[1]).expand(2, -1)
        err = _max_err(_logits(c.ours, ids, position_ids=pos),
                       _logits(c.hf, ids, position_ids=pos))
        assert err <= TOL, (offset, err)


@pytest.mark.parametrize("name", NAMES)
def test_bf16_logits_within_twice_transformers_own_error(corpus, name):
    c = corpus(name)
    assert {p.dtype for p in c.ours_bf16.parameters()} == {torch.bfloat16}
    ids = _ids(2, 24)
    exact = _logits(c.hf_bf16_as_fp32, ids)
    theirs = _max_err(_logits(c.hf_bf16, ids), exact)
    ours = _max_err(_logits(c.ours_bf16, ids), exact)
    assert theirs > 0 and ours <= BF16_RATIO * theirs, (ours, theirs)
