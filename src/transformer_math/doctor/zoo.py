"""The doctor's bug zoo: tiny project models that reach every engine bug site, and the matrix of
which doctor checks flag which planted bug.

The claims are mutation-tested by ``tmath mutants`` (``claims/mutants.py``); the doctor is
tested the same way. Every bug declared in the project's engine (the modules under
``transformer_math.functional`` and ``transformer_math.nn`` that
:class:`~transformer_math.nn.transformer.Transformer` imports, directly or lazily) is planted in
turn, and :func:`~transformer_math.doctor.examine` runs on the zoo models whose clean doctor
run passed the bug's site (:func:`bugs.recording` around building the model and examining it:
a model that never queries the site cannot be affected). Each model is built INSIDE the
``bugs.plant`` block, so bugs in construction code (``attention.gqa-kv-heads-ignored`` sizes
the projections in ``__init__``) take effect. A check *newly flags* a bug on a model when its
worst severity under the bug is a warning or an error and higher than in the clean run of the
same model with the same options and seed (a check already flagged on the clean model does
not count unless it gets worse). Outcome per bug:

- ``flagged``: some model that reaches the site newly flags it (by which checks, on which
  models);
- ``unflagged``: the zoo reaches the site, no check newly flags it (a missing check: what
  makes ``tmath mutants --doctor`` exit 1);
- ``invisible``: unflagged, and listed in :data:`INVISIBLE_BUGS` with the evidence that it
  changes no output (a silent fallback that computes the same numbers, an IO counter);
- ``unreached``: an engine bug that no zoo model's clean run reaches (a gap of the zoo);
- ``not in the engine``: declared outside the engine modules (claims, theory, data,
  robotics, ...) or in an engine-package module the Transformer never imports.

Clean runs are cached per (model, checks, seed) within the process, so a matrix over many bugs
builds and examines each model once without a bug. The whole matrix (every engine bug, every
zoo model reaching it, the 28 checks registered at the time) took 78 s on the shared 2-core
machine when quiet (2026-12-01 19:10 UTC; 1065 s at 18:36 under load 6-11 with slower checks);
stopping each bug at its first flagging model (``first_flag``, ``--first-kill``) 22 s, which
``tests/doctor/test_zoo.py`` runs.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_math import bugs

if TYPE_CHECKING:
    from transformer_math.doctor.findings import Diagnosis
    from transformer_math.nn.config import TransformerConfig
    from transformer_math.nn.transformer import Transformer

ENGINE_PACKAGES = ("transformer_math.functional", "transformer_math.nn")
ENGINE_ROOT = "transformer_math.nn.transformer"

FLAGGED, UNFLAGGED, INVISIBLE, UNREACHED, NOT_IN_ENGINE = (
    "flagged", "unflagged", "invisible", "unreached", "not in the engine")

INVISIBLE_BUGS: dict[str, str] = {
    "attention.backend-ignored":
        "the silent fallback runs the eager reference path, which computes the same softmax "
        "attention: max |logits planted - clean| 4.0e-7 (llama-gqa) and 4.8e-7 (gpt2) on logits "
        "of magnitude ~1.9 (float32 rounding; measured 2026-12-01 18:54 UTC); only speed shows it",
    "flash.kv-counted-once":
        "an IO counter of the tiled loop (read by the flash-io claim); the attention outputs "
        "do not depend on it",
    "flash.backward-recomputes-output":
        "a cost bug of the tiled backward: the output is recomputed from the tiles instead of "
        "read from the saved O, giving the same gradients (up to rounding) with 4 N^2 d more "
        "FLOPs per head; killed by the claim architecture.flash-recompute-flops, which counts "
        "them",
    "attention.weights-detached":
        "detach() leaves every forward value bit-identical (logits, caches, hidden states); it "
        "cuts only the gradient through the softmax into Q and K, and the doctor's gradient "
        "checks read norms over depth, which the V path still carries (killed by the claim "
        "attention.not-globally-lipschitz, which differentiates the attention itself)",
}
"""Engine bugs that change no output the doctor can observe, with the evidence: reached but
unflagged, they are ``invisible`` rather than ``unflagged`` (not a missing check)."""

_PLUMBING = ("a model-level plumbing bug of issue 33, outside the doctor zoo's models and "
             "probes; killed by its named test in tests/checkpoints/test_plumbing_bugs.py")

UNREACHED_WHY: dict[str, str] = {
    "generation.finished-rows-continue": _PLUMBING,
    "transformer.embedding-scale-dropped": _PLUMBING,
    "norm.gemma-offset-dropped": _PLUMBING,
    "generation.temperature-after-filters": _PLUMBING,
    "transformer.loss-labels-unshifted": _PLUMBING,
    "transformer.logits-to-keep-first": _PLUMBING,
    "generation.repetition-penalty-inverted": _PLUMBING,
    "norm.llama-gain-in-float32": _PLUMBING,
    "flash.kv-counted-once": "the IO counter is only kept when a caller passes one "
                             "(tiled_attention_forward(io=...)); the model's tiled backend "
                             "does not",
    "linear-attention.favor-no-norm-correction":
        "positive random features (FAVOR+) are not a feature map of the Transformer's linear "
        "backend",
    "linear-attention.read-before-write":
        "the recurrent form of linear attention; the Transformer's linear backend runs the "
        "parallel form",
    "rope.axial-sections-interleaved": "axial (M-RoPE) angles: no Transformer position code "
                                       "uses them",
    "rope.layout-no-permutation":
        "only converting interleaved (Meta) q/k weights to the half layout, i.e. loading "
        "consolidated.*.pth; the doctor reads Hugging Face checkpoints and built models",
    "transformer.cross-attention-mask-dropped":
        "encoder-decoder cross-attention with a memory padding mask; the doctor's engines run "
        "decoder-only or encoder-only models without memory",
    "attention.prefix-lm-boundary-late":
        "the prefix-LM mask (functional.masks.prefix_lm_mask) is built only by VLAPolicy; the "
        "zoo's models are causal or bidirectional language models; killed by the claim "
        "robotics.vla-prefix-mask",
    "nn.adaln-condition-ignored":
        "adaLN-Zero conditioning (condition_size), used only by the diffusion and flow-matching "
        "action heads; no checkpoint family or zoo model is conditioned",
}
"""Why each known unreached engine bug is off the zoo's forward paths."""


