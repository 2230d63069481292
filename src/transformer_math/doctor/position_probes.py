"""Dynamic probes of positions and of the KV cache (000 §8.3.3; manual rows 2 and 3).

Six checks, each a forward-pass experiment on synthetic inputs with a float32 tolerance set once
from a sweep of healthy and planted models (numbers in each check's docstring):

- ``cache.consistency``: decoding through the KV cache (one token at a time and in blocks of 3)
  gives the logits of one full forward pass; past the original context of a length-dependent
  RoPE (dynamic NTK, LongRoPE) the cache is probed too and the known disagreement reported.
- ``rope.relativity``: <R_m q, R_n k> = q^T R_{n-m} k (Su et al. 2021 eq. 14; 000 §8.3.3): the
  same tokens at shifted absolute positions give the same layer-0 attention.
- ``position.beyond-table``: a learned table refuses positions past its last row (manual row 2).
- ``alibi.slopes``: the slopes measured from the logits equal Press et al. 2022's geometric
  sequence (and its rule for head counts that are not powers of two).
- ``position.sinusoid-table``: the added code equals Vaswani et al. 2017 §3.5.
- ``position.permutation``: a set model is permutation equivariant (manual row 3, 000:1667).

The reference formulas (ALiBi slopes, sinusoidal code) are written here from the papers, not
imported from ``functional/``, so a bug planted in the library cannot move the prediction.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from transformer_math.doctor.checks import DYNAMIC, NotApplicable, Subject, register_check
from transformer_math.doctor.engines import AttentionRecord, ProjectEngine, logits_from_weights
from transformer_math.doctor.findings import Finding, Severity, judged

if TYPE_CHECKING:
    from transformer_math.nn.config import TransformerConfig

# ------------------------------------------------------------------------------ thresholds
CACHE_TOLERANCE = 1e-3
"""max |cached - full| / rms(full) logits (see :func:`cache_consistency`)."""
CACHE_PROBE_LEN = 32
"""Tokens of the cached-decode probe (at most; ``probe_len`` if shorter)."""
CACHE_DECODED = 6
"""Tokens decoded through the cache after the prefix (6 steps of 1, then 2 blocks of 3): each
decode step is a forward pass, so this bounds the probe's cost on a large model."""
CACHE_PAST_CONTEXT_CAP = 512
"""The longest sequence the past-the-original-context cache probe runs (L0 + extra <= cap)."""
RELATIVITY_TOLERANCE = 1e-2
"""max |S(offset) - S(0)| / std(S(0)) over layer-0 logits (see :func:`rope_relativity`)."""
RELATIVITY_MAX_POSITION = 32768
"""The largest position the relativity probe uses: float32 angles m theta carry a rounding of
about m 2^-24 rad, so the healthy error grows linearly with m (1.2e-3 at m = 32736)."""
BEYOND_TABLE_CAP = 2048
"""The longest learned table the beyond-table probe runs past (N + 4 tokens)."""
ALIBI_TOLERANCE = 1e-3
"""max_h |m_h measured - m_h paper| / m_h paper (see :func:`alibi_slopes_check`)."""
SINUSOID_TOLERANCE = 1e-3
"""max |PE engine - PE paper| (see :func:`sinusoid_table`)."""
PERMUTATION_TOLERANCE = 1e-3
"""max |f(P x) - P f(x)| / rms(f(x)) (see :func:`permutation`)."""

SOURCE_ROPE = "000 §8.3.3 理论 B; Su et al. 2021 (RoFormer) eq. 14"
SOURCE_ALIBI = "Press et al. 2022 (ALiBi) §3; their get_slopes rule for other head counts"
SOURCE_SINUSOID = "000 §8.3.3 理论 A; Vaswani et al. 2017 §3.5"
SOURCE_PERMUTATION = "000:1667 (manual row 3), §8.3.1 property 3"
SOURCE_TABLE = "000:1666 (manual row 2), §8.3.3 朴素方案三"
SOURCE_CACHE = "000 §8.3.3 (KV cache: positions past .. past + t - 1); issue 14 zoo"


def _rms(x: Tensor) -> float:
    return float(x.double().pow(2).mean().sqrt())


def _relative(diff: Tensor, scale: float) -> float:
    """max |diff| / scale, NaN when anything is not finite (NaN is always flagged)."""
    if not bool(torch.isfinite(diff).all()):
        return float("nan")
    return float(diff.double().abs().max()) / max(scale, 1e-30)


