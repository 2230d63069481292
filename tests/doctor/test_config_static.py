"""The static config checks (``doctor/config_static.py``): each planted problem is flagged and the
healthy checkpoints and project models stay silent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from transformer_math import bugs
from transformer_math.doctor import (
    Options,
    Severity,
    Subject,
    examine,
    run_checks,
    select_checks,
)
from transformer_math.doctor import config_static as cs
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer

MINE = ["position.learned-table", "attention.sliding-window", "attention.heads",
        "attention.kv-projection-shapes", "checkpoint.tensor-shapes", "norm.placement",
        "scaling.chinchilla"]
STATIC_MINE = [n for n in MINE if n != "attention.kv-projection-shapes"]


def _mine(diagnosis: Any) -> list[Any]:
    return [f for f in diagnosis.findings if f.check in MINE]


def _flagged(diagnosis: Any) -> list[str]:
    return [f"{f.check}: {f.summary}" for f in _mine(diagnosis) if f.flagged]


def _only(diagnosis: Any, check: str, subject: str | None = None) -> Any:
    found = [f for f in diagnosis.by_check(check) if subject is None or f.subject == subject]
    assert len(found) == 1, (check, subject, diagnosis.findings, diagnosis.skipped)
    return found[0]


def _copy(src: str, dst: Path, **config_changes: Any) -> str:
    """A copy of a checkpoint directory with ``config.json`` keys changed (the headers kept)."""
    shutil.copytree(src, dst)
    path = dst / "config.json"
    cfg = json.loads(path.read_text())
    cfg.update(config_changes)
    path.write_text(json.dumps(cfg))
    return str(dst)


def _config_subject(options: Options | None = None, **fields: Any) -> Any:
    """run_checks on a config-only Subject (the static checks need no model)."""
    config = TransformerConfig(**{"vocab_size": 64, "hidden_size": 16, "num_heads": 2,
                                  **fields})
    subject = Subject(config, options or Options())
    return run_checks(subject, select_checks(STATIC_MINE), target="config")


# ------------------------------------------------------------------------------ healthy


@pytest.mark.parametrize("name", ["llama-random", "gpt2-random", "llama-trained",
                                  "gpt2-trained"])
def test_healthy_checkpoints_silent(hf_checkpoints: dict[str, str], name: str) -> None:
    path = hf_checkpoints[name]
    for kw in ({}, {"context": 64}, {"context": 32, "train_tokens": 1e7}):
        d = examine(path, static_only=True, checks=MINE, **kw)
        assert _flagged(d) == [], (name, kw)
        assert d.by_check("attention.heads") and d.by_check("norm.placement")
        assert d.by_check("checkpoint.tensor-shapes")
    # both engines: the static checks judge the same config and headers
    for engine in ("project", "transformers"):
        d = examine(path, engine=engine, checks=MINE, context=64)
        assert _flagged(d) == [], (name, engine)
        assert "checkpoint.loads" not in {f.check for f in d.findings}
    kv = examine(path, checks=["attention.kv-projection-shapes"])
    assert _only(kv, "attention.kv-projection-shapes").severity is Severity.OK


def test_healthy_project_models_silent(project_models: dict[str, Any]) -> None:
    from transformer_math.checkpoints.adapters import gpt2, llama

    presets = {
        "llama-preset": llama.preset(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                                     num_kv_heads=2, intermediate_size=64, max_seq_len=64),
        "gpt2-preset": gpt2.preset(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                                   intermediate_size=128, max_seq_len=64),
    }
    models = dict(project_models)
    models.update({k: build_transformer(c, 0).eval() for k, c in presets.items()})
    for name, model in models.items():
        d = examine(model, checks=MINE)
        assert _flagged(d) == [], name
        assert _only(d, "attention.kv-projection-shapes").severity is Severity.OK
        assert _only(d, "norm.placement").severity is Severity.OK


# ------------------------------------------------------------------ position.learned-table


def test_learned_table_shorter_than_context(hf_gpt2_random: str,
                                            hf_llama_random: str) -> None:
    short = _only(examine(hf_gpt2_random, static_only=True, checks=["position.*"],
                          context=65), "position.learned-table")
    assert short.severity is Severity.WARNING
    assert (short.measured, short.threshold, short.comparison) == (64.0, 65.0, "below")
    assert "transformer.wpe.weight" in short.summary and "RoPE" in short.fix
    ok = _only(examine(hf_gpt2_random, static_only=True, checks=["position.*"], context=64),
               "position.learned-table")
    assert ok.severity is Severity.OK
    rope = examine(hf_llama_random, static_only=True, checks=["position.learned-table"],
                   context=4096)
    assert "position.learned-table" in rope.skipped and not rope.findings


def test_learned_table_project_model(make_project_model: Any) -> None:
    model = make_project_model("gpt2", max_seq_len=16)
    d = examine(model, checks=["position.learned-table"], context=32)
    f = _only(d, "position.learned-table")
    assert f.severity is Severity.WARNING and f.measured == 16.0


# ---------------------------------------------------------------- attention.sliding-window


def test_sliding_window_receptive_field(make_project_model: Any) -> None:
    model = make_project_model("llama", sliding_window=8)  # 2 layers: R = 2 * 7 + 1 = 15
    blind = _only(examine(model, checks=["attention.sliding-window"], context=64),
                  "attention.sliding-window")
    assert blind.severity is Severity.WARNING
    assert (blind.measured, blind.threshold) == (15.0, 64.0)
    relayed = _only(examine(model, checks=["attention.sliding-window"], context=12),
                    "attention.sliding-window")
    assert relayed.severity is Severity.INFO and not relayed.flagged
    covered = _only(examine(model, checks=["attention.sliding-window"], context=8),
                    "attention.sliding-window")
    assert covered.severity is Severity.OK


def test_sliding_window_mistral_checkpoint(hf_factory: Any, tmp_path: Path) -> None:
    path = hf_factory.checkpoint(tmp_path / "w8", "mistral", sliding_window=8)
    f = _only(examine(path, static_only=True, checks=["attention.sliding-window"]),
              "attention.sliding-window")
    assert f.severity is Severity.WARNING and f.details["receptive_field"] == 15
    wide = hf_factory.checkpoint(tmp_path / "w64", "mistral", sliding_window=64)
    d = examine(wide, static_only=True, checks=STATIC_MINE)
    assert _flagged(d) == []
    assert _only(d, "attention.sliding-window").severity is Severity.OK


# ------------------------------------------------------------------------ attention.heads


def test_config_lies_about_kv_heads(hf_llama_random: str, tmp_path: Path) -> None:
    lying = _copy(hf_llama_random, tmp_path / "mha", num_key_value_heads=4)  # tensors: 2
    d = examine(lying, static_only=True, checks=["attention.heads"])
    f = _only(d, "attention.heads", "stored projections")
    assert f.severity is Severity.ERROR and f.measured == 4.0  # k and v of 2 layers
    assert f.details["implied_kv_heads"] == [2]
    assert _only(d, "attention.heads", "grouping").severity is Severity.OK  # 4 | 4 is fine
    shapes = _only(examine(lying, static_only=True, checks=["checkpoint.tensor-shapes"]),
                   "checkpoint.tensor-shapes", "tensors")
    assert shapes.severity is Severity.ERROR and "k_proj" in shapes.summary


def test_config_lies_fused_qkv(hf_factory: Any, tmp_path: Path) -> None:
    path = hf_factory.checkpoint(tmp_path / "phi3", "phi3")  # qkv_proj: 32 + 16 + 16 rows
    healthy = examine(path, static_only=True, checks=STATIC_MINE)
    assert _flagged(healthy) == []
    lying = _copy(path, tmp_path / "phi3-lie", num_key_value_heads=4)
    f = _only(examine(lying, static_only=True, checks=["attention.heads"]), "attention.heads",
              "stored projections")
    assert f.severity is Severity.ERROR and f.details["implied_kv_heads"] == [2]
    assert "qkv_proj" in f.details["mismatches"][0]


def test_kv_heads_not_dividing(hf_llama_random: str, tmp_path: Path) -> None:
    bad = _copy(hf_llama_random, tmp_path / "kv3", num_key_value_heads=3)
    d = examine(bad, static_only=True, checks=["attention.heads"])
    f = _only(d, "attention.heads", "grouping")  # judged from the raw config.json
    assert f.severity is Severity.ERROR and f.measured == 1.0
    assert "raw" in f.summary
    assert _only(d, "checkpoint.loads").severity is Severity.ERROR


def test_head_width_is_a_fact(make_project_model: Any) -> None:
    model = make_project_model("llama", head_dim=16)  # 4 x 16 = 64 != 32
    d = examine(model, checks=MINE)
    assert _only(d, "attention.heads", "width").severity is Severity.INFO
    assert _flagged(d) == []


# --------------------------------------------------------- attention.kv-projection-shapes


def test_gqa_kv_heads_ignored_flagged(make_project_model: Any,
                                      hf_llama_random: str) -> None:
    with bugs.plant("attention.gqa-kv-heads-ignored"):
        planted = make_project_model("llama")  # 4 heads, 2 KV heads configured
        mha = make_project_model("gpt2")  # H_kv = H: the bug changes nothing
        on_disk = examine(hf_llama_random, static_only=True, checks=STATIC_MINE)
    f = _only(examine(planted, checks=MINE), "attention.kv-projection-shapes")
    assert f.severity is Severity.ERROR and f.measured == 4.0  # k and v of 2 layers
    assert "64" not in f.summary and "32 rows (4 heads)" in f.summary
    assert _only(examine(mha, checks=MINE), "attention.kv-projection-shapes").severity \
        is Severity.OK
    # a GQA checkpoint under the bug: the project's model no longer fits its tensors, while the
    # config-arithmetic check (independent of the model code) still agrees with the headers
    assert _only(on_disk, "checkpoint.tensor-shapes", "tensors").severity is Severity.ERROR
    assert _only(on_disk, "attention.heads", "stored projections").severity is Severity.OK
    assert _flagged(examine(make_project_model("llama"), checks=MINE)) == []


# ---------------------------------------------------------------- checkpoint.tensor-shapes


def test_vocab_rows_mismatch(hf_gpt2_random: str, tmp_path: Path) -> None:
    bad = _copy(hf_gpt2_random, tmp_path / "vocab", vocab_size=100)
    d = examine(bad, static_only=True, checks=["checkpoint.tensor-shapes"])
    f = _only(d, "checkpoint.tensor-shapes", "embedding")
    assert f.severity is Severity.ERROR and (f.measured, f.threshold) == (64.0, 100.0)
    assert _only(d, "checkpoint.tensor-shapes", "tensors").severity is Severity.ERROR
    model = examine(build_transformer(TransformerConfig(vocab_size=8, hidden_size=8,
                                                        num_heads=2), 0),
                    checks=["checkpoint.tensor-shapes"])
    assert "checkpoint.tensor-shapes" in model.skipped  # no headers: not a checkpoint


# ------------------------------------------------------------------------- norm.placement


@pytest.mark.parametrize(("fields", "severity"), [
    ({"norm_placement": "pre"}, Severity.OK),
    ({"norm_placement": "post", "num_layers": 2}, Severity.INFO),
    ({"norm_placement": "post", "num_layers": cs.DEEP_LAYERS}, Severity.INFO),
    ({"norm_placement": "post", "num_layers": cs.DEEP_LAYERS + 1}, Severity.WARNING),
    ({"norm_placement": "pre", "final_norm": False}, Severity.WARNING),
    ({"norm_placement": "pre", "final_norm": False, "output_size": 0}, Severity.INFO),
    ({"norm": "none", "num_layers": 2}, Severity.INFO),
    ({"norm": "none", "num_layers": 24}, Severity.WARNING),
])
def test_norm_placement(fields: dict[str, Any], severity: Severity) -> None:
    d = _config_subject(**fields)
    f = _only(d, "norm.placement")
    assert f.severity is severity, f.summary
    assert f.measured == float(fields.get("num_layers", 2))
    assert [g.check for g in d.flagged] == (["norm.placement"] if f.flagged else [])


# ----------------------------------------------------------------------- scaling.chinchilla


def test_chinchilla(hf_llama_random: str, hf_gpt2_random: str) -> None:
    transformers = pytest.importorskip("transformers")
    for path, cls in ((hf_llama_random, transformers.LlamaForCausalLM),
                      (hf_gpt2_random, transformers.GPT2LMHeadModel)):
        n = cls.from_pretrained(path).num_parameters()  # total, a tied head once
        assert "scaling.chinchilla" in examine(path, static_only=True,
                                               checks=["scaling.*"]).skipped
        for ratio, severity in ((2.0, Severity.WARNING), (10.0, Severity.INFO),
                                (20.0, Severity.OK), (2000.0, Severity.OK)):
            d = examine(path, static_only=True, checks=["scaling.*"], train_tokens=ratio * n)
            f = _only(d, "scaling.chinchilla")
            assert f.severity is severity, (path, ratio)
            assert f.measured == pytest.approx(ratio)
            assert f.details["params_total"] == n
            assert f.details["training_flops"] == pytest.approx(6 * n * ratio * n)
            assert f.details["inference_flops_per_token"] == pytest.approx(2 * n)
            assert f.details["optimal_params_for_tokens"] == pytest.approx(ratio * n / 20)
        assert f.details["params_non_embedding"] < n