@dataclass(frozen=True)
class ZooModel:
    """One model of the zoo: ``config()`` builds its :class:`TransformerConfig`, ``seed`` its
    weights (``build_transformer(config, seed)``), ``examine`` the keyword arguments of
    :func:`~transformer_math.doctor.examine` it is examined with (``context``, ``set_model``,
    ...); ``reaches`` says which bug sites it exists for."""

    name: str
    config: Callable[[], TransformerConfig]
    examine: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    reaches: str = ""

    def build(self) -> Transformer:
        from transformer_math.nn.transformer import build_transformer

        return build_transformer(self.config(), self.seed)


def _config(**kw: Any) -> Callable[[], TransformerConfig]:
    def make() -> TransformerConfig:
        from transformer_math.nn.config import TransformerConfig

        base: dict[str, Any] = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4,
                                    max_seq_len=64)
        base.update(kw)
        return TransformerConfig(**base)

    return make


_LLAMA = dict(position="rope", norm="rmsnorm", feedforward="swiglu", attention_bias=False,
              mlp_bias=False)
_GPT2 = dict(position="learned", norm="layernorm", feedforward="gelu")
# RoPE scaling models: head_dim 16 (8 rotary pairs) so that YaRN's ramp and LongRoPE's per-pair
# factors have room; trained length 16, so probes past it stay cheap.
_SCALED = dict(_LLAMA, num_heads=2, num_kv_heads=2, max_seq_len=64)
_L0 = 16

