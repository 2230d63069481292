"""Instruction tokens of the VLA policy: a byte-level tokenizer that needs nothing installed.

UTF-8 bytes are the vocabulary (ByT5, Xue et al. 2022: no out-of-vocabulary strings, no trained
merges): a text becomes ``[BOS, b_1 + 3, ..., b_n + 3, EOS]`` padded with ``PAD`` (id 0) or cut to
a fixed length L (the prefix then has a fixed shape; a cut text keeps its first L - 1 tokens and
EOS). Ids: PAD 0, BOS 1, EOS 2, byte b -> b + 3, so the vocabulary has 259 entries.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

PAD, BOS, EOS = 0, 1, 2
BYTE_OFFSET = 3
BYTE_VOCAB_SIZE = 256 + BYTE_OFFSET
MAX_TEXT_BYTES = 4096
"""Longest instruction accepted (in UTF-8 bytes), before the cut to the policy's length."""


def task_list(task: object, batch: int) -> list[str]:
    """``batch["task"]`` as a list of ``batch`` strings (a single string is repeated);
    ``ValueError`` naming ``task`` otherwise."""
    if isinstance(task, str):
        return [task] * batch
    if (not isinstance(task, Sequence) or len(task) != batch
            or not all(isinstance(t, str) for t in task)):
        raise ValueError(f"task must be a string or a list of {batch} strings (one instruction "
                         f"per batch element), got {type(task).__name__} "
                         f"{repr(task)[:80]}")
    return list(task)


def encode_bytes(texts: Sequence[str], length: int, device: torch.device | None = None
                 ) -> Tensor:
    """(B, length) LongTensor of byte token ids (module docstring)."""
    if length < 2:
        raise ValueError(f"length must be >= 2 (BOS and EOS), got {length}")
    rows = []
    for text in texts:
        data = text.encode("utf-8")
        if len(data) > MAX_TEXT_BYTES:
            raise ValueError(f"task must be at most {MAX_TEXT_BYTES} UTF-8 bytes, got "
                             f"{len(data)}")
        ids = [*[BOS, *(b + BYTE_OFFSET for b in data)][: length - 1], EOS]
        rows.append(ids + [PAD] * (length - len(ids)))
    return torch.tensor(rows, dtype=torch.long, device=device).reshape(len(rows), length)


def decode_bytes(ids: Tensor) -> list[str]:
    """Inverse of :func:`encode_bytes` on each row (special tokens dropped)."""
    return [bytes(int(i) - BYTE_OFFSET for i in row if int(i) >= BYTE_OFFSET).decode(
        "utf-8", errors="replace") for row in ids]
