"""The chapter's six-step VLA design checklist, each step answered with a number and the claim
or calculator behind it (000:1344-1360, "贯穿全章的工程决策范例：从零设计一个机器人 VLA";
issue 20, item 2).

Scene (000:1348): two cameras + language + joint state in, continuous bimanual actions out;
D ~ 1e9 demonstration tokens over M ~ 800 tasks; an edge chip at F = 30 Hz. The six decision
points and the formula each one is answered with:

1. Representability (000:1350, §8.3.4): Yun et al. 2020, continuous sequence-to-sequence maps
   are approximable; the project checks the construction's pieces (one attention layer is a
   contextual mapping, Kajitsuka & Sato 2024; a ReLU FFN maps the codes to any targets) and the
   cost of accuracy (eps^(-d/s) units, DeVore, Howard & Micchelli 1989). Representability only.
2. Position code (000:1352, §8.3.2-3): without positions attention is permutation equivariant
   (Attn(P X) = P Attn(X)); RoPE makes <R_m q, R_n k> depend on n - m only (Su et al. 2021).
3. Model size (000:1354, §8.3.7): Chinchilla D/N ~ 20, N* = D / 20 (Hoffmann et al. 2022,
   Approach 1; Approach 3's fit via ``theory.scaling_laws.compute_optimal``); the inference-aware
   optimum (Sardana et al. 2024) minimises 6 N D_train + 2 N D_inf at the same loss
   (``theory.scaling_laws.inference_aware_optimum``), with D_inf = F x 3600 x hours x P tokens
   (P tokens per observation). Latency: the largest backbone of the family below whose prefill of
   the P observation tokens fits one control period 1/F (roofline, ``theory.latency``).
4. Depth and task diversity (000:1356, §8.3.6): induction heads need >= 2 layers (Olsson et al.
   2022); the task-diversity threshold M* (Raventos et al. 2023) is a linear-regression ICL
   quantity: M is compared with the numbers measured there, labelled as such.
5. Action decoder (000:1358, §8.3.8): per-query cost = backbone prefill of P tokens + decoder:
   K-step diffusion (K = 50) and flow matching (K = 10) as K forwards of an action network over
   the k chunk tokens attending to the cached prefix (``theory.latency.flow_chunk_cost``);
   autoregressive 256-bin tokens, one per action dimension and action, A k cached decode steps
   (``theory.latency.autoregressive_chunk_cost``); CVAE one forward over the k query tokens.
   Budget: 1/F (the executor of step 6 queries the policy every control step; without it a chunk
   computed asynchronously may take up to k/F, also reported).
6. Chunk size (000:1360, §8.3.8): the chapter's bound T^2 eps / k (``theory.compounding_error``
   .seed_chunked_bound; behaviour cloning T^2 eps, Ross & Bagnell 2010) against the disturbance
   exposure of open-loop execution. Two-term model of the chunking dilemma (this module, not a
   paper's): a disturbance arriving with probability lambda per step at a uniformly random step
   of a chunk waits (k - 1) / 2 steps on average for the next query, so
       J(k) = T^2 eps / k + lambda T (k - 1) / 2,   dJ/dk = 0  =>  k* = sqrt(2 T eps / lambda),
   rounded to the better neighbouring integer and clamped to [1, T].

Backbone family (an assumption of this module, stated in every output): GPT-style blocks with
width d = 64 L (L layers, L heads of width 64, MLP 4 d, GELU), i.e. the 768/12 aspect ratio of
BERT-base / ViT-B, N = 12 d^2 L = 49152 L^3 block weights; the action network of step 5 has the
backbone's shape (pi0's expert is smaller than its VLM: a pessimistic choice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from transformer_math.theory import latency as lm
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    seed_chunked_bound,
    substituted_bound,
)
from transformer_math.theory.scaling_laws import compute_optimal, inference_aware_optimum

SEED_LINES = "000:1344-1360"
TOKENS_PER_PARAM = 20.0
ASPECT = 64  # d / L, and the head width
AR_EXACT_STEPS = 4096  # more cached decode steps than this: a lower bound A k x first step
#: decoder claims being written by the lead (cited by id; they may not exist yet)
DECODER_CLAIMS = ("robotics.diffusion-decoder", "robotics.flow-matching-decoder",
                  "robotics.ar-bins-decoder", "robotics.decoder-steps")

#: Raventos et al. 2023 (FACTS.md): M* 2^11..2^14 for 8L/128/2H and 2^11..2^12 for 4L/64/2H
#: at 500k steps; the FACTS.md scaled-down prototype (2000 steps, D = 3/4): 2^3.3..2^3.7
PAPER_LOG2_M_STAR = (11.0, 14.0)
PROTOTYPE_LOG2_M_STAR = (3.3, 3.7)


@dataclass(frozen=True)
class DesignInputs:
    """What the designer fixes: data, tasks, control rate, horizon, hardware and assumptions."""

    tokens: float
    tasks: int
    hz: float
    horizon: int
    hardware: lm.Hardware
    prefix_tokens: int = 512  # observation tokens per query (architecture.vla-latency's N)
    action_dims: int = 14  # two 7-DoF arms (6 joints + gripper each)
    deploy_hours: float = 1000.0  # inference demand of step 3 (one robot, continuous use)
    eps: float = 0.01  # per-decision imitation error (the chapter's worked example)
    disturbance: float = 0.01  # lambda per step (robotics.chunking-tradeoff's push_prob)
    diffusion_steps: int = 50
    flow_steps: int = 10
    bins: int = 256

    def __post_init__(self) -> None:
        for name in ("tokens", "hz", "deploy_hours"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, int | float) or not (
                    math.isfinite(x) and x > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
        for name in ("tasks", "horizon", "prefix_tokens", "action_dims", "diffusion_steps",
                     "flow_steps", "bins"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise ValueError(f"{name} must be an int >= 1, got {x!r}")
        for name in ("eps", "disturbance"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, int | float) or not 0 < x <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {x!r}")

    @property
    def budget_s(self) -> float:
        """One control period 1/F."""
        return 1.0 / self.hz

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "tasks": self.tasks, "hz": self.hz,
                "horizon": self.horizon, "hardware": self.hardware.to_json(),
                "prefix_tokens": self.prefix_tokens, "action_dims": self.action_dims,
                "deploy_hours": self.deploy_hours, "eps": self.eps,
                "disturbance_per_step": self.disturbance,
                "diffusion_steps": self.diffusion_steps, "flow_steps": self.flow_steps,
                "bins": self.bins, "budget_ms": 1e3 * self.budget_s}


@dataclass(frozen=True)
class Step:
    """One decision point: the question, a numeric answer, its basis (claim ids or
    ``calculator: module.function``), what the chapter says and where the numbers differ."""

    step: int
    question: str
    answer: str
    basis: tuple[str, ...]
    chapter_says: str
    differs: str | None
    values: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "question": self.question, "answer": self.answer,
                "basis": list(self.basis), "chapter_says": self.chapter_says,
                "differs": self.differs, "values": self.values}


@dataclass(frozen=True)
class Design:
    inputs: DesignInputs
    steps: tuple[Step, ...]
    backbone: lm.ModelShape

    def to_json(self) -> dict[str, Any]:
        return {"seed_lines": SEED_LINES, "inputs": self.inputs.to_json(),
                "backbone": self.backbone.to_json(),
                "backbone_family": f"d = {ASPECT} L, L heads of width {ASPECT}, MLP 4 d, GELU "
                "(assumption)", "steps": [s.to_json() for s in self.steps]}


# ---------------------------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------------------------


def backbone_shape(layers: int, *, vocab: int = 0) -> lm.ModelShape:
    """The family's member with ``layers`` blocks: d = 64 L, L heads, MLP 4 d (12 d^2 L)."""
    return lm.ModelShape(hidden=ASPECT * layers, layers=layers, heads=layers, vocab=vocab)