ZOO_MODELS: tuple[ZooModel, ...] = (
    ZooModel("llama-gqa", _config(**_LLAMA, num_kv_heads=2),
             reaches="rope, rmsnorm, swiglu, GQA 4 query / 2 kv heads (sdpa)"),
    ZooModel("gpt2", _config(**_GPT2),
             reaches="learned positions, layernorm, gelu, multi-head (sdpa)"),
    ZooModel("alibi-3-heads", _config(**_GPT2 | dict(position="alibi", hidden_size=24,
                                                      num_heads=3)),
             reaches="ALiBi slopes for a head count that is not a power of two"),
    ZooModel("sinusoidal", _config(**_GPT2 | dict(position="sinusoidal")),
             reaches="sinusoidal position code"),
    ZooModel("rope-yarn", _config(**_SCALED, rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": _L0}),
        reaches="YaRN frequencies and attention factor"),
    ZooModel("rope-llama3", _config(**_SCALED, rope_scaling={
        "rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": _L0}), reaches="Llama 3.1 frequency bands"),
    ZooModel("rope-dynamic", _config(**_SCALED, rope_scaling={
        "rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": _L0}),
        reaches="dynamic NTK base growth with the length"),
    ZooModel("rope-longrope", _config(**_SCALED, rope_scaling={
        "rope_type": "longrope", "original_max_position_embeddings": _L0, "factor": 4.0,
        "short_factor": [1.0, 1.0, 1.1, 1.2, 1.4, 1.7, 2.0, 2.4],
        "long_factor": [1.0, 1.2, 1.6, 2.2, 3.0, 3.6, 4.0, 4.4]}),
        reaches="LongRoPE short/long factor switch at the original length"),
    ZooModel("sliding-window", _config(**_LLAMA, num_kv_heads=2, sliding_window=8),
             reaches="sliding-window causal mask (Mistral)"),
    ZooModel("tiled", _config(**_LLAMA, num_kv_heads=2, attention_backend="tiled"),
             reaches="tiled (flash-style) attention with the online softmax"),
    ZooModel("reference", _config(**_LLAMA, num_kv_heads=2, attention_backend="reference"),
             reaches="the eager reference backend (explicit softmax)"),
    ZooModel("linear", _config(**_GPT2 | dict(attention_backend="linear")),
             reaches="linear attention backend (not softmax attention)"),
    ZooModel("post-ln", _config(**_GPT2 | dict(norm_placement="post")),
             reaches="Post-LN blocks"),
    ZooModel("deep-6", _config(**_LLAMA, num_kv_heads=2, num_layers=6),
             reaches="depth effects (gradients and Jacobians over 6 layers)"),
    ZooModel("set-model", _config(vocab_size=None, input_size=4, output_size=4,
                                  position="none", causal=False, norm="layernorm",
                                  feedforward="gelu"),
             examine={"set_model": True},
             reaches="bidirectional attention without positions (a set model)"),
)
"""The zoo: between them their configurations pass every engine bug site the Transformer can
reach on a forward pass (see :func:`doctor_matrix`'s ``unreached`` list for the rest)."""


def zoo_model(name: str) -> ZooModel:
    for m in ZOO_MODELS:
        if m.name == name:
            return m
    raise ValueError(f"no zoo model {name!r}; known: {', '.join(m.name for m in ZOO_MODELS)}")


# --- which bugs live in the engine ---------------------------------------------------------------


def _module_file(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin) if spec is not None and spec.origin else None


def _imported(module: str, path: Path) -> set[str]:
    """Project modules ``module`` imports anywhere (module level and inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {n for n in found if n.startswith("transformer_math.")}


def engine_modules(root: str = ENGINE_ROOT) -> set[str]:
    """The modules of :data:`ENGINE_PACKAGES` that ``root`` imports, transitively (by reading
    their sources; names that are not modules, e.g. imported functions, drop out)."""
    seen: set[str] = set()
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        try:
            path = _module_file(name)
        except (ImportError, ValueError):
            path = None
        if path is None or path.suffix != ".py":
            continue
        seen.add(name)
        stack.extend(_imported(name, path) - seen)
    return {m for m in seen if m.startswith(ENGINE_PACKAGES)}


def engine_bugs(names: Iterable[str] | None = None, reached: Iterable[str] = ()
                ) -> tuple[list[bugs.Bug], list[bugs.Bug]]:
    """(engine bugs, other library bugs) among ``names`` (default: every bug the library
    declares; bugs declared outside ``transformer_math``, e.g. tests' demo bugs, are left out).

    An engine bug lives in a module of :data:`ENGINE_PACKAGES` that the Transformer imports
    (:func:`engine_modules`) or that a run of it was seen to reach (``reached``: bug names whose
    sites some model passed; backends registered by name, e.g. the tiled and linear attention
    modules, are found that way)."""
    registry = bugs.load_all()
    chosen = sorted(names) if names is not None else sorted(registry.names())
    modules = engine_modules() | {registry[n].module for n in reached if n in registry
                                  and registry[n].module.startswith(ENGINE_PACKAGES)}
    engine, other = [], []
    for name in chosen:
        bug = registry[name]
        if not bug.module.startswith("transformer_math."):
            continue
        (engine if bug.module in modules else other).append(bug)
    return engine, other


# --- the matrix ------------------------------------------------------------------------------


@dataclass
class ModelRun:
    """One doctor run of a zoo model: worst severity per check, the bug sites it passed."""

    model: str
    worst: dict[str, int]
    reached: frozenset[str]
    crashed_checks: tuple[str, ...]
    seconds: float
    error: str | None = None  # building or examining raised outside the checks

    @property
    def flagged(self) -> list[str]:
        return [c for c, s in self.worst.items() if s >= 2]


@dataclass
class BugRow:
    """One bug's row of the doctor matrix."""

    bug: bugs.Bug
    outcome: str
    reached_by: list[str] = field(default_factory=list)
    flagged_by: dict[str, list[str]] = field(default_factory=dict)  # model -> new checks
    crashed: dict[str, str] = field(default_factory=dict)  # model -> what crashed
    seconds: float = 0.0
    crash_flags: dict[str, list[str]] = field(default_factory=dict)  # model -> checks whose
    # new flag is the probe raising (an error finding with details["crashed"])

    @property
    def crash_only(self) -> bool:
        """Flagged, but only by probes that raised under the bug (no measured number)."""
        return bool(self.flagged_by) and all(
            set(cs) <= set(self.crash_flags.get(m, [])) for m, cs in self.flagged_by.items())

    @property
    def checks(self) -> list[str]:
        """Every check that newly flags the bug on some model, each once."""
        return list(dict.fromkeys(c for cs in self.flagged_by.values() for c in cs))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.bug.name, "module": self.bug.module,
                "description": self.bug.description, "outcome": self.outcome,
                "reached_by": list(self.reached_by), "flagged_by": dict(self.flagged_by),
                "checks": self.checks, "crashed": dict(self.crashed),
                "crash_flags": dict(self.crash_flags), "crash_only": self.crash_only,
                "seconds": round(self.seconds, 3)}


@dataclass
class DoctorMatrix:
    rows: list[BugRow]
    clean: dict[str, ModelRun]
    seconds: float
    checks: list[str]

    def by_outcome(self, outcome: str) -> list[str]:
        return [r.bug.name for r in self.rows if r.outcome == outcome]

    @property
    def missed(self) -> list[str]:
        """Engine bugs the zoo reaches that no check flags: what makes the command exit 1."""
        return self.by_outcome(UNFLAGGED)

    def summary(self) -> dict[str, Any]:
        return {"bugs": len(self.rows),
                **{k: len(self.by_outcome(k)) for k in (FLAGGED, UNFLAGGED, INVISIBLE,
                                                          UNREACHED, NOT_IN_ENGINE)},
                "unflagged_bugs": self.missed, "invisible_bugs": self.by_outcome(INVISIBLE),
                "unreached_bugs": self.by_outcome(UNREACHED),
                "crash_only_bugs": [r.bug.name for r in self.rows if r.crash_only],
                "clean_flags": {m: r.flagged for m, r in self.clean.items() if r.flagged},
                "models": len(self.clean), "checks": len(self.checks),
                "seconds": round(self.seconds, 3)}

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary(), "checks": list(self.checks),
                "models": {m: {"reached": sorted(r.reached), "flagged_clean": r.flagged,
                               "seconds": round(r.seconds, 3), "error": r.error}
                           for m, r in self.clean.items()},
                "bugs": [r.to_json() for r in self.rows]}


