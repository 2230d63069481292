"""Doctor checks that read the config and the safetensors headers only (nothing is allocated).

Every check here except ``attention.kv-projection-shapes`` is ``kind="static"``: it judges
``subject.config`` (the project's :class:`~transformer_math.nn.config.TransformerConfig`),
``subject.raw_config`` (``config.json`` as stored) and ``subject.shapes`` (the safetensors
headers). Tensor shapes are read through the family adapter's own name table
(``checkpoints/adapters``: ``Adapter.rules`` and their ``load`` transforms, applied to
``meta``-device tensors of the stored shapes, so GPT-2's packed ``c_attn`` and Phi-3's fused
``qkv_proj`` are split exactly as the loader splits them), never by a second name table.

=============================  ==============================================================
check                          what it judges (source)
=============================  ==============================================================
position.learned-table         a learned absolute position table shorter than the target
                               context (manual row 2, 000:1666; 000:674, 000:556)
attention.sliding-window       a sliding window W and its receptive field L (W - 1) + 1 against
                               the target context (Jiang et al. 2023 §2; manual row 4, 000:1668)
attention.heads                head grouping (H_kv | H), H d_k vs d, and the q/k/v rows of the
                               stored tensors against the config (a config that lies about GQA)
attention.kv-projection-shapes (dynamic: the built project model) k/v projections sized
                               H_kv d_k as configured (planted bug attention.gqa-kv-heads-ignored)
checkpoint.tensor-shapes       the embedding rows against vocab_size, then every stored tensor
                               against the project's model for the config (``io.validate``)
norm.placement                 Post-LN in a deep model, Pre-LN without a final norm, no norm at
                               all (manual row 7, 000:1671; 000:1114; Xiong et al. 2020)
scaling.chinchilla             tokens per parameter D / N against Chinchilla's ~20 (manual row 5,
                               000:1669; Hoffmann et al. 2022)
=============================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from transformer_math import typed_json
from transformer_math.doctor.checks import DYNAMIC, STATIC, NotApplicable, Subject, register_check
from transformer_math.doctor.findings import Finding, Severity, beyond, judged

# ----------------------------------------------------------------------------- thresholds

DEEP_LAYERS = 12
"""Post-LN and norm-free stacks are flagged when ``num_layers > DEEP_LAYERS``.

