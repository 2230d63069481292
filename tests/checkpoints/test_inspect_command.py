"""``tmath inspect``: architecture, parameters by part, RoPE wavelengths, Chinchilla view."""

from __future__ import annotations

import json
import math

import typer
from typer.testing import CliRunner

from transformer_math.checkpoints.io import from_pretrained
from transformer_math.commands.inspect import register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _main() -> None:  # keeps "inspect" a subcommand
        """test app"""

    return app


def test_inspect_llama_json(tmp_path, ref):
    hf_model = ref.llama(tmp_path, rope={"rope_type": "linear", "factor": 2.0,
                                         "rope_theta": 10000.0})
    result = CliRunner().invoke(_app(), ["inspect", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    params = report["parameters"]
    # counted from the safetensors headers; must equal both implementations' own counts
    assert params["total"] == sum(p.numel() for p in hf_model.parameters())
    assert params == from_pretrained(tmp_path).parameter_breakdown()
    rope = report["rope"]
    # head_dim 8: theta_i = 10000^(-2i/8) / 2 -> wavelengths 2 pi * 2 * 10^(i) (i = 0..3)
    assert [round(w, 6) for w in rope["wavelengths"]] == [
        round(4 * math.pi * 10.0**i, 6) for i in range(4)]
    assert rope["pairs_longer_than_context"] == 3  # 125.7, 1256.6 and 12566 > 32
    ch = report["chinchilla"]
    assert 19 < ch["tokens_per_param"] < 21 and ch["optimal_flops"] == 6 * params["total"] * ch[
        "optimal_tokens"]


def test_inspect_gpt2_text(tmp_path, ref):
    ref.gpt2(tmp_path)
    result = CliRunner().invoke(_app(), ["inspect", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "gpt2 (GPT2LMHeadModel)" in result.output and "positions" in result.output
    assert "rope wavelengths" not in result.output


def test_inspect_bad_path_exit_2(tmp_path):
    result = CliRunner().invoke(_app(), ["inspect", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_terminal_escapes_in_a_config_do_not_reach_the_terminal(tmp_path, ref):
    """``architectures`` holding escape sequences (set the title, clear the screen) are printed
    escaped (issue 40): nothing read from a checkpoint acts on the user's terminal."""
    ref.llama(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["architectures"] = ["\x1b]0;pwned\x07\x1b[2JLlamaForCausalLM\u202e"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    result = CliRunner().invoke(_app(), ["inspect", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\u202e" not in result.output
    assert "\\x1b]0;pwned\\x07\\x1b[2JLlamaForCausalLM\\u202e" in result.output


def test_error_lines_escape_control_characters():
    from transformer_math.commands.args import error_line

    line = error_line("tmath x", "bad \x1b[31mred\x1b[0m name")
    assert "\x1b" not in line and "\\x1b[31mred" in line
