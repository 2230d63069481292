"""``tmath train``: train a policy of the project and save it as a policy folder.

    tmath train vla --size tiny --out my_vla/
    tmath train vla --size default --seed 1 --tokenizer bpe --out my_vla/ --json

``vla``: the vision-language-action policy (:mod:`transformer_math.robotics.policies.vla`) on
expert demonstrations of ``TransformerMath/VLAPush-v0`` (the train split: held-out colour-shape
pairs never named), sizes of :data:`transformer_math.robotics.vla_training.SIZES` (``tiny``:
seconds, a smoke run; ``default``: the 2-core setting; ``large``: what a GPU would run). The
folder is LeRobot's layout (``config.json`` + ``model.safetensors``), read back by
``tmath rollout vla-push --policy DIR``. Exit codes: 0 success, 2 bad usage (one-line error).
"""

from __future__ import annotations

import time

import typer

from transformer_math.commands.args import MAX_SEED, integer, json_text, output_folder

WHAT = ("vla",)
SIZE_NAMES = ("tiny", "default", "large")
TOKENIZERS = ("bytes", "bpe")
PATCH_EMBEDDINGS = ("conv", "linear")
MAX_TRAIN_STEPS = 1_000_000


def train(
    what: str = typer.Argument(..., help=f"what to train: one of {', '.join(WHAT)}"),
    size: str = typer.Option("tiny", help=f"one of {', '.join(SIZE_NAMES)}"),
    out: str = typer.Option(..., help="policy folder to write (created if missing)"),
    seed: int = typer.Option(0, help="data, weight and batch seed"),
    steps: int | None = typer.Option(None, help="training steps (default: the size's)"),
    tokenizer: str = typer.Option("bytes", help="instruction tokens: 'bytes' or 'bpe' (a BPE "
                                  "trained on the demonstrations' instructions; needs the "
                                  "tokenizers package)"),
    patch_embedding: str = typer.Option("conv", help="image patch tokens: 'conv' (a conv "
                                        "stem) or 'linear' (one Linear per patch, ViT's)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Train a policy (``vla``) on its task's demonstrations and save it as a policy folder."""
    if what not in WHAT:
        raise typer.BadParameter(f"expected one of {', '.join(WHAT)}, got {what!r}",
                                 param_hint="WHAT")
    if size not in SIZE_NAMES:
        raise typer.BadParameter(f"expected one of {', '.join(SIZE_NAMES)}, got {size!r}",
                                 param_hint="--size")
    if tokenizer not in TOKENIZERS:
        raise typer.BadParameter(f"expected one of {', '.join(TOKENIZERS)}, got {tokenizer!r}",
                                 param_hint="--tokenizer")
    if patch_embedding not in PATCH_EMBEDDINGS:
        raise typer.BadParameter(f"expected one of {', '.join(PATCH_EMBEDDINGS)}, got "
                                 f"{patch_embedding!r}", param_hint="--patch-embedding")
    integer("--seed", seed, low=0, high=MAX_SEED)
    if steps is not None:
        integer("--steps", steps, low=1, high=MAX_TRAIN_STEPS)
    folder = output_folder("--out", out)
    assert folder is not None

    from transformer_math.commands.args import internal_work
    from transformer_math.robotics.vla_training import train_vla

    start = time.perf_counter()
    with internal_work():
        policy, losses = train_vla(size, seed, steps=steps, tokenizer=tokenizer,
                                   patch_embedding=patch_embedding)
        policy.save_pretrained(folder)
    seconds = time.perf_counter() - start
    summary = {"what": what, "size": size, "seed": seed, "tokenizer": tokenizer,
               "patch_embedding": patch_embedding,
               "steps": len(losses),
               "first_loss": round(losses[0], 4), "final_loss": round(losses[-1], 4),
               "seconds": round(seconds, 1), "out": str(folder)}
    if as_json:
        typer.echo(json_text(summary))
    else:
        typer.echo(f"trained {what} ({size}, seed {seed}): {len(losses)} steps, loss "
                   f"{losses[0]:.3f} -> {losses[-1]:.3f}, {seconds:.1f} s; saved {folder}")


def register(app: typer.Typer) -> None:
    """Add ``train`` to the ``tmath`` application."""
    app.command("train")(train)