# ------------------------------------------------------------------------ cache.consistency
LENGTH_DEPENDENT = ("dynamic", "longrope")


@register_check("cache.consistency", kind=DYNAMIC, families=("cache", "attention", "position"),
                source=SOURCE_CACHE)
def cache_consistency(subject: Subject) -> list[Finding]:
    """Decoding through the KV cache reproduces one full forward pass.

    The logits of ``ids`` (T = min(probe_len, 32) random tokens) from ``engine.logits(ids)``
    must equal those of the cached decode ``engine.cached_logits(ids, prefix=T - 6, step)``
    for step 1 (token by token) and step 3 (blocks: a causal mask aligned top-left under a
    cache lets query i of a block see keys
    j <= i instead of j <= past + i, bug attention.causal-top-left; new tokens numbered from 0
    instead of ``past``, bug position.kv-positions-restart). Measured: max |cached - full| /
    rms(full). Threshold 1e-3: healthy max 1.3e-6 over 48 random-init project models (16
    configs: llama-like GQA/MHA hidden 32-128, GPT-2-like, ALiBi H = 4 and 3, sinusoidal, NoPE,
    sliding window, YaRN, reference and tiled backends, post-LN; seeds 0-2) and 1.1e-6 on
    transformers Llama / GPT-2 checkpoints, random and briefly trained (both engines); on
    100M-parameter models 3.7e-6; planted min 0.11
    (attention.causal-top-left >= 0.64 on 15 of the 16 configs: the tiled backend masks
    without the bugged mask; position.kv-positions-restart >= 0.11 on 15: NoPE has no
    position to restart).

    Length-dependent RoPE (``rope_scaling`` type dynamic or longrope): the frequencies depend on
    the sequence length, so keys cached while the sequence was within the original context L0
    were rotated with other frequencies than a full forward of a longer sequence uses. The
    probe fills the cache with L0 tokens and decodes past L0 (L = min(2 L0, L0 + 64) <= 512
    tokens), then runs the full forward: a disagreement is a WARNING (the project recomputes
    the frequencies per call for the current length and does not re-rotate cached keys: 0.039
    to 0.075 on tiny project dynamic / LongRoPE models with L0 = 32; on a tiny transformers
    Llama with dynamic NTK, L0 = 128, both engines 4.1e-3), agreement is OK. transformers'
    dynamic NTK keeps the longest length seen in module state: with the full forward run
    first, its decode reuses those frequencies and agrees (1.1e-6), which is why the probe
    decodes first, after a one-token pass that resets that state below L0.
    """
    engine = subject.need_engine()
    if not getattr(engine, "supports_cache", True):
        raise NotApplicable(f"the {engine.name} engine has no KV cache")
    if not engine.causal:
        raise NotApplicable("bidirectional model: a KV cache cannot reproduce a full forward")
    length = min(subject.probe_len, CACHE_PROBE_LEN)
    if engine.max_positions is not None:
        length = min(length, engine.max_positions)
    if _length_dependent(subject.config) is not None and subject.trained_length:
        length = min(length, subject.trained_length)  # within L0 (past it: see below)
    if length < 4:
        raise NotApplicable(f"probe length {length} too short for a cached decode")
    ids = subject.random_ids("cache.consistency", length)
    full = engine.logits(ids)
    scale = _rms(full)
    prefix = max(1, length - CACHE_DECODED)
    findings = []
    measured = {}
    for step in (1, 3):
        cached = engine.cached_logits(ids, prefix, step)
        measured[step] = _relative(cached - full, scale)
    worst_step = max(measured, key=lambda s: (math.isnan(measured[s]), measured[s]))
    worst = measured[worst_step]
    findings.append(judged(
        "cache.consistency", worst, CACHE_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"cached decode vs full forward: max relative logit difference {worst:.2e} "
                 f"(step 1: {measured[1]:.2e}, step 3: {measured[3]:.2e}; prefix {prefix} of "
                 f"{length} tokens)"),
        meaning=("generation through the KV cache computes a different function than the "
                 "model scored on a full sequence: the causal mask or the positions of the new "
                 "tokens are misaligned under the cache" if not worst <= CACHE_TOLERANCE else
                 "the cache reproduces the full forward pass up to float32 rounding"),
        fix=("align the causal mask bottom-right (query i of t new tokens after `past` cached "
             "sees keys j <= past + i) and number new tokens past .. past + t - 1"),
        source=SOURCE_CACHE, details={"by_step": measured, "prefix": prefix, "length": length}))
    findings.extend(_cache_past_context(subject))
    return findings