_CLEAN: dict[tuple[Any, ...], ModelRun] = {}


def _key(model: ZooModel, checks: Sequence[str] | None, seed: int) -> tuple[Any, ...]:
    return (model.name, model.seed, repr(model.config()), tuple(sorted(model.examine.items())),
            tuple(checks or ()), seed)


def run_model(model: ZooModel, *, checks: Sequence[str] | None = None, seed: int = 0
              ) -> tuple[ModelRun, Diagnosis | None]:
    """Build ``model`` and examine it (under whatever bugs are planted now), recording the bug
    sites passed on the way."""
    from transformer_math.doctor import examine

    start = time.perf_counter()
    diagnosis = None
    error = None
    with bugs.recording() as sites:
        try:
            built = model.build()
            diagnosis = examine(built, checks=checks, seed=seed, **dict(model.examine))
        except Exception as exc:  # a bug that breaks construction: recorded, never fatal
            error = f"{type(exc).__name__}: {exc}"[:300]
    worst: dict[str, int] = {}
    crashed: list[str] = []
    if diagnosis is not None:
        for f in diagnosis.findings:
            worst[f.check] = max(worst.get(f.check, 0), int(f.severity))
            if f.details.get("crashed"):
                crashed.append(f.check)
    return (ModelRun(model.name, worst, frozenset(sites), tuple(dict.fromkeys(crashed)),
                     time.perf_counter() - start, error), diagnosis)