def layers_for_params(params: float) -> int:
    """The L whose 49152 L^3 block weights are nearest to ``params`` in log (L >= 1)."""
    per = backbone_shape(1).weights()
    x = max(params, 1.0) / per
    lo = max(1, math.floor(x ** (1.0 / 3.0)))
    return min((lo, lo + 1), key=lambda L: abs(math.log(L**3 / x)))


def largest_backbone_layers(hw: lm.Hardware, budget_s: float, prefix: int,
                            high: int = 4096) -> int | None:
    """Largest L of the family whose prefill of ``prefix`` tokens fits ``budget_s``
    (``theory.latency.largest_fitting``); None when even L = 1 does not fit."""
    return lm.largest_fitting(lambda L: lm.prefill_cost(backbone_shape(L), hw, prefix).seconds,
                              budget_s, high=high)


def chunk_tradeoff(horizon: int, eps: float, disturbance: float, chunk: int) -> float:
    """J(k) = T^2 eps / k + lambda T (k - 1) / 2 (module docstring, step 6)."""
    return seed_chunked_bound(horizon, eps, chunk) + disturbance * horizon * (chunk - 1) / 2


def best_chunk(horizon: int, eps: float, disturbance: float) -> int:
    """argmin_k J(k) over the integers next to sqrt(2 T eps / lambda), clamped to [1, T]."""
    k = math.sqrt(2.0 * horizon * eps / disturbance)
    cands = {min(max(1, c), horizon) for c in (math.floor(k), math.ceil(k))}
    return min(sorted(cands), key=lambda c: chunk_tradeoff(horizon, eps, disturbance, c))