def _length_dependent(config: TransformerConfig | None) -> str | None:
    """The RoPE scaling type when its frequencies depend on the sequence length, else None."""
    if config is None or config.position != "rope":
        return None
    scaling = dict(config.rope_scaling or {})
    kind = scaling.get("rope_type", scaling.get("type"))
    return str(kind) if kind in LENGTH_DEPENDENT else None


def _cache_past_context(subject: Subject) -> list[Finding]:
    config = subject.config
    kind = _length_dependent(config)
    if config is None or kind is None:
        return []
    scaling = dict(config.rope_scaling or {})
    engine = subject.need_engine()
    original = int(scaling.get("original_max_position_embeddings") or config.max_seq_len)
    total = min(2 * original, original + 64)
    if total > CACHE_PAST_CONTEXT_CAP:
        return [Finding(
            "cache.consistency", Severity.INFO,
            f"{kind} RoPE: cache past the original context {original} not probed (needs "
            f"{total} tokens > cap {CACHE_PAST_CONTEXT_CAP})", subject="past original context",
            meaning="length-dependent frequencies make cached keys stale past L0 in most "
                    "engines (keys are not re-rotated)",
            fix="check decoding past L0 against a full forward on your engine",
            source="FACTS.md (dynamic NTK / LongRoPE); transformers dynamic_rope_update")]
    ids = subject.random_ids("cache.consistency.past", total, 1)
    # A one-token pass first: engines whose dynamic frequencies keep the longest length seen so
    # far (transformers' dynamic_rope_update) reset to the short-context ones below L0, so the
    # decode starts like a generation from a fresh prompt; then the full forward.
    engine.logits(ids[:, :1])
    cached = engine.cached_logits(ids, original, 1)
    full = engine.logits(ids)
    tail = slice(original, total)
    measured = _relative(cached[:, tail] - full[:, tail], _rms(full[:, tail]))
    disagree = not measured <= CACHE_TOLERANCE
    return [Finding(
        "cache.consistency", Severity.WARNING if disagree else Severity.OK,
        (f"{kind} RoPE past the original context {original}: cached decode vs full forward "
         f"of {total} tokens, max relative logit difference {measured:.2e}"),
        measured, CACHE_TOLERANCE, "above", subject="past original context",
        meaning=(f"{kind} frequencies depend on the sequence length: the {original} keys "
                 "cached while the sequence fit the original context were rotated with the "
                 "short-context frequencies, a full forward of the longer sequence rotates every "
                 "key with the long-context ones; this engine does not re-rotate the cache, so "
                 "generation past L0 differs from scoring the same text"
                 if disagree else
                 f"{kind} frequencies change past L0 and this engine re-rotates cached keys "
                 "(or recomputes them): the cache stays consistent"),
        fix=("re-rotate (or recompute) the cached keys when the frequencies change, or use a "
             "static scaling (YaRN, linear) for generation past L0"),
        source="FACTS.md (dynamic NTK / LongRoPE caches); transformers dynamic_rope_update",
        details={"rope_type": kind, "original": original, "length": total})]


# ---------------------------------------------------------------------------- rope.relativity
WEIGHT_FLOOR = 1e-12
"""Without scores, log weights are compared only where the weight exceeds this (log weights
of underflowing entries carry no digits)."""


def _layer_logits(record: AttentionRecord) -> tuple[Tensor, Tensor, bool]:
    """(logits up to a per-row constant, allowed mask, whether the mask is the model's own):
    the scores and their finite entries when the engine gives them (masked entries are -inf
    or a large negative number), else log weights where the weight > WEIGHT_FLOOR."""
    if record.scores is not None:
        logits = record.scores.double()
        return logits, torch.isfinite(logits) & (logits > -1e30), True
    weights = record.weights
    return logits_from_weights(weights).double(), weights > WEIGHT_FLOOR, False


def _centre(logits: Tensor, allowed: Tensor) -> Tensor:
    """Logits minus their mean over the allowed keys of each row (0 elsewhere)."""
    zero = torch.zeros((), dtype=logits.dtype)
    logits = torch.where(allowed, logits, zero)
    mean = logits.sum(-1, keepdim=True) / allowed.sum(-1, keepdim=True).clamp_min(1)
    return torch.where(allowed, logits - mean, zero)


