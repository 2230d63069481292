"""Instruction tokens of the VLA policy: a byte-level tokenizer that needs nothing installed, and
a small BPE trained on the instruction corpus where the ``tokenizers`` package is installed.

UTF-8 bytes are the vocabulary (ByT5, Xue et al. 2022: no out-of-vocabulary strings, no trained
merges): a text becomes ``[BOS, b_1 + 3, ..., b_n + 3, EOS]`` padded with ``PAD`` (id 0) or cut to
a fixed length L (the prefix then has a fixed shape; a cut text keeps its first L - 1 tokens and
EOS). Ids: PAD 0, BOS 1, EOS 2, byte b -> b + 3, so the vocabulary has 259 entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


# ----------------------------------------------------------------------------- BPE (optional)
BPE_SPECIALS = ("[PAD]", "[BOS]", "[EOS]", "[UNK]")
"""Special tokens of the BPE tokenizer, ids 0..3 (PAD, BOS, EOS as for bytes, then UNK)."""


def _tokenizers():
    try:
        import tokenizers
    except ImportError:  # pragma: no cover - the package comes with transformers
        raise ValueError("tokenizer='bpe' needs the 'tokenizers' package (pip install "
                         "tokenizers); use tokenizer='bytes'") from None
    return tokenizers


def train_bpe(corpus: Sequence[str], vocab_size: int) -> Any:
    """A byte-pair-encoding tokenizer (Sennrich et al. 2016) of at most ``vocab_size`` tokens
    trained on ``corpus`` by the ``tokenizers`` library: whitespace pre-splitting (merges stay
    inside words), :data:`BPE_SPECIALS` first. Deterministic for a given corpus."""
    tk = _tokenizers()
    if not corpus:
        raise ValueError("corpus must hold at least one instruction")
    tokenizer = tk.Tokenizer(tk.models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tk.pre_tokenizers.Whitespace()
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(BPE_SPECIALS),
                                     show_progress=False)
    tokenizer.train_from_iterator(list(corpus), trainer)
    return tokenizer


def bpe_from_json(text: str) -> Any:
    """A tokenizer saved with ``tokenizer.to_str()`` (its ``tokenizer.json``)."""
    tk = _tokenizers()
    try:
        return tk.Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises its own Exception type
        raise ValueError(f"not a tokenizers JSON document: {exc}") from None


def encode_bpe(tokenizer: Any, texts: Sequence[str], length: int,
               device: torch.device | None = None) -> Tensor:
    """(B, length) ids ``[BOS, ..., EOS, PAD...]`` (cut as :func:`encode_bytes`)."""
    if length < 2:
        raise ValueError(f"length must be >= 2 (BOS and EOS), got {length}")
    rows = []
    for text in texts:
        if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
            raise ValueError(f"task must be at most {MAX_TEXT_BYTES} UTF-8 bytes")
        ids = [*[BOS, *tokenizer.encode(text).ids][: length - 1], EOS]
        rows.append(ids + [PAD] * (length - len(ids)))
    return torch.tensor(rows, dtype=torch.long, device=device).reshape(len(rows), length)