def decoder_costs(inp: DesignInputs, backbone: lm.ModelShape, chunk: int) -> dict[str, Any]:
    """Per-query roofline time (ms) of each decoder on top of the backbone prefill (step 5)."""
    hw, P = inp.hardware, inp.prefix_tokens
    prefill = lm.prefill_cost(backbone, hw, P, logits="none").seconds
    diffusion = lm.flow_chunk_cost(backbone, hw, prefix=P, chunk=chunk,
                                   steps=inp.diffusion_steps).seconds
    flow = lm.flow_chunk_cost(backbone, hw, prefix=P, chunk=chunk, steps=inp.flow_steps).seconds
    cvae = lm.flow_chunk_cost(backbone, hw, prefix=P, chunk=chunk, steps=1).seconds
    ar_shape = replace(backbone, vocab=inp.bins)

    def ar(k: int) -> tuple[float, bool]:
        steps = inp.action_dims * k
        if steps <= AR_EXACT_STEPS:
            return lm.autoregressive_chunk_cost(ar_shape, hw, prefix=P, action_dims=inp.action_dims,
                                                chunk=k, include_prefill=False).seconds, True
        return steps * lm.decode_cost(ar_shape, hw, P).seconds, False  # each step >= the first

    ar_k, exact_k = ar(chunk)
    ar_1, _ = ar(1)
    budget = inp.budget_s
    rows = {}
    for name, dec, what in (
            ("diffusion", diffusion, f"K = {inp.diffusion_steps} denoising forwards over "
             f"{chunk} action tokens"),
            ("flow", flow, f"K = {inp.flow_steps} flow-matching forwards over {chunk} tokens"),
            ("ar_bins", ar_k, f"{inp.action_dims} x {chunk} = {inp.action_dims * chunk} cached "
             f"decode steps, {inp.bins}-way logits" + ("" if exact_k else " (lower bound)")),
            ("ar_bins_k1", ar_1, f"{inp.action_dims} cached decode steps (one action)"),
            ("cvae", cvae, f"1 forward over {chunk} query tokens")):
        total = prefill + dec
        rows[name] = {"decoder_ms": 1e3 * dec, "total_ms": 1e3 * total, "what": what,
                      "fits_sync": total <= budget,
                      "fits_async": total <= budget * (1 if name == "ar_bins_k1" else chunk)}
    return {"prefill_ms": 1e3 * prefill, "budget_sync_ms": 1e3 * budget,
            "budget_async_ms": 1e3 * budget * chunk, "chunk": chunk, "decoders": rows}


def _claim_verdicts(results: dict[str, Any] | None, ids: tuple[str, ...]) -> dict[str, str]:
    if not results:
        return {}
    by = {c.get("id"): c for c in _claims(results)}
    return {i: str(by[i].get("verdict")) + (" (as expected)" if by[i].get("expected_met") is True
                                           else "") for i in ids if i in by}


