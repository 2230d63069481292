"""The learned absolute position table's limits, as an implementation check (issue 31: the
former claim position.learned-embedding-limit checked the project's own API, not a seed
statement; the seed's 000:556, a model trained at L fails past L, is measured by the learned
arm of position.extrapolation-experiment).

Properties of ``nn.position.LearnedPositionalEmbedding``: a position past the table raises a
clear IndexError; rows for positions never seen in training get no gradient and keep their
initial values; with the planted bug ``position.learned-silent-clamp`` (positions past the
table silently reuse the last row) the check fails.
"""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.nn.position import LearnedPositionalEmbedding

BUG = "position.learned-silent-clamp"


def _limit_properties() -> dict[str, object]:
    """The same numbers the retired claim reported: a 32-row table trained 5 SGD steps on
    sequences of length 16, then asked for position 32."""
    table, train_len, dim = 32, 16, 8
    emb = LearnedPositionalEmbedding(table, dim, generator=torch.Generator().manual_seed(7))
    initial = emb.weight.detach().clone()
    g = torch.Generator().manual_seed(8)
    for _ in range(5):
        x = torch.randn(4, train_len, dim, generator=g)
        loss = (emb(x) ** 2).mean()
        (grad,) = torch.autograd.grad(loss, emb.weight)
        with torch.no_grad():
            emb.weight -= 0.1 * grad
    message = ""
    try:
        emb(torch.zeros(1, table + 1, dim))
    except IndexError as exc:
        message = str(exc)
    return {"message": message,
            "trained_moved": bool((emb.weight[:train_len] != initial[:train_len]).any()),
            "untrained_drift": float((emb.weight[train_len:] - initial[train_len:])
                                     .detach().abs().max())}


def _holds(p: dict[str, object]) -> bool:
    return ("outside the learned table" in str(p["message"]) and bool(p["trained_moved"])
            and p["untrained_drift"] == 0.0)


def test_learned_table_raises_past_its_end_and_untrained_rows_stay() -> None:
    p = _limit_properties()
    assert "outside the learned table" in str(p["message"])
    assert p["trained_moved"] is True
    assert p["untrained_drift"] == 0.0
    assert _holds(p)


def test_learned_silent_clamp_fails_the_check() -> None:
    with plant(BUG):
        p = _limit_properties()
    assert p["message"] == ""  # no error: positions past the table reuse the last row
    assert not _holds(p)