Sweep (docs/doctor_sweeps.md (H1); project Transformer, d = 64, 4 heads, GELU, LayerNorm,
random init, seeds 0 and 1, LM loss on 4 x 32 uniform tokens): the gradient norm of the last
layer's W_2 is 0.27 / 0.28 / 0.26 / 0.32 / 0.33 for Post-LN at L = 2 / 6 / 12 / 24 / 48 (flat in
L, as Xiong et al. 2020 Thm. 1 predict: O(d sqrt(ln d))) and 0.26 / 0.24 / 0.20 / 0.17 / 0.12 for
Pre-LN (falling with L; the theorem's O(d sqrt(ln d / L))): Post-LN / Pre-LN = 1.03 / 1.15 /
1.34 / 1.83 / 2.79. Without any norm the residual stream leaving the last layer has
1.07 / 1.7 / 4.4 times the RMS of the embedding at L = 2 / 12 / 24 (Pre-LN LayerNorm without a
final norm: 1.06 / 1.40 / 1.75; with it: 1.00). Up to 12 layers the placements are within 1.34x
of each other; from 24 on they part fast. 12 is also the depth of GPT-2 small and BERT-base,
Post-LN models that train with warm-up; the seed's row 7 speaks of "几十层以上" (tens of layers).
"""

UNDERTRAINED_TOKENS_PER_PARAM = 5.0
"""``scaling.chinchilla`` warns below 5 training tokens per parameter (info between 5 and 20).

Sweep (``theory.scaling_laws``: Approach-3 loss surface at a fixed budget C = 6 N D, excess
over the Approach-3 optimum of that budget): D / N = 1, 2, 5, 10, 20 costs +0.330, +0.162,
+0.031, +0.000, +0.028 nats at C = 1e15; +0.179, +0.104, +0.036, +0.008, +0.000 at C = 1e18;
+0.090, +0.058, +0.026, +0.011, +0.002 at C = 1e21. At D / N = 5 the model is 2.0x the
compute-optimal size of its own budget (Approach 1), i.e. slower at inference for a worse loss
(the manual's row 5 "bigger and slower"), and the loss penalty starts to exceed the spread of
the fits; between 5 and 20 the IsoFLOP valley is flat (<= 0.011 nats beyond C = 1e18)."""

SOURCE_ROW2 = "000:1666 (manual row 2), §8.3.3; 000:674 (位置嵌入 vs 位置编码)"
SOURCE_WINDOW = ("Jiang et al. 2023 (Mistral 7B) §2 sliding window attention; "
                 "000:1668 (manual row 4, step 3: effective context)")
SOURCE_HEADS = ("Ainslie et al. 2023 (GQA); checkpoints/adapters name tables; "
                "bug attention.gqa-kv-heads-ignored")
SOURCE_SHAPES = "issue 15 (checkpoints trust nothing): checkpoints.io.validate"
SOURCE_ROW7 = ("000:1671 (manual row 7), 000:1114 (Pre-LN vs Post-LN); Xiong et al. 2020, "
               "On Layer Normalization in the Transformer Architecture, Thm. 1")
SOURCE_ROW5 = ("000:1669 (manual row 5), §8.3.7; Hoffmann et al. 2022 (Chinchilla) Approach 1 "
               "and eq. 10; Pearce & Song 2024 (Chinchilla counts total parameters)")


# ------------------------------------------------------------------------ shared helpers


def _stored_as_ours(subject: Subject) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """The stored tensors under the project's names: ours -> shape, from the headers through
    the family adapter's rules (each rule's ``load`` applied to a ``meta`` tensor of the
    stored shape: packed / fused tensors split as the loader splits them, nothing allocated).

    Returns (shapes, problems): ``problems`` maps a checkpoint tensor name to why it gave no
    shapes (absent, or its ``load`` refused the stored shape)."""
    config = subject.need_config()
    if subject.shapes is None or subject.family is None:
        raise NotApplicable("no safetensors headers (not a checkpoint directory)")
    from transformer_math.checkpoints.adapters import ADAPTERS

    adapter = ADAPTERS.get(subject.family)
    stored = {adapter.canonical(k): tuple(v) for k, v in subject.shapes.items()}
    ours: dict[str, tuple[int, ...]] = {}
    problems: dict[str, str] = {}
    for rule in adapter.rules(config):
        shape = stored.get(rule.theirs)
        if shape is None:
            problems[rule.theirs] = "absent"
            continue
        try:
            parts = rule.load(torch.empty(shape, device="meta"))
        except (ValueError, RuntimeError) as exc:
            problems[rule.theirs] = f"shape {shape}: {exc}"
            continue
        for name, part in zip(rule.ours, parts, strict=True):
            ours[name] = tuple(part.shape)
    return ours, problems


def _stored_rule_shape(subject: Subject, ours: str) -> tuple[str, tuple[int, ...]] | None:
    """(checkpoint name, stored shape) of the tensor that holds our tensor ``ours``."""
    from transformer_math.checkpoints.adapters import ADAPTERS

    assert subject.shapes is not None and subject.family is not None
    adapter = ADAPTERS.get(subject.family)
    stored = {adapter.canonical(k): tuple(v) for k, v in subject.shapes.items()}
    for rule in adapter.rules(subject.need_config()):
        if ours in rule.ours and rule.theirs in stored:
            return rule.theirs, stored[rule.theirs]
    return None


def _severity(flag: bool, bad: Severity, good: Severity = Severity.OK) -> Severity:
    return bad if flag else good


# ------------------------------------------------------------------ position.learned-table


@register_check("position.learned-table", kind=STATIC, manual_rows=(2,),
                families=("position",), source=SOURCE_ROW2)
def learned_table(subject: Subject) -> list[Finding]:
    """A learned absolute position table (GPT-2 ``wpe``) against the target context.

    A learned table E_pos (P, d) has one trained row per position 0 .. P - 1 and nothing for
    position P or later: it is a lookup table, not a function of the position, so it cannot
    extrapolate (000:674, 000:556: "嵌入表只有 512 行 ... 模型在后半段完全失效"). Measured: P (the
    stored table's rows for a checkpoint, else ``max_seq_len``); threshold: the target context
    T (``--context``, default the model's own length). P < T is a WARNING (the model cannot be
    used at T: the project's loader refuses positions >= P, other engines may clamp them
    silently, cf. the planted bug ``position.learned-silent-clamp``). The fix: a relative code
    (RoPE, ALiBi) or training / fine-tuning at length T. Other position codes: not applicable.
    """
    config = subject.need_config()
    if config.position != "learned":
        raise NotApplicable(f"position code {config.position!r} has no learned table")
    rows, where = int(config.max_seq_len), "max_seq_len"
    if subject.shapes is not None and subject.family is not None:
        found = _stored_rule_shape(subject, "embed_positions.weight")
        if found is not None:
            rows, where = int(found[1][0]), f"{found[0]} {found[1]}"
    context = subject.target_context
    assert context is not None
    given = subject.options.context is not None
    return [judged(
        "position.learned-table", rows, context, "below",
        summary=(f"learned position table has {rows} rows ({where}); target context {context}"
                 + ("" if given else " (no --context: the model's own length)")),
        subject="positions",
        meaning=(f"positions {rows} .. {context - 1} have no trained embedding: a learned "
                 "table is locked to its training length and cannot extrapolate"
                 if rows < context else
                 f"every position below {context} has a trained row"),
        fix=("use a relative position code (RoPE, ALiBi) or train / fine-tune at the target "
             "length; a learned table cannot be stretched" if rows < context else ""),
        source=SOURCE_ROW2, details={"table_rows": rows, "context": context,
                                     "context_given": given})]


# ---------------------------------------------------------------- attention.sliding-window


@register_check("attention.sliding-window", kind=STATIC, manual_rows=(2, 4),
                families=("mask",), source=SOURCE_WINDOW)
def sliding_window(subject: Subject) -> list[Finding]:
    """A sliding attention window W against the target context T.

    With the window of the project and transformers (query p sees keys j with
    p - W < j <= p, ``nn/config.py``, ``adapters/mistral.py``) one layer reaches W - 1
    positions back, and L stacked layers reach L (W - 1) back: the receptive field is
    R = L (W - 1) + 1 tokens (Jiang et al. 2023 §2: "after k attention layers, information can
    move forward by up to k x W tokens"; 32 layers x 4096 ~ 131K for Mistral 7B). Measured: R;
    threshold: T. W >= T: OK (the window never binds). W < T <= R: INFO, working as designed (a
    token sees W back directly and the rest through intermediate positions, with the dilution
    that relaying through L hops implies). R < T: WARNING: tokens more than R back cannot
    influence the output at all. No window: not applicable.
    """
    config = subject.need_config()
    window = config.sliding_window
    if window is None:
        raise NotApplicable("no sliding window (full causal attention)")
    context = subject.target_context
    assert context is not None
    layers = config.num_layers
    reach = layers * (window - 1) + 1
    binds = window < context
    blind = beyond(reach, context, "below")
    severity = Severity.WARNING if blind else (Severity.INFO if binds else Severity.OK)
    if not binds:
        meaning = f"the window W = {window} covers the whole target context {context}"
    elif not blind:
        meaning = (f"a token sees the last {window} tokens directly; older ones (up to "
                   f"{reach} back, {layers} layers x {window - 1} + 1) only through "
                   "intermediate positions, one window per layer (Mistral's design)")
    else:
        meaning = (f"the receptive field {layers} x ({window} - 1) + 1 = {reach} is shorter "
                   f"than the target context {context}: tokens more than {reach} back cannot "
                   "affect the output at all")
    return [Finding(
        "attention.sliding-window", severity,
        f"sliding window W = {window}, {layers} layers: receptive field {reach} tokens vs "
        f"target context {context}",
        float(reach), float(context), "below", subject="attention", meaning=meaning,
        fix=("use a context <= the receptive field, more layers, a larger window, or full "
             "attention in some layers" if blind else ""),
        source=SOURCE_WINDOW,
        details={"window": window, "num_layers": layers, "receptive_field": reach,
                 "context": context})]


# ------------------------------------------------------------------------ attention.heads


@dataclass(frozen=True)
class _Heads:
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    where: str


def _raw_int(raw: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` whose value the typed-JSON reader (:mod:`transformer_math.typed_json`)
    accepts as an integer >= 1; the loader refused this config, so a bad value is skipped."""
    fields = typed_json.Fields(raw, "config.json", null_is_missing=True)
    for key in keys:
        try:
            value = fields.get_int(key, None, minimum=1)
        except ValueError:
            continue
        if value is not None:
            return value
    return None


def _heads_of(subject: Subject) -> _Heads:
    """Head sizes from the project config, else (the loader refused the config) from the raw
    ``config.json`` keys of the Llama-like families or GPT-2."""
    c = subject.config
    if c is not None:
        return _Heads(c.num_heads, c.kv_heads, c.dim_per_head, c.hidden_size, "config")
    raw = subject.raw_config or {}
    heads = _raw_int(raw, "num_attention_heads", "n_head")
    hidden = _raw_int(raw, "hidden_size", "n_embd")
    if heads is None or hidden is None:
        raise NotApplicable(f"no readable head counts ({subject.load_error or 'no config'})")
    kv = _raw_int(raw, "num_key_value_heads") or heads
    head_dim = _raw_int(raw, "head_dim") or max(1, hidden // heads)
    return _Heads(heads, kv, head_dim, hidden, "config.json (raw; the loader refused it)")


@register_check("attention.heads", kind=STATIC, families=("gqa",), source=SOURCE_HEADS)
def heads(subject: Subject) -> list[Finding]:
    """Head grouping and the q/k/v rows of the stored tensors against the config.

    Grouped-query attention (Ainslie et al. 2023) shares each of H_kv key/value heads among
    H / H_kv query heads, so H_kv must divide H (else ERROR: no grouping exists). H d_k vs the
    width d is reported (equal in GPT-2 and Llama; Gemma 7B has 16 x 256 = 4096 > 3072: a fact,
    INFO). For a checkpoint, the rows of every layer's q, k, v projection in the headers (split
    as the family adapter splits them) must be H d_k, H_kv d_k, H_kv d_k: measured = the number
    of projection tensors whose rows disagree, threshold 0, above -> ERROR: the config lies
    about the heads (e.g. ``num_key_value_heads`` edited, or a GQA checkpoint described as
    MHA); the summary gives the head count the tensors imply.
    """
    h = _heads_of(subject)
    findings = [Finding(
        "attention.heads", _severity(h.heads % h.kv_heads != 0, Severity.ERROR),
        f"{h.heads} query heads, {h.kv_heads} key/value heads ({h.where}): "
        + (f"groups of {h.heads // h.kv_heads}" if h.heads % h.kv_heads == 0
           else f"{h.heads} % {h.kv_heads} = {h.heads % h.kv_heads}"),
        float(h.heads % h.kv_heads), 0.0, "above", subject="grouping",
        meaning=("every key/value head serves the same number of query heads "
                 f"({'MHA' if h.kv_heads == h.heads else 'MQA' if h.kv_heads == 1 else 'GQA'})"
                 if h.heads % h.kv_heads == 0 else
                 "num_key_value_heads does not divide num_attention_heads: the query heads "
                 "cannot be grouped; no engine computes this model"),
        fix="" if h.heads % h.kv_heads == 0 else "correct num_key_value_heads in config.json",
        source=SOURCE_HEADS, details={"num_heads": h.heads, "num_kv_heads": h.kv_heads})]
    width = h.heads * h.head_dim
    findings.append(Finding(
        "attention.heads", _severity(width != h.hidden, Severity.INFO),
        f"num_heads x head_dim = {h.heads} x {h.head_dim} = {width}, hidden size {h.hidden}",
        float(width), float(h.hidden), subject="width",
        meaning=("the concatenated heads are as wide as the residual stream" if width == h.hidden
                 else "the heads are projected from / back to a different width (legal: "
                      "o_proj maps H d_k to d); check that head_dim is meant"),
        source=SOURCE_HEADS, details={"head_dim": h.head_dim, "hidden_size": h.hidden}))
    if subject.config is not None and subject.shapes is not None and subject.family is not None:
        stored = _stored_heads(subject, h)
        if stored is not None:
            findings.append(stored)
    return findings


def _stored_heads(subject: Subject, h: _Heads) -> Finding | None:
    """The stored q/k/v rows against the head counts (None: no projection tensors)."""
    ours, problems = _stored_as_ours(subject)
    config = subject.need_config()
    want = {"q": h.heads * h.head_dim, "k": h.kv_heads * h.head_dim, "v": h.kv_heads * h.head_dim}
    wrong: list[str] = []
    implied: set[int] = set()
    checked = 0
    for layer in range(config.num_layers):
        names = {p: f"layers.{layer}.attn.{p}_proj.weight" for p in "qkv"}
        if all(n in ours for n in names.values()):
            for p, n in names.items():
                checked += 1
                rows = ours[n][0]
                if rows != want[p]:
                    wrong.append(f"layer {layer} {p}_proj: {rows} rows, config gives {want[p]}")
                    if p != "q":
                        implied.add(rows // h.head_dim)
            continue
        found = _stored_rule_shape(subject, names["k"])  # a fused q|k|v tensor it refused
        if found is not None and found[0] in problems:
            checked += 1
            rows = found[1][0]
            total = want["q"] + want["k"] + want["v"]
            wrong.append(f"layer {layer} {found[0]}: {rows} rows, config gives "
                         f"{want['q']} + {want['k']} + {want['v']} = {total}")
            implied.add(max(0, rows - want["q"]) // (2 * h.head_dim))
    if checked == 0:
        return None
    kv_text = (f"; the tensors imply {sorted(implied)} key/value heads of {h.head_dim}"
               if implied else "")
    return Finding(
        "attention.heads", _severity(bool(wrong), Severity.ERROR),
        (f"{len(wrong)} of {checked} stored q/k/v projections disagree with the config "
         f"({h.heads} heads, {h.kv_heads} KV heads, head_dim {h.head_dim}){kv_text}"
         if wrong else
         f"all {checked} stored q/k/v projections have the config's rows "
         f"({want['q']} / {want['k']} / {want['v']})"),
        float(len(wrong)), 0.0, "above", subject="stored projections",
        meaning=("config.json does not describe these tensors: num_key_value_heads / "
                 "num_attention_heads / head_dim is wrong, so an engine that trusts it builds "
                 "the wrong attention or fails to load" if wrong else
                 "the header shapes agree with the head counts"),
        fix=("set num_key_value_heads (and head_dim) to what the tensors hold" if wrong
             else ""),
        source=SOURCE_HEADS, details={"mismatches": wrong[:12], "implied_kv_heads":
                                      sorted(implied)})


# --------------------------------------------------------- attention.kv-projection-shapes


@register_check("attention.kv-projection-shapes", kind=DYNAMIC, families=("gqa",),
                source=SOURCE_HEADS)
def kv_projection_shapes(subject: Subject) -> list[Finding]:
    """The project model's built k/v projections against ``kv_heads * head_dim`` of its config.

    Dynamic only because it needs the built model (no forward pass: it reads the modules'
    weight shapes). Every attention module (self and cross) must have q_proj rows H d_k and
    k_proj / v_proj rows H_kv d_k; measured = the number of projections that disagree,
    threshold 0, above -> ERROR: the model is not the configured architecture (the planted bug
    ``attention.gqa-kv-heads-ignored`` builds H key/value heads for a GQA config: more
    parameters, an H / H_kv times larger KV cache, and a GQA checkpoint that cannot be loaded).
    Invisible by construction when H_kv = H. The transformers engine builds its modules from the
    checkpoint's own config (``attention.heads`` compares that with the headers): not
    applicable there.
    """
    from transformer_math.doctor.engines import ProjectEngine

    engine = subject.need_engine()
    if not isinstance(engine, ProjectEngine):
        raise NotApplicable("reads the project model's modules (the transformers engine builds "
                            "its own from config.json; attention.heads checks the headers)")
    c = engine.config
    want = {"q": c.num_heads * c.dim_per_head, "k": c.kv_heads * c.dim_per_head,
            "v": c.kv_heads * c.dim_per_head}
    wrong: list[str] = []
    built: set[int] = set()
    checked = 0
    for i, layer in enumerate(engine.model.layers):
        for kind in ("attn", "cross_attn"):
            module = getattr(layer, kind, None)
            if module is None:
                continue
            for p in "qkv":
                checked += 1
                rows = int(getattr(module, f"{p}_proj").weight.shape[0])
                if rows != want[p]:
                    wrong.append(f"layer {i} {kind}.{p}_proj: {rows} rows "
                                 f"({rows // c.dim_per_head} heads), config {want[p]}")
                    if p != "q":
                        built.add(rows // c.dim_per_head)
    if checked == 0:
        raise NotApplicable("the model has no attention sublayers")
    return [Finding(
        "attention.kv-projection-shapes", _severity(bool(wrong), Severity.ERROR),
        (f"{len(wrong)} of {checked} built projections disagree with num_kv_heads = "
         f"{c.kv_heads}: {wrong[0]}" if wrong else
         f"all {checked} built q/k/v projections have {want['q']} / {want['k']} / "
         f"{want['v']} rows ({c.num_heads} heads, {c.kv_heads} KV heads)"),
        float(len(wrong)), 0.0, "above", subject="built projections",
        meaning=(f"the built key/value projections hold {sorted(built) or '?'} heads, not "
                 f"the configured {c.kv_heads}: the model ignores num_kv_heads (with "
                 f"{c.num_heads} it is plain multi-head attention: more parameters and an "
                 f"{c.num_heads // c.kv_heads}x larger KV cache)" if wrong
                 else "the built attention is the configured grouping"),
        fix=("size k_proj / v_proj as num_kv_heads * head_dim (nn/attention.py) and group the "
             "query heads over them" if wrong else ""),
        source=SOURCE_HEADS, details={"mismatches": wrong[:12], "built_kv_heads":
                                      sorted(built)})]


# ---------------------------------------------------------------- checkpoint.tensor-shapes


@register_check("checkpoint.tensor-shapes", kind=STATIC, families=("checkpoint",),
                source=SOURCE_SHAPES)
def tensor_shapes(subject: Subject) -> list[Finding]:
    """The safetensors headers against the config (embedding rows, every tensor's shape).

    First the embedding's rows against ``vocab_size``, then every tensor name and shape against
    the project's model for the config.

    The second part is the loader's own test (``checkpoints.io.check_layers`` and
    ``validate``: the adapter's ``save`` transforms applied to a one-layer ``meta`` model), run
    here so that a static run (``--static-only``, nothing loaded) sees what loading would
    refuse; it uses the project's model, so a planted bug that changes the built shapes (e.g.
    ``attention.gqa-kv-heads-ignored`` on a GQA checkpoint) fails it too. Findings: the
    embedding (measured its rows, threshold ``vocab_size``, ERROR when they differ), then the
    tensors (measured 1 when the loader's test refuses them, threshold 0, above -> ERROR with
    the loader's message).
    """
    config = subject.need_config()
    if subject.shapes is None or subject.family is None:
        raise NotApplicable("no safetensors headers (not a checkpoint directory)")
    from transformer_math.checkpoints.adapters import ADAPTERS
    from transformer_math.checkpoints.io import check_layers, validate

    findings: list[Finding] = []
    found = _stored_rule_shape(subject, "embed_tokens.weight")
    if found is not None and config.vocab_size is not None:
        ours, _ = _stored_as_ours(subject)
        rows = ours.get("embed_tokens.weight", found[1])[0]
        findings.append(Finding(
            "checkpoint.tensor-shapes", _severity(rows != config.vocab_size, Severity.ERROR),
            f"token embedding {found[0]} has {rows} rows, vocab_size {config.vocab_size}",
            float(rows), float(config.vocab_size), subject="embedding",
            meaning=("vocab_size does not match the embedding: token ids index the wrong rows "
                     "or run past the table" if rows != config.vocab_size else
                     "one embedding row per token id"),
            fix=("set vocab_size to the embedding's rows (or resize the embedding and head "
                 "together)" if rows != config.vocab_size else ""),
            source=SOURCE_SHAPES, details={"rows": rows, "vocab_size": config.vocab_size}))
    adapter = ADAPTERS.get(subject.family)
    shapes = {adapter.canonical(k): tuple(v) for k, v in subject.shapes.items()}
    source = str(subject.path / "config.json") if subject.path is not None else "config"
    try:
        check_layers(adapter, config, shapes, source)
        validate(adapter, config, adapter.rules(config), shapes, source)
    except ValueError as exc:
        findings.append(Finding(
            "checkpoint.tensor-shapes", Severity.ERROR,
            f"the headers do not match the project's model for this config: {exc}"[:400],
            1.0, 0.0, "above", subject="tensors",
            meaning="loading refuses this checkpoint (or would build a model that does not "
                    "hold these tensors)",
            fix="correct config.json to describe the stored tensors (or re-export them)",
            source=SOURCE_SHAPES, details={"message": str(exc)[:1000]}))
    else:
        findings.append(Finding(
            "checkpoint.tensor-shapes", Severity.OK,
            f"all {len(shapes)} stored tensors match the project's model for the config "
            f"({config.num_layers} layers)",
            0.0, 0.0, "above", subject="tensors", source=SOURCE_SHAPES,
            details={"tensors": len(shapes)}))
    return findings


# ------------------------------------------------------------------------- norm.placement


@register_check("norm.placement", kind=STATIC, manual_rows=(7,), families=("norm",),
                source=SOURCE_ROW7)
def norm_placement(subject: Subject) -> list[Finding]:
    """Where the norms sit: Post-LN in a deep model, Pre-LN without a final norm, no norm.

    Post-LN, x_{l+1} = N(x_l + f(x_l)) (Vaswani et al. 2017), puts a norm on the residual path;
    Xiong et al. 2020 (Thm. 1) show that at initialisation the gradient of the last layer's
    parameters is O(d sqrt(ln d)) for Post-LN, independent of the depth L, but
    O(d sqrt(ln d / L)) for Pre-LN, x_{l+1} = x_l + f(N(x_l)): Post-LN needs a learning-rate
    warm-up, more so the deeper it is (000:1114: "深层训练不稳 ... 第一件事就是检查是不是用了
    Post-LN"). Post-LN: INFO up to :data:`DEEP_LAYERS` layers, WARNING above (measured L,
    threshold 12; the sweep is in :data:`DEEP_LAYERS`). No norm at all (``norm="none"``):
    nothing controls the activation scale (row 7 step 2), same depth rule. Pre-LN without a
    final norm: the residual stream, whose scale grows with depth (sweep: 1.06 / 1.40 / 1.75 x
    the embedding RMS at L = 2 / 12 / 24), enters the head un-normalised: WARNING when there is
    a head (every Pre-LN design, GPT-2's ln_f, Llama's norm, Xiong et al.'s, has one), INFO
    without one (the caller normalises). Pre-LN with a final norm: OK. The planted bug
    ``norm.pre-ln-as-post-ln`` moves the norm in code while the config still says Pre-LN:
    invisible to this check by construction (the depth probes measure it).
    """
    c = subject.need_config()
    layers = c.num_layers
    deep = beyond(layers, DEEP_LAYERS, "above")
    common = {"num_layers": layers, "norm": c.norm, "placement": c.norm_placement,
              "final_norm": c.has_final_norm, "deep_layers": DEEP_LAYERS}
    if c.norm == "none":
        return [Finding(
            "norm.placement", Severity.WARNING if deep else Severity.INFO,
            f"no normalisation in {layers} layers (norm='none')", float(layers),
            float(DEEP_LAYERS), "above", subject="norms",
            meaning=("nothing controls the activation scale: the residual stream grows with "
                     "depth (4.4x the embedding RMS after 24 layers at init in the sweep) and "
                     "the layer Jacobians multiply unchecked"),
            fix="add LayerNorm / RMSNorm in the Pre-LN position with a final norm",
            source=SOURCE_ROW7, details=common)]
    if c.norm_placement == "post":
        return [Finding(
            "norm.placement", Severity.WARNING if deep else Severity.INFO,
            f"Post-LN in {layers} layers (flagged above {DEEP_LAYERS})", float(layers),
            float(DEEP_LAYERS), "above", subject="placement",
            meaning=("Post-LN keeps the last layers' gradients at O(d sqrt(ln d)) whatever the "
                     "depth while Pre-LN's shrink as 1/sqrt(L) (Xiong et al. 2020): Post-LN "
                     "needs a learning-rate warm-up and becomes unstable as the stack deepens"),
            fix=("use Pre-LN (norm_placement='pre') with a final norm, or keep a warm-up and "
                 "a small learning rate" if deep else "train with a learning-rate warm-up"),
            source=SOURCE_ROW7, details=common)]
    if not c.has_final_norm:
        head = c.head_size > 0
        return [Finding(
            "norm.placement", Severity.WARNING if head else Severity.INFO,
            f"Pre-LN without a final norm ({layers} layers, "
            f"{'head of width ' + str(c.head_size) if head else 'no head'})",
            float(layers), float(DEEP_LAYERS), "", subject="final norm",
            meaning=("the residual stream is never normalised before the head: its scale grows "
                     "with depth (1.06x / 1.40x / 1.75x the embedding RMS at L = 2 / 12 / 24 at "
                     "init) and with training, and the logits scale with it"),
            fix="add the final norm (final_norm=True), as GPT-2's ln_f and Llama's model.norm",
            source=SOURCE_ROW7, details=common)]
    return [Finding(
        "norm.placement", Severity.OK,
        f"Pre-LN with a final norm ({c.norm}, {layers} layers)", float(layers),
        float(DEEP_LAYERS), "", subject="placement",
        meaning="the identity path carries the gradient to every layer and the head sees a "
                "normalised stream (GPT-2, Llama)",
        source=SOURCE_ROW7, details=common)]


# ----------------------------------------------------------------------- scaling.chinchilla


def _parameter_breakdown(config: Any) -> dict[str, int]:
    """``Transformer.parameter_breakdown()`` of ``config`` from ``meta``-device skeletons of ONE
    and TWO layers (``checkpoints.io.skeleton``: no memory, no RNG draw): every part is
    b(1) + (L - 1) (b(2) - b(1)), exact because every layer of a config has the same shapes,
    and the cost does not grow with L (a full 80-layer skeleton takes seconds). RoPE holds no
    parameter: it is left out (its tables on ``meta`` import torch's reference kernels, ~8 s
    once per process on the shared machine)."""
    import dataclasses

    from transformer_math.checkpoints.io import skeleton

    if config.position == "rope":  # no parameters; its meta-device tables cost a torch import
        config = dataclasses.replace(config, position="none", rope_scaling=None)
    one, two = (skeleton(dataclasses.replace(config, num_layers=k)).parameter_breakdown()
                for k in (1, 2))
    layers = config.num_layers
    return {key: one[key] + (layers - 1) * (two[key] - one[key]) for key in one}


@register_check("scaling.chinchilla", kind=STATIC, manual_rows=(5,), families=("scaling",),
                source=SOURCE_ROW5)
def chinchilla(subject: Subject) -> list[Finding]:
    """Training tokens per parameter D / N against Chinchilla's ~20 (needs ``--train-tokens``).

    N is the model's TOTAL parameter count, embeddings included and a tied head counted once
    (``Transformer.parameter_breakdown()["total"]``, :func:`_parameter_breakdown`: nothing
    allocated), as Hoffmann et al. 2022 count it (Kaplan et al. 2020 count non-embedding
    parameters; Pearce & Song 2024 trace most of the two papers' disagreement to that). With
    C = 6 N D (``theory.scaling_laws.training_flops``), Approach 1 gives the compute-optimal
    N_opt(C) = sqrt(C / 120) (D = 20 N) and the data-limited N_opt(D) = D / 20 (the manual's
    step 1: "估计数据量 D, 反推合适 N"). Measured D / N, threshold
    :data:`UNDERTRAINED_TOKENS_PER_PARAM` = 5 (below: WARNING, the model is >= 2x the optimum
    of its own budget and >= 4x what D feeds; sweep in the constant's docstring); 5 .. 20: INFO
    (mildly under-trained, within the flat IsoFLOP valley); >= 20: OK (more tokens per parameter
    is inference-aware training, Sardana et al. 2024). Details: both optima, the Approach-3 loss
    excess at the same C, training FLOPs 6 N D and inference 2 N FLOPs per token.
    """
    tokens = subject.options.train_tokens
    if tokens is None:
        raise NotApplicable("no --train-tokens given")
    config = subject.need_config()
    from transformer_math.theory.scaling_laws import (
        INFERENCE_FLOPS_PER_PARAM_TOKEN,
        TOKENS_PER_PARAM_APPROACH_1,
        compute_optimal,
        get_scaling_fit,
        training_flops,
    )

    parts = _parameter_breakdown(config)
    n = float(parts["total"])
    d = float(tokens)
    ratio = d / n
    flops = training_flops(n, d)
    for_data = compute_optimal(tokens=d, approach="1")
    for_flops = compute_optimal(flops=flops, approach="1")
    fit3 = get_scaling_fit("3")
    assert fit3.loss is not None
    best3 = compute_optimal(flops=flops, approach="3")
    excess = fit3.loss(n, d) - (best3.loss if best3.loss is not None else 0.0)
    under = beyond(ratio, UNDERTRAINED_TOKENS_PER_PARAM, "below")
    mild = beyond(ratio, TOKENS_PER_PARAM_APPROACH_1, "below")
    severity = Severity.WARNING if under else (Severity.INFO if mild else Severity.OK)
    details = {
        "params_total": int(n), "params_non_embedding": int(parts["non_embedding"]),
        "train_tokens": d, "tokens_per_param": ratio, "training_flops": flops,
        "inference_flops_per_token": INFERENCE_FLOPS_PER_PARAM_TOKEN * n,
        "optimal_params_for_tokens": for_data.params,
        "optimal_params_for_flops": for_flops.params,
        "optimal_tokens_for_flops": for_flops.tokens,
        "approach3_excess_loss": excess, "approach3_optimal_tokens_per_param":
            best3.tokens_per_param,
    }
    return [Finding(
        "scaling.chinchilla", severity,
        f"{ratio:.3g} training tokens per parameter (D = {d:.3g}, N = {n:.4g} total); "
        f"Chinchilla ~{TOKENS_PER_PARAM_APPROACH_1:g}",
        ratio, UNDERTRAINED_TOKENS_PER_PARAM, "below", subject="model size",
        meaning=(f"the model is {n / for_flops.params:.2g}x the compute-optimal size for its "
                 f"budget C = 6ND = {flops:.3g} FLOPs (N_opt {for_flops.params:.3g}, D_opt "
                 f"{for_flops.tokens:.3g}) and {n / for_data.params:.2g}x what {d:.3g} tokens "
                 f"feed (N_opt = D/20 = {for_data.params:.3g}); Approach 3 puts the loss "
                 f"{excess:+.3f} nats above the optimum of the same compute; inference costs "
                 f"2N = {INFERENCE_FLOPS_PER_PARAM_TOKEN * n:.3g} FLOPs per token"
                 if mild else
                 f"at least {TOKENS_PER_PARAM_APPROACH_1:g} tokens per parameter: not "
                 "under-trained by Chinchilla's rule (more is inference-aware training)"),
        fix=(f"train a smaller model (~{for_data.params:.3g} parameters for {d:.3g} tokens) or "
             f"get more data (~{TOKENS_PER_PARAM_APPROACH_1 * n:.3g} tokens for this model); "
             "with inference demand prefer smaller still (tmath chinchilla "
             "--inference-tokens)" if mild else ""),
        source=SOURCE_ROW5, details=details)]
