"""PARITY data: random bit strings, their parity, running parities and scratchpad sequences.

PARITY(b_1..b_n) = (sum_i b_i) mod 2 (000 §8.3.5 "PARITY"; Hahn, TACL 2020). Its sensitivity is
maximal: flipping any single bit flips the output, so every bit has influence 1.

A *scratchpad* (chain of thought, 000 §8.3.5 "结果三") writes the running parities
p_i = b_1 xor ... xor b_i as extra tokens, so each new token depends only on the previous
running parity and the current bit: p_i = p_{i-1} xor b_i, a local computation of constant depth.

Token layout used by the PARITY experiment (one shared vocabulary, ``PARITY_VOCAB``):
    direct ("none"):          BOS b_1 ... b_n SEP a          (a = answer token, generated)
    running parity:           BOS b_1 p_1 b_2 p_2 ... b_n p_n (p_i generated; answer = p_n)
    copy (a useless pad):     BOS b_1 c_1 ... b_n c_n SEP a  (c_i = b_i generated; answer = a)
Bits use the tokens BIT0/BIT1, generated parity/answer/copy tokens use PAR0/PAR1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

RUNNING_PARITY_EXCLUSIVE = declare_bug(
    "data.parity-running-exclusive",
    "running parities computed as an exclusive prefix sum, p_i = b_1 xor ... xor b_{i-1} (off "
    "by one), so PARITY (the last running parity) ignores the last bit",
    module=__name__,
    seen_in="exclusive vs inclusive scan is a classic off-by-one (cumsum minus the element)")

BOS, SEP, BIT0, BIT1, PAR0, PAR1, PAD = range(7)
PARITY_VOCAB = ("BOS", "SEP", "BIT0", "BIT1", "PAR0", "PAR1", "PAD")
SCRATCHPADS = ("none", "running_parity", "copy")


def random_bits(batch: int, length: int, generator: torch.Generator) -> Tensor:
    """Uniform random bits, shape (batch, length), dtype long."""
    if batch <= 0 or length <= 0:
        raise ValueError(f"batch and length must be positive, got batch={batch}, length={length}")
    return torch.randint(0, 2, (batch, length), generator=generator)


def _check_bits(bits: Tensor) -> None:
    if not isinstance(bits, Tensor) or bits.dim() != 2:
        got = getattr(bits, "shape", bits)
        raise ValueError(f"bits must be a (batch, length) tensor, got {got}")
    if bits.numel() and not bool(((bits == 0) | (bits == 1)).all()):
        raise ValueError("bits must contain only 0 and 1")


def parity(bits: Tensor) -> Tensor:
    """PARITY of each row: (sum_i b_i) mod 2 = p_n, the last running parity, shape (batch,)."""
    _check_bits(bits)
    if bits.shape[-1] == 0:  # the empty string has even parity
        return torch.zeros(bits.shape[:-1], dtype=bits.dtype)
    return running_parity(bits)[..., -1]


def running_parity(bits: Tensor) -> Tensor:
    """Prefix parities p_i = (b_1 + ... + b_i) mod 2 (an inclusive scan), shape (batch, length)."""
    _check_bits(bits)
    prefix = torch.cumsum(bits, dim=-1)
    if planted(RUNNING_PARITY_EXCLUSIVE):  # planted bug: falsifier of computation.circuit-...
        prefix = prefix - bits  # exclusive scan: p_i misses b_i
    return prefix % 2


def flip_bit(bits: Tensor, position: int) -> Tensor:
    """A copy of ``bits`` with column ``position`` flipped (0 <-> 1)."""
    _check_bits(bits)
    if not 0 <= position < bits.shape[-1]:
        raise ValueError(f"position must be in [0, {bits.shape[-1]}), got {position}")
    out = bits.clone()
    out[:, position] = 1 - out[:, position]
    return out


@dataclass(frozen=True)
class ParitySequences:
    """Token sequences for one scratchpad layout.

    tokens: (batch, seq) long, right-padded with PAD.
    generated: (batch, seq) bool, True where the token is produced by the model (its prediction
        is read at the previous position); these positions carry the training loss.
    answer_index: (batch,) long, position of the token that holds the final PARITY answer.
    answer: (batch,) long, PARITY of the bits (0 or 1).
    """

    tokens: Tensor
    generated: Tensor
    answer_index: Tensor
    answer: Tensor


def parity_sequences(bits_list: list[Tensor], scratchpad: str) -> ParitySequences:
    """Lay out bit strings (each (length,), possibly of different lengths) as token sequences."""
    if scratchpad not in SCRATCHPADS:
        raise ValueError(f"scratchpad must be one of {SCRATCHPADS}, got {scratchpad!r}")
    if not bits_list:
        raise ValueError("bits_list must not be empty")
    rows: list[list[int]] = []
    gens: list[list[bool]] = []
    answers: list[int] = []
    for bits in bits_list:
        _check_bits(bits.view(1, -1))
        b = [int(x) for x in bits.tolist()]
        p = running_parity(bits.view(1, -1))[0].tolist()
        toks, gen = [BOS], [False]
        if scratchpad == "none":
            toks += [BIT0 + x for x in b] + [SEP, PAR0 + p[-1]]
            gen += [False] * len(b) + [False, True]
        elif scratchpad == "running_parity":
            for x, q in zip(b, p, strict=True):
                toks += [BIT0 + x, PAR0 + int(q)]
                gen += [False, True]
        else:  # copy: as many extra tokens as the scratchpad, but carrying no computation
            for x in b:
                toks += [BIT0 + x, PAR0 + x]
                gen += [False, True]
            toks += [SEP, PAR0 + p[-1]]
            gen += [False, True]
        rows.append(toks)
        gens.append(gen)
        answers.append(int(p[-1]))
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), PAD, dtype=torch.long)
    generated = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, (r, g) in enumerate(zip(rows, gens, strict=True)):
        tokens[i, : len(r)] = torch.tensor(r)
        generated[i, : len(g)] = torch.tensor(g)
    answer_index = torch.tensor([len(r) - 1 for r in rows], dtype=torch.long)
    return ParitySequences(tokens, generated, answer_index, torch.tensor(answers))