def _centred_logits(record: AttentionRecord) -> tuple[Tensor, Tensor]:
    """Layer logits (scores, else log weights) centred per row over the allowed keys, and the
    allowed mask."""
    logits, allowed, _ = _layer_logits(record)
    return _centre(logits, allowed), allowed


@register_check("rope.relativity", kind=DYNAMIC, families=("rope", "position"),
                source=SOURCE_ROPE)
def rope_relativity(subject: Subject) -> list[Finding]:
    """Layer-0 attention of RoPE depends on positions only through m - n.

    RoPE rotates q and k at their absolute positions; since R_m^T R_n = R_{n-m} (rotations of
    each plane compose), <R_m q, R_n k> = q^T R_{n-m} k. At layer 0 the inputs are the token
    embeddings alone (no additive code), so feeding the same random tokens at
    ``position_ids = arange(T) + offset`` for offsets 0, 7, 100 and trained length - T must leave
    the layer-0 logits (scores, else log weights; centred per row) unchanged up to float32
    rounding of the angles m theta, which grows with m (positions capped at 32768). Measured:
    max |S(offset) - S(0)| / std(S(0)). Threshold 1e-2: healthy max 1.2e-3 (at offset 32736,
    head_dim 128) over 30 random-init project models (10 configs: head_dim 8-128, lengths
    64-32768, rope_theta 1e4 and 1e6, YaRN, dynamic within L0, partial rotary, biased q/k,
    reference backend; seeds 0-2), <= 8.3e-6 for lengths <= 512, and 2.3e-6 on transformers
    Llama checkpoints; planted rope.rotation-sign min 2.6 (logits then depend on m + n);
    rope.angles-in-bf16 is flagged too on 8 of the 10 configs (0.028-4.1; not at lengths 64).

    Not caught, by construction: rope.cos-sin-swapped rotates every plane by pi/2 - m theta
    (the pi/2 cancels in q.k, the direction of rotation flips): still a function of m - n, and
    identical to the healthy model with the second channel of every plane of W_q and W_k
    negated, so no probe of one model can see it (the ``rope.tables`` check compares the
    tables, a cross-engine comparison the outputs). rope.layout-no-permutation lives in the Meta
    loader: the loaded model pairs other channels but is still a rotation (relative).
    Absolute codes (learned, sinusoidal) give an INFO finding: not relative by design.
    """
    config = subject.need_config()
    engine = subject.need_engine()
    if config.position in ("learned", "sinusoidal"):
        return [Finding(
            "rope.relativity", Severity.INFO,
            f"absolute position code ({config.position}): attention is not a function of "
            "relative position by design (nothing to test)", subject="",
            meaning="the model sees absolute indices; shifting every position changes its "
                    "inputs",
            fix="none needed; use RoPE or ALiBi for a relative code",
            source=SOURCE_ROPE)]
    if config.position != "rope":
        raise NotApplicable(f"position {config.position!r} is not RoPE")
    trained = subject.trained_length or config.max_seq_len
    length = min(subject.probe_len, 32, max(trained // 2, 2))
    last = min(trained, RELATIVITY_MAX_POSITION) - length
    offsets = sorted({o for o in (0, 7, 100, last) if 0 <= o <= last})
    if len(offsets) < 2:
        raise NotApplicable(f"trained length {trained} leaves no room to shift {length} tokens")
    ids = subject.random_ids("rope.relativity", length, 1)
    batch = 1

    def layer0(offset: int) -> tuple[Tensor, Tensor, bool]:
        pos = (torch.arange(length) + offset).expand(batch, length)
        return _layer_logits(engine.attention(ids, position_ids=pos)[0])

    base_raw, allowed, structural = layer0(0)
    base = _centre(base_raw, allowed)
    scale = float(base[allowed].std()) if int(allowed.sum()) > 1 else 1.0
    by_offset = {}
    for offset in offsets[1:]:
        shifted_raw, allowed_shifted, _ = layer0(offset)
        if structural and not bool(torch.equal(allowed_shifted, allowed)):
            by_offset[offset] = float("inf")  # the mask itself moved with the positions
            continue
        both = allowed & allowed_shifted  # log weights: compare where both carry digits
        diff = _centre(shifted_raw, both) - _centre(base_raw, both)
        by_offset[offset] = _relative(diff[both], scale)
    worst_offset = max(by_offset, key=lambda o: (math.isnan(by_offset[o]), by_offset[o]))
    worst = by_offset[worst_offset]
    flagged = not worst <= RELATIVITY_TOLERANCE
    return [judged(
        "rope.relativity", worst, RELATIVITY_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"layer-0 logits at positions shifted by {worst_offset}: max relative "
                 f"change {worst:.2e} (offsets {offsets[1:]})"),
        subject="layer 0",
        meaning=("attention depends on absolute positions: the rotation is not a rotation "
                 "(a sign slip in the fused RoPE kernel makes logits depend on m + n) or q and k "
                 "are rotated at different positions" if flagged else
                 "layer-0 attention depends on m - n only, as <R_m q, R_n k> = q^T R_{n-m} k "
                 "requires"),
        fix=("check the rotation formula: first members a cos - b sin, second members "
             "b cos + a sin, the same cos/sin for q and k at their own positions"),
        source=SOURCE_ROPE,
        details={"by_offset": by_offset, "length": length, "trained_length": trained})]


# ----------------------------------------------------------------------- position.beyond-table
@register_check("position.beyond-table", kind=DYNAMIC, manual_rows=(2,),
                families=("position",), source=SOURCE_TABLE)
def beyond_table(subject: Subject) -> list[Finding]:
    """A learned position table refuses a sequence longer than the table.

    A learned absolute table E (N, d) has no row for position N or later (000 §8.3.3: it
    cannot extrapolate; manual row 2, failure past the training length). Run N + 4 tokens: a
    refusal (any exception: the project's ValueError, transformers GPT-2's IndexError) is OK; an
    engine that returns outputs is an ERROR: positions >= N got some code nobody trained
    (position.learned-silent-clamp reuses row N - 1; the measured number is then the distance
    of the codes h_0[N + j] - h_0[N - 1] for the same token, 0 for a clamp). No tolerance: the
    verdict is whether the engine runs. For the project engine the model's position module is
    also asked directly for rows N .. N + 3 (the Transformer guards the length before the module
    is reached): a module that returns rows silently is a WARNING (a caller that bypasses the
    model-level guard gets clamped rows).
    """
    config = subject.config
    engine = subject.need_engine()
    table = engine.max_positions
    if table is None and config is not None and config.position == "learned":
        table = config.max_seq_len
    if table is None:
        raise NotApplicable("no learned position table (positions are unbounded)")
    if engine.vocab_size is None:
        raise NotApplicable("the model takes vectors; the probe uses token ids")
    if table + 4 > BEYOND_TABLE_CAP:
        return [Finding(
            "position.beyond-table", Severity.INFO,
            f"learned table of {table} positions: not probed past it (cap "
            f"{BEYOND_TABLE_CAP} tokens)", meaning="the probe would be slow",
            fix=f"run the model on {table + 1} tokens by hand: it must refuse",
            source=SOURCE_TABLE)]
    findings = []
    ids = subject.random_ids("position.beyond-table", table + 4, 1)
    ids[:, table - 1:] = ids[:, table - 1:table]  # one token at N-1 .. N+3: equal codes if clamped
    try:
        out = engine.logits(ids)
    except Exception as exc:  # a refusal: what a table without rows must do
        findings.append(Finding(
            "position.beyond-table", Severity.OK,
            f"{table + 4} tokens on a learned table of {table}: refused "
            f"({type(exc).__name__}: {str(exc)[:160]})", 0.0, 0.0, "above",
            meaning="the engine does not invent positions past its table",
            fix="none needed", source=SOURCE_TABLE,
            details={"table": table, "refused": type(exc).__name__}))
    else:
        distance = float("nan")
        try:
            _, states = engine.run_embedded(engine.embed(ids))
            h0 = states[0].detach().float()
            rows = h0[:, table:] - h0[:, table - 1:table]
            distance = float(rows.abs().max()) / max(_rms(h0), 1e-30)
        except Exception:  # the evidence is optional, the verdict is not
            pass
        how = ("rows past the table equal row N - 1 (a silent clamp)" if distance == 0.0
               else "positions past the table got some code")
        findings.append(Finding(
            "position.beyond-table", Severity.ERROR,
            f"{table + 4} tokens on a learned table of {table}: the engine ran and returned "
            f"outputs ({how}; code distance {distance:.2e})", distance, 0.0, "above",
            meaning="positions past the table are silently given a code the model never "
                    "trained (typically row N - 1 reused): the outputs there are garbage that "
                    "looks valid (manual row 2)",
            fix="raise on positions >= the table size (or extend the table and fine-tune, or "
                "switch to RoPE/ALiBi)",
            source=SOURCE_TABLE,
            details={"table": table, "finite": bool(torch.isfinite(out).all())}))
    if isinstance(engine, ProjectEngine):
        module = getattr(engine.model, "embed_positions", None)
        lookup = getattr(module, "embedding", None)
        if lookup is not None and getattr(module, "num_positions", None) == table:
            try:
                with torch.no_grad():
                    lookup(torch.arange(table, table + 4))
            except Exception:  # the module refuses too: nothing to report
                pass
            else:
                findings.append(Finding(
                    "position.beyond-table", Severity.WARNING,
                    f"the model refuses, but its position module returns rows for positions "
                    f"{table}..{table + 3} of a {table}-row table", 1.0, 0.0, "above",
                    subject="embed_positions",
                    meaning="only the model-level length check protects the table; a caller "
                            "that bypasses it (a port, a custom decoding loop) gets silently "
                            "clamped rows",
                    fix="make the table lookup raise on positions >= its size",
                    source=SOURCE_TABLE))
    return findings


# ------------------------------------------------------------------------------ alibi.slopes
def paper_alibi_slopes(heads: int) -> list[float]:
    """Press et al. 2022: for H a power of two the geometric sequence starting at
    2^(-8/H) with ratio 2^(-8/H), i.e. m_h = 2^(-8h/H), h = 1..H; otherwise the slopes of the
    closest smaller power of two n, followed by every other slope (the 1st, 3rd, ...) of the
    sequence for 2n, the first H - n of them."""

    def geometric(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** h for h in range(1, n + 1)]

    n = 1
    while 2 * n <= heads:
        n *= 2
    if n == heads:
        return geometric(heads)
    return geometric(n) + geometric(2 * n)[::2][: heads - n]


@register_check("alibi.slopes", kind=DYNAMIC, families=("alibi", "position"),
                source=SOURCE_ALIBI)
def alibi_slopes_check(subject: Subject) -> list[Finding]:
    """The ALiBi slope of every head, measured from the logits, equals Press et al.'s.

    On T identical tokens every layer-0 query and key is the same vector (no additive position
    code), so q.k is one constant c and the logits are c - m_h |i - j|. m_h is the negated
    least-squares slope of the logits (scores, else log weights) against the distance
    |i - j| over the allowed entries (both centred per row), compared with
    :func:`paper_alibi_slopes` (written here from the paper). Measured:
    max_h |m_measured - m_paper| / m_paper. Threshold 1e-3: healthy max 2.6e-7 over 28
    random-init models (H = 1, 2, 3, 4, 6, 8, 12; MHA at seeds 0-2, MQA; sdpa and tiled);
    planted alibi.odd-head-slopes 15.0 for H = 3, 6, 12 (H = 3: the first 3 slopes of H = 4,
    [1/4, 1/16, 1/64], instead of [1/16, 1/256, 1/4]); for H a power of two the bug is the
    identity (same numbers as healthy).
    """
    config = subject.need_config()
    engine = subject.need_engine()
    if config.position != "alibi":
        raise NotApplicable(f"position {config.position!r} is not ALiBi")
    if engine.vocab_size is None:
        raise NotApplicable("the model takes vectors; the probe uses one repeated token id")
    length = max(8, min(subject.probe_len, 16))
    token = int(torch.randint(0, engine.vocab_size, (1,),
                              generator=subject.generator("alibi.slopes")))
    ids = torch.full((1, length), token, dtype=torch.long)
    logits, allowed = _centred_logits(engine.attention(ids)[0])
    distance = (torch.arange(length)[:, None] - torch.arange(length)[None, :]).abs().double()
    expected = paper_alibi_slopes(engine.num_heads)
    measured = []
    for h in range(engine.num_heads):
        mask = allowed[0, h]
        # the logits are centred per row over the allowed keys: centre the distances alike
        d = torch.where(mask, distance, torch.zeros((), dtype=distance.dtype))
        d = torch.where(mask, d - d.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True), 0.0)
        measured.append(float(-(d * logits[0, h]).sum() / d.pow(2).sum()))
    errors = [abs(m - e) / e for m, e in zip(measured, expected, strict=True)]
    worst = max(range(len(errors)), key=lambda h: (math.isnan(errors[h]), errors[h]))
    flagged = not errors[worst] <= ALIBI_TOLERANCE
    return [judged(
        "alibi.slopes", errors[worst], ALIBI_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"ALiBi slopes of {engine.num_heads} heads: max relative error "
                 f"{errors[worst]:.2e} vs Press et al. (head {worst}: measured "
                 f"{measured[worst]:.4g}, paper {expected[worst]:.4g})"),
        subject=f"layer 0 head {worst}",
        meaning=("the heads do not get the paper's slopes: for a head count that is not a "
                 "power of two the engine probably took the first H slopes of the next power of "
                 "two (several heads then share the steep end, no head keeps the long range)"
                 if flagged else "every head has the paper's slope"),
        fix=("slopes for H not a power of two: the closest smaller power of two n, then every "
             "other slope of 2n (Press et al.'s get_slopes)"),
        source=SOURCE_ALIBI,
        details={"measured": measured, "paper": expected})]