def _claims(results: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The claim entries of a ``tmath verify --json`` document (malformed parts skipped)."""
    claims = results.get("claims") if isinstance(results, dict) else None
    return [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else []


def _measured(results: dict[str, Any] | None, cid: str) -> dict[str, Any] | None:
    return next((c for c in _claims(results) if c.get("id") == cid), None)


def _g(x: float) -> str:
    return f"{x:.3g}"


# ---------------------------------------------------------------------------------------------
# the six steps
# ---------------------------------------------------------------------------------------------


def design(inp: DesignInputs, results: dict[str, Any] | None = None) -> Design:
    """Answer the six decision points of 000:1344-1360 for ``inp`` (module docstring).

    ``results``: an optional ``tmath verify --json`` document; the verdicts of the basis claims
    and the measured numbers of the ICL and chunking claims are quoted from it when present.
    """
    T, F, hw, P = inp.horizon, inp.hz, inp.hardware, inp.prefix_tokens
    steps: list[Step] = []

    # 1. representability --------------------------------------------------------------------
    b1 = ("expressivity.contextual-mapping", "expressivity.ffn-lookup",
          "expressivity.component-ablation", "expressivity.no-position-equivariant",
          "expressivity.approximation-rate")
    steps.append(Step(
        1, "Can a Transformer represent the policy at all? (UAT, §8.3.4)",
        "yes for a continuous policy: 1 attention layer (with residual) is a contextual mapping "
        "and a 2-layer ReLU FFN maps its codes to any targets; representability only (no "
        "statement about data, size or training)",
        b1,
        "Yun et al.'s UAT: a continuous seq-to-seq map is approximable to any accuracy by a "
        "Transformer with positions, so representability is not the problem; representable != "
        "trainable != generalises",
        None,
        {"representable": True, "attention_layers_in_construction": 1,
         "claim_verdicts": _claim_verdicts(results, b1)}))

    # 2. position code ------------------------------------------------------------------------
    b2 = ("attention.permutation-equivariance", "expressivity.no-position-equivariant",
          "position.rope-relative", "position.rope-orthogonal", "position.axial-rope",
          "position.extrapolation-experiment")
    steps.append(Step(
        2, "Position code on the inputs, and which? (set vs sequence, §8.3.2-3)",
        f"1-D RoPE on the temporal tokens (T = {T} steps: relative, norm-preserving); none on "
        "a part that is a set (attention is then permutation equivariant); camera patches lie "
        "on a 2-D grid: axial 2-D RoPE keeps their layout",
        b2,
        "image patches: a set, permutation equivariance fits; time: order matters, use RoPE "
        "(relative, norm-preserving, can extrapolate to longer horizons)",
        "RoPE does not extrapolate by itself: position.extrapolation-experiment measures a RoPE "
        "model degrading beyond 2x its training length without fine-tuning (and a learned "
        "absolute table failing beyond it), so train on the horizons deployed; the chapter's "
        "'patches are a set' drops the image layout, which a 2-D (axial) RoPE keeps",
        {"temporal_positions": T, "patch_position_code": "none (set) or axial 2-D RoPE",
         "claim_verdicts": _claim_verdicts(results, b2)}))

    # 3. model size -----------------------------------------------------------------------------
    opt1 = compute_optimal(tokens=inp.tokens, approach="1")
    opt3 = compute_optimal(tokens=inp.tokens, approach="3")
    inf_tokens = F * 3600.0 * inp.deploy_hours * P
    try:
        ia: dict[str, Any] | None = inference_aware_optimum(opt3, inf_tokens).to_json()
    except ValueError as exc:
        ia = {"error": str(exc)}
    L_star = layers_for_params(opt1.params)
    chosen = backbone_shape(L_star)
    chosen_ms = lm.prefill_cost(chosen, hw, P).ms
    L_fit = largest_backbone_layers(hw, inp.budget_s, P)
    fit_params = backbone_shape(L_fit).weights() if L_fit else 0
    binds = "data (Chinchilla)" if L_fit is not None and L_fit >= L_star else "latency"
    lat = (f"the largest family member whose {P}-token prefill fits 1/F = "
           f"{1e3 * inp.budget_s:.3g} ms on {hw.name} has L = {L_fit} ({_g(fit_params)} weights)"
           if L_fit else f"no family member's {P}-token prefill fits 1/F = "
           f"{1e3 * inp.budget_s:.3g} ms on {hw.name}")
    ia_text = ("inference-aware optimum not computable here" if ia is None or "error" in ia
               else f"inference-aware (Sardana et al., {_g(inf_tokens)} inference tokens = "
               f"{F:g} Hz x {inp.deploy_hours:g} h x {P} tokens): N = {_g(ia['params'])} trained "
               f"on {_g(ia['tokens'])} tokens (D/N {ia['tokens_per_param']:.0f}), "
               f"{ia['tokens'] / inp.tokens:.3g}x the data available")
    differs3 = [
        "Octo's 93M is not in FACTS.md: not checked here",
        "with D fixed the inference-aware optimum is not the chapter's 'D/N in the thousands': "
        "at the same loss it trains a smaller model on MORE tokens than D (architecture."
        "chinchilla: no fixed ratio; N = D / 1800 on the same D is a different, worse model)",
    ]
    if ia is not None and "error" not in ia and ia["tokens"] > inp.tokens:
        differs3.append(f"here that needs {ia['tokens'] / inp.tokens:.3g}x the {_g(inp.tokens)} "
                        "tokens available (repeated data is outside the fit): with the data "
                        "fixed, a smaller model reaches a higher loss")
    if binds == "data (Chinchilla)":
        differs3.append(f"on {hw.name} the latency bound ({_g(fit_params)} weights) lies above "
                        f"N*: inference cost does not bind the backbone at {F:g} Hz; what it "
                        "binds is the decoder (step 5)")
    elif L_fit is None:
        differs3.append(f"on {hw.name} latency binds: not even the smallest family member "
                        f"(L = 1) prefills {P} tokens within 1/F")
    else:
        differs3.append(f"on {hw.name} latency binds: the backbone must stay at or below "
                        f"{_g(fit_params)} weights, below Chinchilla's N*")
    b3 = ("architecture.chinchilla", "architecture.vla-latency",
          "calculator: theory.scaling_laws.compute_optimal",
          "calculator: theory.scaling_laws.inference_aware_optimum",
          "calculator: theory.latency.largest_fitting")
    steps.append(Step(
        3, "How large a model? (Chinchilla + inference-optimal, §8.3.7)",
        f"N* = D/20 = {_g(opt1.params)} parameters (Approach 1; Approach 3: {_g(opt3.params)}, "
        f"D/N {opt3.tokens_per_param:.1f}); {ia_text}; latency: {lat}; binding: {binds}; "
        f"family member nearest N*: L = {L_star}, d = {chosen.hidden} ({_g(chosen.weights())} "
        f"weights, prefill {chosen_ms:.3g} ms)",
        b3,
        "D ~ 1e9 tokens and D/N ~ 20 give N* ~ 5e7; 30 Hz edge inference pushes (Sardana, D/N "
        "in the thousands) smaller; choose tens of millions to 1-2e8 parameters, as Octo (93M)",
        "; ".join(differs3),
        {"n_star_approach_1": opt1.params, "n_star_approach_3": opt3.params,
         "tokens_per_param_approach_3": opt3.tokens_per_param, "inference_tokens": inf_tokens,
         "inference_aware": ia, "latency_max_layers": L_fit, "latency_max_params": fit_params,
         "binding": binds, "chosen_layers": L_star, "chosen_hidden": chosen.hidden,
         "chosen_params": chosen.weights(), "chosen_prefill_ms": chosen_ms,
         "claim_verdicts": _claim_verdicts(results, b3[:2])}))

    # 4. depth and task diversity ---------------------------------------------------------------
    b4 = ("icl.induction-heads", "icl.induction-circuit", "icl.task-diversity-transition")
    log2_m = math.log2(inp.tasks)
    td = _measured(results, "icl.task-diversity-transition")
    measured_star: float | None = None
    if td is not None and isinstance(td.get("details"), dict):
        x = td["details"].get("log2_M_star_first_seed")
        if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
            measured_star = float(x)
    proj = (f"the project's run (--results): crossover M* = 2^{measured_star:.2f} "
            f"(first seed; M is {'above' if log2_m > measured_star else 'at or below'} it)"
            if measured_star is not None
            else "the project's claim decides memorisation at the smallest M and in-context "
            "regression at the largest M of its sweep, no M* (pass --results for its measured "
            "crossover)")
    side = ("above" if log2_m > PAPER_LOG2_M_STAR[1] else "below" if log2_m < PAPER_LOG2_M_STAR[0]
            else "inside")
    steps.append(Step(
        4, "Deep enough for few-shot, and enough task diversity? (induction heads + "
        "transition, §8.3.6)",
        f"depth >= 2 layers (the backbone of step 3 has {L_star}); M = {inp.tasks} = "
        f"2^{log2_m:.2f} tasks: {side} Raventos et al.'s M* = 2^11..2^14 (linear-regression "
        f"ICL, 500k steps); {proj}; FACTS.md's scaled-down prototype: 2^3.3..2^3.7",
        b4,
        "ICL runs on induction heads, a two-layer circuit: do not make the backbone too "
        "shallow; whether 800 tasks cross the diversity threshold M* decides real in-context "
        "learning vs task lookup",
        "M* is measured on linear-regression ICL and moves with model size and training "
        "length (2^11..2^14 at 500k steps in the paper, ~2^3.5 after 2000 steps at D = 4 in "
        "the scaled-down runs): none of these numbers is a threshold for robot tasks, so "
        f"whether M = {inp.tasks} suffices is not decided here",
        {"min_layers": 2, "backbone_layers": L_star, "log2_tasks": log2_m,
         "paper_log2_m_star": list(PAPER_LOG2_M_STAR),
         "prototype_log2_m_star": list(PROTOTYPE_LOG2_M_STAR),
         "project_log2_m_star": measured_star,
         "claim_verdicts": _claim_verdicts(results, b4)}))

    # 6 first (its k is step 5's chunk) -------------------------------------------------------
    k = best_chunk(T, inp.eps, inp.disturbance)
    bc = bc_regret_bound(T, inp.eps)

    # 5. action decoder -------------------------------------------------------------------------
    costs = decoder_costs(inp, chosen, k)
    dec = costs["decoders"]
    fits = [n for n in ("diffusion", "flow", "ar_bins", "cvae") if dec[n]["fits_sync"]]
    label = {"diffusion": f"diffusion K={inp.diffusion_steps}",
             "flow": f"flow K={inp.flow_steps}", "ar_bins": f"AR {inp.bins}-bin",
             "cvae": "CVAE"}
    parts = ", ".join(f"{label[n]} {dec[n]['total_ms']:.3g} ms" for n in label)
    multimodal = sorted((n for n in ("diffusion", "flow") if n in fits),
                        key=lambda n: dec[n]["total_ms"])  # the cheaper, the more headroom
    pick = (multimodal[0] if multimodal else "cvae" if "cvae" in fits else
            "ar_bins" if "ar_bins" in fits else None)
    b5 = (*DECODER_CLAIMS, "robotics.multimodal-actions", "robotics.cvae-zero-latent",
          "architecture.vla-latency", "calculator: theory.latency.flow_chunk_cost",
          "calculator: theory.latency.autoregressive_chunk_cost")
    steps.append(Step(
        5, "Which action decoder under the latency budget? (§8.3.8 paradigm table)",
        f"per query on {hw.name} (prefill {costs['prefill_ms']:.3g} ms + decoder, chunk k = "
        f"{k}, backbone-shaped action network): {parts}; budget 1/F = "
        f"{costs['budget_sync_ms']:.3g} ms (the policy is queried every step); fit: "
        f"{', '.join(label[n] for n in fits) or 'none'}; choose "
        f"{label[pick] if pick else 'none: a smaller backbone or a faster chip'}",
        b5,
        "multimodal actions: AR 256-bin mode-collapses, CVAE is a compromise, diffusion/flow "
        "are multimodal but slow; at 30 Hz pure diffusion (K ~ 50) may be too slow, flow "
        "matching (K ~ 10, pi0) or CVAE (one forward, ACT)",
        f"the roofline on {hw.name} ("
        f"{'a verified preset' if hw.verified else 'an UNVERIFIED preset'}; at peak throughput, "
        "so a lower bound on time) says which decoders fit instead of 'may be too slow': "
        + ", ".join(f"{label[n]} uses {dec[n]['total_ms'] / costs['budget_sync_ms']:.0%} "
                    "of 1/F" for n in label)
        + "; AR bins need one cached step per action dimension and action: "
        f"{dec['ar_bins_k1']['total_ms']:.3g} ms for one action, {dec['ar_bins']['total_ms']:.3g}"
        f" ms for a {k}-chunk; ACT deploys its CVAE with z = 0, which returns one chunk per "
        "observation and covers one mode (robotics.cvae-zero-latent): the 'compromise' needs z "
        "sampled; with asynchronous chunks (budget k/F = "
        f"{costs['budget_async_ms']:.4g} ms) "
        f"{', '.join(label[n] for n in label if dec[n]['fits_async']) or 'none'} fit; the "
        "project's decoder claims measure two table entries differently on its bimodal "
        "obstacle task: the 256-bin AR head sampled at temperature 1 keeps both modes "
        "(robotics.ar-bins-decoder: 'mode collapse' refuted; greedy decoding is what "
        "commits), and DDIM with K = 10 collides no more than with K = 50 "
        "(robotics.decoder-steps), so diffusion at K = 10 costs what flow K = 10 costs",
        {**costs, "choice": pick,
         "claim_verdicts": _claim_verdicts(results, b5[:7])}))

    # 6. chunk size and executor ----------------------------------------------------------------
    ct = _measured(results, "robotics.chunking-tradeoff")
    ct_text = ""
    if ct is not None and isinstance(ct.get("measured"), dict):
        m = ct["measured"]

        def mean(key: str) -> str:
            v = m.get(key)
            x = v.get("mean") if isinstance(v, dict) else None
            ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            return f"{x:.3g}" if ok else "?"

        ct_text = (f"; robotics.chunking-tradeoff (--results): success at k_max open loop "
                   f"{mean('success_open_loop_kmax')}, replan every step "
                   f"{mean('success_replan_kmax')}, ACT ensembling "
                   f"{mean('success_act_ensemble_kmax')}, newest-first ensembling "
                   f"{mean('success_newest_ensemble_kmax')}")
    b6 = ("robotics.compounding-error", "robotics.chunked-error-bound",
          "robotics.chunking-tradeoff", "robotics.temporal-ensembling",
          "robotics.paper-reports",
          "calculator: theory.compounding_error.seed_chunked_bound")
    vac = (f"T^2 eps = {bc:.4g} exceeds the largest cost T = {T}: the bound is vacuous at this "
           "horizon; " if bc > T else "")
    steps.append(Step(
        6, "Chunk size and executor against compounding error? (action chunking, §8.3.8)",
        f"k = {k} actions ({k / F:.3g} s at {F:g} Hz): argmin of J(k) = T^2 eps / k + lambda T "
        f"(k-1)/2 = {chunk_tradeoff(T, inp.eps, inp.disturbance, k):.4g} with T = {T}, eps = "
        f"{inp.eps:g}, lambda = {inp.disturbance:g}/step (k* = sqrt(2 T eps / lambda) = "
        f"{math.sqrt(2 * T * inp.eps / inp.disturbance):.3g}); T^2 eps = {bc:.4g} -> T^2 eps / "
        f"k = {seed_chunked_bound(T, inp.eps, k):.4g}; executor: query every step (T_a = 1) "
        "and ensemble the overlapping chunks",
        b6,
        "a long horizon (hundreds of steps) makes single-step error O(T^2 eps) compound; "
        "chunking lowers it to O(T^2 eps / k); k must not be too large (no replanning inside a "
        "chunk), the same trade-off as MPC's horizon; temporal ensembling smooths boundaries",
        f"{vac}T^2 eps / k assumes one error chance per chunk decision; with eps per executed "
        "action chunking gains nothing (robotics.chunked-error-bound), and the substitution "
        f"T -> T/k gives (T/k)^2 eps = {substituted_bound(T, inp.eps, k):.4g}; the measured "
        "error falls with k only while the chunk lies inside the observation's look-ahead "
        "(robotics.compounding-error); ACT's ensembling weighs the OLDEST prediction most "
        "(robotics.temporal-ensembling), which delays feedback, and whether it restores "
        "reactivity is measured beside newest-first weighting and replanning "
        f"(robotics.chunking-tradeoff){ct_text}; J(k) is this module's model, not a paper's",
        {"chunk": k, "chunk_seconds": k / F, "k_star_continuous":
         math.sqrt(2 * T * inp.eps / inp.disturbance),
         "objective": chunk_tradeoff(T, inp.eps, inp.disturbance, k),
         "bc_bound": bc, "chunked_bound": seed_chunked_bound(T, inp.eps, k),
         "substituted_bound": substituted_bound(T, inp.eps, k),
         "executor": "query every step, ensemble overlapping chunks",
         "claim_verdicts": _claim_verdicts(results, b6[:6])}))

    steps.sort(key=lambda s: s.step)
    return Design(inp, tuple(steps), chosen)


def claim_ids(d: Design) -> set[str]:
    """Every basis entry that names a claim (not a ``calculator:``)."""
    return {b for s in d.steps for b in s.basis if not b.startswith("calculator:")}