def clean_run(model: ZooModel, *, checks: Sequence[str] | None = None, seed: int = 0
              ) -> ModelRun:
    """The cached clean run of ``model`` (nothing planted)."""
    key = _key(model, checks, seed)
    if key not in _CLEAN:
        if bugs.active():
            raise RuntimeError(f"clean run of {model.name} asked for while bugs are planted: "
                               f"{sorted(bugs.active())}")
        _CLEAN[key], _ = run_model(model, checks=checks, seed=seed)
    return _CLEAN[key]


def newly_flagged(clean: ModelRun, planted: ModelRun) -> list[str]:
    """Checks at warning or above under the bug whose worst severity rose over the clean run."""
    return [c for c, s in planted.worst.items() if s >= 2 and s > clean.worst.get(c, 0)]


def _models(models: Iterable[str | ZooModel] | None) -> list[ZooModel]:
    if models is None:
        return list(ZOO_MODELS)
    return [m if isinstance(m, ZooModel) else zoo_model(m) for m in models]


def doctor_matrix(bug_names: Iterable[str] | str | None = None,
                  models: Iterable[str | ZooModel] | None = None, *,
                  checks: Sequence[str] | None = None, seed: int = 0, first_flag: bool = False,
                  on_step: Callable[[str, str], None] | None = None) -> DoctorMatrix:
    """Plant each bug (``bug_names``: names, or one regular expression searched in every
    declared name; default all) and examine the zoo ``models`` that reach its site; see the
    module docstring for the outcomes. ``checks``: glob patterns restricting the doctor's
    checks; ``first_flag``: stop a bug at the first model that flags it (models tried fastest
    clean run first); ``on_step(bug, model)`` before each run (progress)."""
    from transformer_math.doctor import select_checks

    start = time.perf_counter()
    registry = bugs.load_all()
    if isinstance(bug_names, str):
        rx = re.compile(bug_names)
        names: list[str] | None = [n for n in registry.names() if rx.search(n)]
    else:
        names = None if bug_names is None else list(bug_names)
        unknown = [n for n in names or [] if n not in registry]
        if unknown:
            raise ValueError(f"unknown bug(s) {unknown}")
    zoo = _models(models)
    check_names = [c.name for c in select_checks(checks)]
    clean: dict[str, ModelRun] = {}
    for m in zoo:
        if on_step is not None:
            on_step("(clean)", m.name)
        clean[m.name] = clean_run(m, checks=checks, seed=seed)
    engine, other = engine_bugs(names, set().union(*(r.reached for r in clean.values())))
    rows: list[BugRow] = []
    for bug in engine:
        t0 = time.perf_counter()
        reach = sorted((m for m in zoo if bug.name in clean[m.name].reached),
                       key=lambda m: clean[m.name].seconds)
        row = BugRow(bug, UNREACHED, reached_by=[m.name for m in reach])
        if reach:
            row.outcome = UNFLAGGED
        for m in reach:
            if on_step is not None:
                on_step(bug.name, m.name)
            with bugs.plant(bug.name):
                planted, _ = run_model(m, checks=checks, seed=seed)
            if planted.error is not None:
                row.crashed[m.name] = planted.error
            elif planted.crashed_checks:
                row.crashed[m.name] = "checks raised: " + ", ".join(planted.crashed_checks)
            new = newly_flagged(clean[m.name], planted)
            if new:
                row.flagged_by[m.name] = new
                crash = [c for c in new if c in planted.crashed_checks]
                if crash:
                    row.crash_flags[m.name] = crash
                row.outcome = FLAGGED
                if first_flag:
                    break
        if row.outcome == UNFLAGGED and bug.name in INVISIBLE_BUGS:
            row.outcome = INVISIBLE
        row.seconds = time.perf_counter() - t0
        rows.append(row)
    rows.extend(BugRow(b, NOT_IN_ENGINE) for b in other)
    return DoctorMatrix(rows, clean, time.perf_counter() - start, check_names)