# ------------------------------------------------------------------- position.sinusoid-table
def paper_sinusoid(positions: Tensor, dim: int, base: float = 10000.0,
                   layout: str = "interleaved") -> Tensor:
    """Vaswani et al. 2017 §3.5 in float64: PE(pos, 2i) = sin(pos / base^(2i/d)),
    PE(pos, 2i + 1) = cos(pos / base^(2i/d)) (``"interleaved"``, the paper's indexing and the
    project's); ``"halves"``: all sines then all cosines (tensor2tensor's concatenation)."""
    i = torch.arange(dim // 2, dtype=torch.float64)
    angle = positions.double()[:, None] / base ** (2.0 * i / dim)[None, :]
    if layout == "interleaved":
        return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


@register_check("position.sinusoid-table", kind=DYNAMIC, families=("sinusoidal", "position"),
                source=SOURCE_SINUSOID)
def sinusoid_table(subject: Subject) -> list[Finding]:
    """The code the engine adds equals Vaswani et al.'s sinusoids.

    The code is read off the model: h_0 - embed(x) (the residual stream entering the first
    block minus the token embedding) at positions 0 .. T - 1, compared with
    :func:`paper_sinusoid` in the project's layout (interleaved: sin at even channels, cos at
    odd, as the paper indexes it; a table matching the concatenated "halves" layout instead is
    reported OK with the layout named). Measured: max |PE - PE_paper|. Threshold 1e-3: healthy
    max 3.4e-6 over 9 random-init models (d = 16-128 at seeds 0, 1, T = 64; a vector-input
    model); the other layout differs by 1.997; planted sinusoid.frequency-exponent min 1.997
    (theta_i = 10000^(-i/d)).
    """
    config = subject.need_config()
    engine = subject.need_engine()
    if config.position != "sinusoidal":
        raise NotApplicable(f"position {config.position!r} is not sinusoidal")
    length = subject.probe_len
    with torch.no_grad():
        if engine.vocab_size is not None:
            ids = subject.random_ids("position.sinusoid-table", length, 1)
            embedded = engine.embed(ids)
            _, states = engine.run_embedded(embedded)
            code = states[0] - embedded
        elif isinstance(engine, ProjectEngine) and engine.model.embed_inputs is not None:
            x = torch.randn(1, length, engine.input_width,
                            generator=subject.generator("position.sinusoid-table"))
            _, states = engine.run_embedded(x)
            code = states[0] - engine.model.embed_inputs(x)
        else:
            raise NotApplicable("cannot separate the code from the inputs of this engine")
    code = code[0].detach().double().cpu()
    positions = torch.arange(length)
    errors = {layout: float((code - paper_sinusoid(positions, code.shape[-1], layout=layout)
                             ).abs().max()) for layout in ("interleaved", "halves")}
    layout = "interleaved"
    if not errors["interleaved"] <= SINUSOID_TOLERANCE and errors["halves"] <= SINUSOID_TOLERANCE:
        layout = "halves"
    worst = errors[layout]
    flagged = not worst <= SINUSOID_TOLERANCE
    return [judged(
        "position.sinusoid-table", worst, SINUSOID_TOLERANCE, "above", bad=Severity.ERROR,
        summary=(f"sinusoidal code vs Vaswani et al. ({layout} layout) at positions "
                 f"0..{length - 1}: max difference {worst:.2e}"),
        meaning=("the code is not the paper's: a wrong frequency exponent (theta_i = "
                 "10000^(-i/d) for 10000^(-2i/d)) changes every pair's wavelength, and the "
                 "shift-by-rotation property PE(pos + D) = M(D) PE(pos) no longer has the "
                 "paper's wavelengths" if flagged else
                 f"the code is the paper's ({layout} layout: "
                 + ("sin at channel 2i, cos at 2i + 1)" if layout == "interleaved"
                    else "sines then cosines, as tensor2tensor concatenates them)")),
        fix="theta_i = 10000^(-2i/d) for pair i = 0 .. d/2 - 1 (the exponent uses the channel "
            "index 2i)",
        source=SOURCE_SINUSOID, details={"by_layout": errors, "length": length})]


# ------------------------------------------------------------------------ position.permutation
@register_check("position.permutation", kind=DYNAMIC, manual_rows=(3,),
                families=("position", "attention"), source=SOURCE_PERMUTATION)
def permutation(subject: Subject) -> list[Finding]:
    """A set model is permutation equivariant: f(P x) = P f(x).

    Attention without positions and without a causal mask is permutation equivariant (000
    §8.3.1 property 3: softmax(P Q K^T P^T) P V = P softmax(Q K^T) V, and the token-wise
    sublayers commute with P). A set model (``options.set_model``, or implicitly a
    bidirectional model without position code) fed the inputs in a random order must return
    its outputs in that order. Measured: max |f(P x) - P f(x)| / rms(f(x)). Threshold 1e-3:
    healthy max 9.5e-7 over 12 random-init set models (vector inputs hidden 32 and 64, token
    inputs, declared and implicit; seeds 0-2); planted min 0.069 (a learned position code
    0.069-0.14, sinusoidal 0.93-1.8, a causal mask 1.0-1.7, attention.implicit-causal 1.0-1.8;
    attention.softmax-wrong-axis stays equivariant). Manual row 3: a position encoding on a set
    breaks equivariance; the finding names the cause when the config has a position code or a
    causal mask; one that passes although the config has them (a zero-initialised table) is a
    WARNING.
    """
    config = subject.need_config()
    engine = subject.need_engine()
    implicit = (not config.causal) and config.position == "none"
    if not (subject.options.set_model or implicit):
        raise NotApplicable("not declared a set model (set_model=False, and the model has a "
                            "causal mask or a position code)")
    causes = []
    if config.position != "none":
        causes.append(f"the position code (position={config.position!r}) tags every element "
                      "with its index")
    if engine.causal:
        causes.append("the causal mask lets element i see only the elements before it")
    if config.sliding_window is not None:
        causes.append(f"the sliding window ({config.sliding_window}) depends on the order")
    length = min(subject.probe_len, 16)
    g = subject.generator("position.permutation")
    perm = torch.randperm(length, generator=g)
    with torch.no_grad():
        if engine.vocab_size is not None:
            ids = subject.random_ids("position.permutation", length)
            out = engine.logits(ids)
            out_p = engine.logits(ids[:, perm])
        else:
            x = torch.randn(subject.options.batch, length, engine.input_width, generator=g)
            out = engine.run_embedded(x)[0].detach().float().cpu()
            out_p = engine.run_embedded(x[:, perm])[0].detach().float().cpu()
    measured = _relative(out_p - out[:, perm], _rms(out))
    broken = not measured <= PERMUTATION_TOLERANCE
    declared = "declared a set model" if subject.options.set_model else (
        "a bidirectional model without position code (a set model by construction)")
    if broken:
        severity = Severity.ERROR
        why = ("; ".join(causes) if causes else
               "no position code or causal mask in the config: the implementation itself "
               "breaks the symmetry (an implicit causal mask in the attention backend, an "
               "order-dependent reduction)")
        meaning = f"{declared}, but the outputs depend on the order of the inputs: {why}"
    elif causes:
        severity = Severity.WARNING
        meaning = (f"{declared}; equivariant on this probe, but the config has "
                   f"{'; '.join(causes)}: it will break once those weights are trained")
    else:
        severity = Severity.OK
        meaning = f"{declared}; the outputs follow the permutation of the inputs"
    return [Finding(
        "position.permutation", severity,
        f"permuted inputs: max relative difference f(Px) vs P f(x) {measured:.2e} "
        f"({length} elements)", measured, PERMUTATION_TOLERANCE, "above",
        meaning=meaning,
        fix=("for a set: position='none' and causal=False (no code, no mask); keep the "
             "order-carrying information as input features if it matters" if causes else
             "find the order-dependent operation (mask, backend) with the probe above"),
        source=SOURCE_PERMUTATION,
        details={"causes": causes, "set_model": subject.options.set_model})]