def matrix_lines(matrix: DoctorMatrix, *, width: int | None = None) -> list[str]:
    """The matrix as text: one line per bug (outcome, models reaching it, checks flagging it),
    then the summary."""
    rows = matrix.rows
    w = width or max([len(r.bug.name) for r in rows] + [3])
    lines = [f"{'bug':<{w}}  {'outcome':<17}  reach  flagged by (model: checks)"]
    for r in rows:
        if r.outcome == FLAGGED:
            mark = "; ".join(f"{m}: {', '.join(cs)}" for m, cs in r.flagged_by.items())
            if r.crash_only:
                mark += "  [only through probes that raised]"
        elif r.outcome == UNFLAGGED:
            mark = "NOT FLAGGED by any check on " + ", ".join(r.reached_by)
        elif r.outcome == INVISIBLE:
            mark = "invisible in outputs: " + INVISIBLE_BUGS[r.bug.name]
        elif r.outcome == UNREACHED:
            mark = "no zoo model reaches its site" + (
                f" ({UNREACHED_WHY[r.bug.name]})" if r.bug.name in UNREACHED_WHY else "")
        else:
            mark = r.bug.module
        if r.crashed:
            mark += "  (crashed: " + "; ".join(f"{m}: {why}" for m, why in r.crashed.items()) + ")"
        lines.append(f"{r.bug.name:<{w}}  {r.outcome:<17}  {len(r.reached_by):>5}  {mark}")
    s = matrix.summary()
    reached = s[FLAGGED] + s[UNFLAGGED]
    lines.append(f"{s[FLAGGED]}/{reached} engine bugs the zoo reaches (and that can show in "
                 f"outputs) are flagged by {s['checks']} doctor checks on {s['models']} zoo "
                 f"models ({s[INVISIBLE]} invisible by construction, {s[UNREACHED]} engine bugs "
                 f"unreached, {s[NOT_IN_ENGINE]} not in the engine; {s['seconds']:.1f} s)")
    for model, flagged in s["clean_flags"].items():
        lines.append(f"note: clean {model} already flags {', '.join(flagged)} (not counted)")
    for name in s["crash_only_bugs"]:
        lines.append(f"note: {name} is flagged only by probes that raise under it")
    for name in s["unflagged_bugs"]:
        lines.append(f"NOT FLAGGED {name}: reached by the zoo, no doctor check flags it")
    return lines
