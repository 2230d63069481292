"""``tmath doctor`` on a policy folder: the checks that apply to a policy's transformer trunk.

A policy folder is recognised by its ``config.json`` (:func:`policy_folder_kind`):

- the project's own (``save_pretrained`` in ``robotics/policies/base.py``): ``"type"`` one of
  the project's policy types (``act``, ``act_lerobot``, ``vla``, ...) and no ``model_type``;
- a LeRobot ACT folder (``lerobot/policies/act``, read by ``robotics/policies/
  lerobot_act_adapter.py``): ``"type": "act"`` with LeRobot's names (``dim_model``,
  ``n_heads``).

Static checks read ``config.json`` only (nothing is allocated, a config the loader refuses is
still judged); dynamic checks load the policy (the project's loader or the LeRobot adapter) and
run it on synthetic observations drawn from a seeded generator (no global RNG): normalised
states z ~ N(0, 1) given in the policy's units (z * std + mean), camera images U(0, 1),
random lower-case instructions for a VLA.

Checks (name: what is measured; severity when beyond the threshold):

- ``policy.config`` (static): the head width ``dim / num_heads`` is an integer,
  ``1 <= n_action_steps <= chunk_size``, ``n_action_steps = 1`` under temporal ensembling
  (LeRobot raises otherwise), LeRobot's ``n_obs_steps = 1``: ERROR otherwise.
- ``policy.ensembling`` (static): the temporal-ensembling coefficient against ACT's definition
  (Zhao et al. 2023, "Temporal Ensemble"; the released ``imitate_episodes.py`` and
  LeRobot's ``ACTTemporalEnsembler``; the seed's formula at 000:1269, w_j = exp(-beta j) with j
  the age, is the newest-first variant, see ``robotics/policies/ensembling.py``): the n
  predictions for one step, ordered OLDEST first, i = 0 .. n - 1, are averaged with
  w_i = exp(-m i) / sum_j exp(-m j), m >= 0 (ACT: 0.01), so the oldest prediction weighs most.
  ERROR for m < 0 (the newest then weighs most, and the ratio of newest to oldest grows
  as exp(|m| (k - 1))) or a non-finite m; INFO for the
  project's ``newest_first`` order (the seed's variant w = exp(-m * age), not ACT's).
- ``policy.executor`` (dynamic): the executor the loaded policy runs, driven by the doctor with
  synthetic chunks and compared with the definition written here (never imported from the
  library): an ensembler's executed weights, read with a one-hot probe (k episodes in
  lockstep; the chunk issued at step s is 1 in episode s and 0 elsewhere, so the action
  executed at step t in episode s IS the weight given to the prediction issued at s), against
  exp(-m i) / Z for every number of predictions 1 .. k; a receding-horizon queue's actions
  against a_t = c_q[t - q] with the chunk c_q queried at q = n_action_steps * floor(t /
  n_action_steps). ERROR beyond float32 rounding (1e-5).
- ``attention.saturation`` (dynamic, project ACT, LeRobot ACT, VLA): the statistics and
  thresholds of the language-model check (``doctor/attention_probes.py``: per head the
  row-wise logit spread, max weight, normalised entropy, softmax-Jacobian norm and positional
  concentration; a head is saturated when sharp, not positional and its Jacobian norm is below
  0.03) on every attention of the trunk that has rows with 4 or more allowed keys; WARNING when
  more than half of the sampled heads are saturated, INFO when more than half are sharp.
- ``attention.mask-coverage`` (dynamic, same policies): the weights as the attention backend
  returns them are zero on every forbidden key, reach every allowed key in some head and layer
  of the stack, and sum to 1 (ERROR otherwise; the tolerances of the language-model check).
  The allowed keys are written here from the papers: ACT's encoders and decoder are
  bidirectional (every key allowed), its posterior encoder does not attend to padded action
  steps (``action_is_pad``; the probe pads the last quarter of the chunk); the VLA's prefix-LM
  mask (pi0, Black et al. 2024 §3): prefix queries see the prefix only, the state token the
  prefix and itself, the action tokens everything.
- ``policy.chunk-horizon`` (static, needs ``fps``): the chunk's horizon k / fps in seconds
  against a bound (default :data:`CHUNK_BOUND_S`, 2 s: the seed's "约 1-2 秒动作" sweet spot
  on ALOHA, 000:1265, and ACT's k = 100 at 50 Hz);
  WARNING above it (the last actions of a chunk were predicted that long before they run).
- ``policy.chunk-latency`` (dynamic unless ``latency`` is given): the inference latency (the
  median of timed ``predict_action_chunk`` calls on one observation, after one warm-up call)
  against the chunk horizon k / fps (WARNING when shorter: the chunk runs out before the next
  one is computed, whatever the scheduling) and against the query period n_action_steps / fps
  (1 / fps under ensembling; WARNING when shorter: a synchronous control loop stalls).

Every finding says what it sampled (``details["sampled"]`` and the summary). ``budget``
(seconds): checks are planned by cost in calls of ``predict_action_chunk`` (timed once), the
ones that do not fit are skipped with the reason, as in ``doctor/budget.py``.
"""

from __future__ import annotations

import copy
import fnmatch
import math
import re
import statistics
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from transformer_math.doctor.checks import DYNAMIC, STATIC, Check, NotApplicable
from transformer_math.doctor.findings import Diagnosis, Finding, Severity, judged
from transformer_math.registry import Registry

PROJECT, LEROBOT = "project", "lerobot"
CONFIG_NAME = "config.json"
MAX_CONFIG_BYTES = 2**20

ACT_DECAY = 0.01
"""ACT's temporal-ensembling coefficient m (Zhao et al. 2023; LeRobot's default)."""
CHUNK_BOUND_S = 2.0
"""Default longest chunk horizon k / fps in seconds: the upper end of the seed's sweet spot,
000:1265 "\\(k\\approx 90\\)（约 1-2 秒动作）是 ALOHA 任务上的经验甜点，"
"但不同任务的最优 \\(k\\) 不同，取决于扰动频率", and ACT's own setting, k = 100 actions at
50 Hz (Zhao et al. 2023). The seed's qualifier (the best k depends on the task's
disturbances) is why a longer chunk is a WARNING with the bound stated, never an error,
and ``--chunk-bound`` moves it."""
EXECUTOR_TOL = 1e-5
"""policy.executor: max |executed - reference| (relative to the largest reference value)."""
LATENCY_CALLS = 5
"""Timed ``predict_action_chunk`` calls of policy.chunk-latency (after one warm-up call)."""
COST_CALLS = {"attention.saturation": 4.0, "attention.mask-coverage": 1.0,
              "policy.executor": 0.0, "policy.chunk-latency": float(LATENCY_CALLS)}
"""Estimated cost of each dynamic check in ``predict_action_chunk`` calls (batch 1)."""
VALUE_ORDER = ("policy.executor", "attention.mask-coverage", "attention.saturation",
               "policy.chunk-latency")
"""Dynamic checks by value under a budget (the cheapest and most decisive first)."""
SOURCE_ENSEMBLE = ("Zhao et al. 2023 (ACT) temporal ensemble: w_i = exp(-m i), w_0 the oldest "
                   "action, m = 0.01; LeRobot ACTTemporalEnsembler; 000:1269 writes the "
                   "newest-first form w_j = exp(-beta j), j the age")
SOURCE_CHUNK = ("Zhao et al. 2023 (ACT) action chunking, k = 100 at 50 Hz; 000:1265 (k ~ 90, "
                "about 1-2 s of actions, on ALOHA; the best k depends on the task), 000 §8.3.8 "
                "(chunks as receding-horizon control)")
SOURCE_MASKS = ("000 §8.3.1 (masks added before the softmax); ACT posterior: padded steps "
                "masked as keys (LeRobot modeling_act.py); pi0 prefix-LM mask (Black et al. "
                "2024 §3)")

POLICY_CHECKS: Registry[Check] = Registry("policy doctor check")


def register_policy_check(name: str, *, kind: str, source: str = ""
                          ) -> Callable[[Callable[[PolicySubject], list[Finding]]],
                                        Callable[[PolicySubject], list[Finding]]]:
    """Decorator: register ``fn`` as the policy check ``name``."""
    def decorate(fn: Callable[[PolicySubject], list[Finding]]
                 ) -> Callable[[PolicySubject], list[Finding]]:
        doc = (fn.__doc__ or "").strip().splitlines()
        POLICY_CHECKS.add(name, Check(name, kind, fn, (), (), source,  # type: ignore[arg-type]
                                      doc[0] if doc else ""))
        return fn

    return decorate


# ----------------------------------------------------------------------------------- subject
@dataclass(frozen=True)
class PolicyOptions:
    """What the user tells the doctor about the deployment.

    ``fps``: the control rate in Hz (chunk horizons in seconds need it); ``latency``: the
    inference latency in seconds (default: measured here); ``chunk_bound``: the longest chunk
    horizon in seconds; ``seed``: every synthetic input is drawn from a generator seeded with
    it; ``batch``: observations per attention probe."""

    fps: float | None = None
    latency: float | None = None
    chunk_bound: float = CHUNK_BOUND_S
    seed: int = 0
    batch: int = 2

    def __post_init__(self) -> None:
        for name in ("fps", "latency", "chunk_bound"):
            value = getattr(self, name)
            if value is None and name != "chunk_bound":
                continue
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not 0 < value < math.inf):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or not (
                1 <= self.batch <= 64):
            raise ValueError(f"batch must be an integer in [1, 64], got {self.batch!r}")


@dataclass
class PolicySubject:
    """What a policy check examines: the folder, its raw ``config.json``, the loaded policy
    (None in a static run or when it does not load: ``load_error`` says why)."""

    path: Path
    folder_kind: str
    raw: Mapping[str, Any]
    options: PolicyOptions = field(default_factory=PolicyOptions)
    policy: Any = None
    load_error: str | None = None
    scratch: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_type(self) -> str:
        """``act``, ``vla``, ... for a project folder; ``act_lerobot`` for a LeRobot one."""
        return "act_lerobot" if self.folder_kind == LEROBOT else str(self.raw.get("type"))

    def generator(self, salt: str) -> torch.Generator:
        """A CPU generator seeded from ``options.seed`` and ``salt`` (as ``Subject``)."""
        g = torch.Generator()
        g.manual_seed(self.options.seed * 1_000_003 + zlib.crc32(salt.encode()))
        return g

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        store = self.scratch.setdefault("cache", {})
        if key not in store:
            store[key] = compute()
        return store[key]

    def need_policy(self) -> Any:
        if self.policy is None:
            raise NotApplicable(f"the policy is not loaded ({self.load_error or 'static run'})")
        return self.policy


def read_policy_config(path: Path) -> dict[str, Any] | None:
    """``path/config.json`` as a dict, or None when it is missing, too big or not JSON."""
    import json

    config = path / CONFIG_NAME
    try:
        if not config.is_file() or config.stat().st_size > MAX_CONFIG_BYTES:
            return None
        raw = json.loads(config.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return raw if isinstance(raw, dict) else None


def policy_folder_kind(path: str | Path) -> str | None:
    """``"project"``, ``"lerobot"`` or None (not a policy folder: a language-model checkpoint,
    or neither) from ``config.json`` (module docstring)."""
    from transformer_math.robotics.policies.base import POLICY_TYPES

    path = Path(path)
    if not path.is_dir():
        return None
    raw = read_policy_config(path)
    if raw is None or "model_type" in raw or not isinstance(raw.get("type"), str):
        return None
    if raw["type"] == "act" and ("dim_model" in raw or "n_heads" in raw):
        return LEROBOT
    if raw["type"] in POLICY_TYPES:
        return PROJECT
    return None


def unknown_policy_type(path: str | Path) -> str | None:
    """The ``type`` of a ``config.json`` that names neither a known policy nor a Hugging Face
    model (no ``model_type``), else None: such a folder is neither kind."""
    raw = read_policy_config(Path(path))
    if raw is None or "model_type" in raw or not isinstance(raw.get("type"), str):
        return None
    return None if policy_folder_kind(path) is not None else raw["type"]


def policy_subject(path: str | Path, options: PolicyOptions, *,
                   static_only: bool = False) -> PolicySubject:
    """The subject of the policy folder ``path``; the policy is loaded unless ``static_only``
    (a refusal of the loader becomes ``load_error``). ValueError for a folder that is not a
    policy folder."""
    path = Path(path)
    kind = policy_folder_kind(path)
    if kind is None:
        raise ValueError(f"{str(path)!r} is not a policy folder (config.json with a policy "
                         "'type': the project's, or LeRobot's ACT)")
    subject = PolicySubject(path, kind, read_policy_config(path) or {}, options)
    if static_only:
        return subject
    try:
        if kind == LEROBOT:
            from transformer_math.robotics.policies.lerobot_act_adapter import read_lerobot_act

            subject.policy = read_lerobot_act(path)
        else:
            from transformer_math.robotics.policies.base import load_policy

            subject.policy = load_policy(path)
    except (ValueError, ImportError, TypeError) as exc:
        subject.load_error = str(exc)
    if subject.policy is not None:
        subject.policy.eval()
    return subject


# ----------------------------------------------------------------------------- config values
def _number(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _sizes(subject: PolicySubject) -> dict[str, Any]:
    """chunk size, n_action_steps, ensembling coefficient and order, width and heads as the
    raw config states them (None where absent or not a number)."""
    raw = subject.raw
    lerobot = subject.folder_kind == LEROBOT
    coeff = raw.get("temporal_ensemble_coeff")
    return {
        "chunk_size": _number(raw, "chunk_size"),
        "n_action_steps": _number(raw, "n_action_steps"),
        "coeff": coeff,
        "order": ("oldest_first" if coeff is not None else None) if lerobot
        else raw.get("temporal_ensemble_order"),
        "dim": _number(raw, "dim_model" if lerobot else "dim"),
        "heads": _number(raw, "n_heads" if lerobot else "num_heads"),
    }


def act_weights(n: int, decay: float) -> list[float]:
    """ACT's normalised weights of n predictions ordered oldest first: exp(-m i) / Z (module
    docstring), computed in float64 with the largest exponent shifted to 0 (no overflow for
    a negative m)."""
    exps = [-decay * i for i in range(n)]
    top = max(exps)
    w = [math.exp(e - top) for e in exps]
    z = sum(w)
    return [x / z for x in w]


# ---------------------------------------------------------------------------- static checks
@register_policy_check("policy.config", kind=STATIC,
                       source="ACT / LeRobot ACTConfig; 000 §8.3.1 (head width d / H)")
def check_config(subject: PolicySubject) -> list[Finding]:
    """Static config checks: head width, n_action_steps against the chunk size and ensembling."""
    sizes = _sizes(subject)
    k, steps, dim, heads = (sizes[n] for n in ("chunk_size", "n_action_steps", "dim", "heads"))
    sampled = {"sampled": f"{CONFIG_NAME} ({subject.folder_kind} folder)"}
    out = []
    if dim is not None and heads is not None and heads > 0:
        rest = dim % heads
        out.append(judged(
            "policy.config", float(rest), 0.0, "above", bad=Severity.ERROR,
            summary=f"width {dim:g} over {heads:g} heads leaves {rest:g} (head width "
                    f"{dim / heads:g})", subject="head width",
            meaning="the heads cannot split the width evenly: the policy cannot be built",
            fix="choose num_heads dividing the width", source=SOURCE_CHUNK, details=sampled))
    if k is not None and steps is not None:
        over = max(steps - k, 1 - steps)
        out.append(judged(
            "policy.config", over, 0.0, "above", bad=Severity.ERROR,
            summary=f"n_action_steps {steps:g} of a chunk of {k:g} actions",
            subject="n_action_steps",
            meaning="the executor would run past the chunk (or execute nothing)",
            fix="set 1 <= n_action_steps <= chunk_size", source=SOURCE_CHUNK, details=sampled))
        if sizes["coeff"] is not None:
            out.append(judged(
                "policy.config", abs(steps - 1), 0.0, "above", bad=Severity.ERROR,
                summary=f"temporal ensembling with n_action_steps {steps:g} (must be 1)",
                subject="ensembling steps",
                meaning="an ensemble needs a query at every control step; LeRobot raises "
                        "NotImplementedError otherwise",
                fix="set n_action_steps = 1 or temporal_ensemble_coeff = null",
                source=SOURCE_ENSEMBLE, details=sampled))
    if subject.folder_kind == LEROBOT:
        obs = _number(subject.raw, "n_obs_steps")
        if obs is not None:
            out.append(judged(
                "policy.config", abs(obs - 1), 0.0, "above", bad=Severity.ERROR,
                summary=f"n_obs_steps {obs:g} (LeRobot's ACT takes 1)", subject="n_obs_steps",
                meaning="ACT conditions on the current observation only",
                fix="set n_obs_steps = 1", source="LeRobot ACTConfig", details=sampled))
    if not out:
        raise NotApplicable("config.json states none of chunk_size, n_action_steps, the width "
                            "and the heads")
    return out


@register_policy_check("policy.ensembling", kind=STATIC, source=SOURCE_ENSEMBLE)
def check_ensembling(subject: PolicySubject) -> list[Finding]:
    """Temporal-ensembling coefficient and order against ACT's w_i = exp(-m i), i = 0 oldest."""
    sizes = _sizes(subject)
    coeff, order, k = sizes["coeff"], sizes["order"], sizes["chunk_size"]
    if coeff is None:
        raise NotApplicable("no temporal ensembling (temporal_ensemble_coeff null: the chunks "
                            "run as a receding-horizon queue)")
    sampled = {"sampled": f"{CONFIG_NAME} temporal_ensemble_coeff"
                          + (" and temporal_ensemble_order" if subject.folder_kind == PROJECT
                             else " (LeRobot: oldest first)")}
    if isinstance(coeff, bool) or not isinstance(coeff, int | float) or not math.isfinite(coeff):
        return [Finding("policy.ensembling", Severity.ERROR,
                        f"temporal_ensemble_coeff is {coeff!r}, not a finite number",
                        subject="coefficient", meaning="no ensemble weights can be formed",
                        fix=f"set temporal_ensemble_coeff = {ACT_DECAY} (ACT's) or null",
                        source=SOURCE_ENSEMBLE, details=sampled)]
    m = float(coeff)
    n = int(k) if k is not None and k >= 1 else 1
    w = act_weights(n, m)
    n_eff = 1.0 / sum(x * x for x in w)
    details = {**sampled, "weights_oldest_first": w, "effective_predictions": n_eff,
               "chunk_size": n}
    findings = [judged(
        "policy.ensembling", m, 0.0, "below", bad=Severity.ERROR,
        summary=(f"m = {m:g}: over the k = {n} predictions of a step w_oldest = {w[0]:.3g}, "
                 f"w_newest = {w[-1]:.3g} (ACT: m >= 0, the oldest weighs most; "
                 f"{n_eff:.3g} effective predictions)"),
        subject="coefficient",
        meaning=("a negative m reverses ACT's weighting: the newest prediction weighs most, by "
                 f"exp(|m| (k - 1)) = {math.exp(min(abs(m) * (n - 1), 700.0)):.3g} over the "
                 "oldest; the ensemble no longer smooths toward the committed plan"),
        fix=f"m >= 0 (ACT's m = {ACT_DECAY}); for newest-first weights the project's "
            "temporal_ensemble_order 'newest_first' with m >= 0 says so explicitly",
        source=SOURCE_ENSEMBLE, details=details)]
    if subject.folder_kind == PROJECT:
        if order not in ("oldest_first", "newest_first"):
            findings.append(Finding(
                "policy.ensembling", Severity.ERROR,
                f"temporal_ensemble_order is {order!r}", subject="order",
                meaning="the project's executor knows 'oldest_first' (ACT) and 'newest_first'",
                fix="set temporal_ensemble_order = 'oldest_first'", source=SOURCE_ENSEMBLE,
                details=sampled))
        elif order == "newest_first":
            findings.append(Finding(
                "policy.ensembling", Severity.INFO,
                "temporal_ensemble_order 'newest_first': w = exp(-m * age), the newest weighs "
                "most (the seed's variant, not ACT's definition)", subject="order",
                meaning="a deliberate choice of the project's executor; ACT's released code and "
                        "LeRobot weigh the oldest most",
                fix="'oldest_first' for ACT's ensemble", source=SOURCE_ENSEMBLE,
                details=sampled))
    return findings


@register_policy_check("policy.chunk-horizon", kind=STATIC, source=SOURCE_CHUNK)
def check_chunk_horizon(subject: PolicySubject) -> list[Finding]:
    """Chunk horizon k / fps in seconds against the stated bound."""
    fps = subject.options.fps
    sizes = _sizes(subject)
    k, steps = sizes["chunk_size"], sizes["n_action_steps"]
    if fps is None:
        raise NotApplicable("needs the control rate (--fps)")
    if k is None:
        raise NotApplicable("config.json states no chunk_size")
    horizon = k / fps
    bound = subject.options.chunk_bound
    period = (1 if sizes["coeff"] is not None else (steps or k)) / fps
    return [judged(
        "policy.chunk-horizon", horizon, bound, "above", bad=Severity.WARNING,
        summary=(f"chunk of {k:g} actions at {fps:g} Hz lasts {horizon:.3g} s (bound "
                 f"{bound:g} s); the policy is queried every {period:.3g} s"),
        subject="chunk horizon",
        meaning=("the last actions of a chunk were predicted that long before they run, with "
                 "no feedback inside the chunk (000:1265: about 1-2 s of actions is the "
                 "sweet spot on ALOHA; the best k depends on the task's disturbances)"),
        fix="fewer actions per chunk, or execute fewer of them (n_action_steps) / ensemble",
        source=SOURCE_CHUNK,
        details={"sampled": f"{CONFIG_NAME} chunk_size and n_action_steps, --fps {fps:g}",
                 "horizon_s": horizon, "query_period_s": period, "bound_s": bound})]


# ------------------------------------------------------------------------- synthetic inputs
def observation(subject: PolicySubject, batch: int, salt: str) -> dict[str, Any]:
    """A synthetic observation batch for the loaded policy (module docstring)."""
    policy = subject.need_policy()
    g = subject.generator(salt)
    inputs, _ = type(policy).features(policy.config)
    out: dict[str, Any] = {}
    for key, spec in inputs.items():
        kind, shape = spec["type"], list(spec["shape"])
        if kind == "STATE":
            z = torch.randn(batch, *shape, generator=g)
            out[key] = z * policy.state_std.cpu() + policy.state_mean.cpu()
        elif kind == "ENV":
            z = torch.randn(batch, *shape, generator=g)
            out[key] = z * policy.env_state_std.cpu() + policy.env_state_mean.cpu()
        elif kind == "VISUAL":
            out[key] = torch.rand(batch, *shape, generator=g)
        elif kind == "LANGUAGE":
            letters = "abcdefghijklmnopqrstuvwxyz "
            n = max(1, shape[0] // 2)
            out[key] = ["".join(letters[int(i)] for i in torch.randint(0, len(letters), (n,),
                                                                     generator=g))
                        for _ in range(batch)]
        else:
            raise NotApplicable(f"input feature {key!r} of type {kind!r} has no synthetic probe")
    return out


# ----------------------------------------------------------------------- attention capture
@dataclass
class AttentionProbe:
    """One attention module's weights on the probe: ``weights`` (B, H, T, S) as the backend
    returns them, ``scores`` (B, H, T, S) or None, ``allowed`` (T, S) bool from the reference
    masks of the module docstring, ``group`` the stack it belongs to (layer index as ``*``)."""

    name: str
    group: str
    weights: Tensor
    scores: Tensor | None
    allowed: Tensor
    saturation_weights: Tensor


def _group(name: str) -> str:
    return re.sub(r"\.(layers|hooks)\.\d+(\.|$)", r".\1.*\2", name)


def _full(t: int, s: int) -> Tensor:
    return torch.ones(t, s, dtype=torch.bool)


def _padded_keys(pad: Tensor) -> Tensor:
    """(T, S) for the posterior over [CLS, state, a_1..a_k]: keys of padded steps forbidden
    (the probe pads the same steps in every batch row)."""
    keys = torch.cat([torch.ones(2, dtype=torch.bool), ~pad[0]])
    return keys[None, :].expand(keys.numel(), -1).clone()


def prefix_lm_allowed(prefix: int, chunk: int) -> Tensor:
    """(P + 1 + k, P + 1 + k) pi0's prefix-LM mask, written from the paper (module docstring):
    prefix queries see the prefix only, the state token the prefix and itself, the action
    tokens every token."""
    n = prefix + 1 + chunk
    allowed = torch.zeros(n, n, dtype=torch.bool)
    allowed[:prefix, :prefix] = True
    allowed[prefix, : prefix + 1] = True
    allowed[prefix + 1:, :] = True
    return allowed


def _run_trunk(subject: PolicySubject, policy: Any
               ) -> Callable[[str, int, int], Tensor] | None:
    """Run the policy's trunk once on the probe; returns the function giving a module's
    allowed-key reference by hook-module name (None when the type has no known trunk)."""
    kind = policy.kind
    b = subject.options.batch
    obs = subject.cached("policy:obs", lambda: observation(subject, b, "policy:attention"))
    g = subject.generator("policy:attention:actions")
    k, a_dim = policy.chunk_size, policy.action_dim
    actions = torch.randn(b, k, a_dim, generator=g)
    pad = torch.zeros(b, k, dtype=torch.bool)
    if k >= 4:
        pad[:, k - k // 4:] = True
    with torch.no_grad():
        s = policy._state(obs)
        if kind == "act":
            z = s.new_zeros(b, policy.config.latent_dim)
            policy.decode(s, z, policy._image_tokens(obs, b))
            if policy.config.use_latent:
                policy.encode(s, actions.to(s), pad)
            posterior = "posterior."
        elif kind == "act_lerobot":
            z = s.new_zeros(b, policy.config.latent_dim)
            policy.decode(s, z, policy._env_state(obs, b), policy._images(obs, b))
            if policy.config.use_vae:
                policy.encode(s, actions.to(s), pad)
            posterior = "vae_encoder."
        elif kind == "vla":
            prefix = policy.prefix_tokens(obs, b)
            suffix = policy.suffix_tokens(s, actions.to(s), s.new_zeros(b))
            policy.trunk(prefix, suffix)
            reference = prefix_lm_allowed(policy.config.prefix_len, k)
            return lambda name, t, s_len: reference
        else:
            return None

    def allowed(name: str, t: int, s_len: int) -> Tensor:
        return _padded_keys(pad) if name.startswith(posterior) else _full(t, s_len)

    return allowed


def attention_probes(subject: PolicySubject) -> list[AttentionProbe]:
    """Every attention of the trunk on the probe, two passes (as the language-model checks):
    listening to ``hook_scores`` (the module's own softmax of its logits: saturation) and to
    ``hook_pattern`` alone (the backend's weights: mask coverage)."""
    def compute() -> list[AttentionProbe]:
        from transformer_math.nn.hooks import hooks

        policy = subject.need_policy()
        if policy.kind not in ("act", "act_lerobot", "vla"):
            raise NotApplicable(f"no transformer trunk the doctor can probe in a "
                                f"{policy.kind!r} policy (act, act_lerobot, vla)")
        passes: list[dict[str, Tensor]] = []
        ref: Any = None
        for listen in (("*hook_scores", "*hook_pattern"), ("*hook_pattern",)):
            seen: dict[str, Tensor] = {}

            def store(t: Tensor, hook: Any, seen: dict[str, Tensor] = seen) -> None:
                seen.setdefault(hook.name, t.detach().float().cpu())

            with hooks(policy, {p: store for p in listen}):
                ref = _run_trunk(subject, policy)
            passes.append(seen)
        assert ref is not None
        scored, backend = passes
        probes = []
        for name in backend:
            if not name.endswith("hook_pattern"):
                continue
            module = name.rsplit(".", 1)[0]
            w = backend[name]
            t, s = w.shape[-2:]
            allowed = ref(module, t, s)
            if tuple(allowed.shape) != (t, s):
                raise ValueError(f"{module}: weights {tuple(w.shape)} do not match the "
                                 f"reference mask {tuple(allowed.shape)}")
            probes.append(AttentionProbe(module, _group(module), w,
                                         scored.get(f"{module}.hook_scores"), allowed,
                                         scored.get(name, w)))
        if not probes:
            raise NotApplicable("the trunk gave no attention pattern")
        return probes

    return subject.cached("policy:attention", compute)


def _sampled_text(probes: list[AttentionProbe], subject: PolicySubject) -> str:
    groups: dict[str, tuple[int, tuple[int, ...]]] = {}
    for p in probes:
        n, _ = groups.get(p.group, (0, ()))
        groups[p.group] = (n + 1, tuple(p.weights.shape[1:]))
    parts = [f"{g} ({n} layer{'s' if n > 1 else ''}, heads x queries x keys "
             f"{'x'.join(map(str, shape))})" for g, (n, shape) in groups.items()]
    return (f"{subject.options.batch} synthetic observations (seed {subject.options.seed}); "
            + "; ".join(parts))


@register_policy_check("attention.saturation", kind=DYNAMIC,
                       source="000:1665 (manual row 1), 000 §8.3.1; doctor/attention_probes.py")
def check_saturation(subject: PolicySubject) -> list[Finding]:
    """Softmax saturation per head of the trunk's attentions (the language-model statistics)."""
    from transformer_math.diagnostics.attention_stats import attention_entropy
    from transformer_math.doctor import attention_probes as ap

    probes = attention_probes(subject)
    rows_used = [p for p in probes if bool((p.allowed.sum(-1) >= 4).any())]
    if not rows_used:
        raise NotApplicable("no attention of the trunk has a query with 4 or more allowed keys")
    heads: list[dict[str, Any]] = []
    for p in rows_used:
        w = p.saturation_weights
        n = p.allowed.sum(-1)
        rows = n >= 4
        allowed = p.allowed.expand_as(w)
        logits = p.scores if p.scores is not None else ap.logits_from_weights(w)
        spread = ap._row_std(logits, allowed & torch.isfinite(logits))[:, :, rows]
        ent = (attention_entropy(w, dim=-1) / torch.log(n.clamp_min(2).float()))[:, :, rows]
        mx = w.amax(-1)[:, :, rows]
        jac = ap._softmax_jacobian_norm(w[:, :, rows])
        positional = ap._positional_concentration(w, rows)
        for h in range(w.shape[1]):
            heads.append({"attention": p.name, "head": h,
                          "logit_spread": float(spread[:, h].mean()),
                          "entropy": float(ent[:, h].mean()),
                          "max_weight": float(mx[:, h].mean()),
                          "jacobian_norm": float(jac[:, h].mean()),
                          "positional": positional[h]})
    sharp = [x for x in heads if x["max_weight"] > ap.SATURATED_MAX_WEIGHT]
    content = [x for x in sharp if x["positional"] <= ap.POSITIONAL_HEAD]
    saturated = [x for x in content if x["jacobian_norm"] < ap.SATURATED_JACOBIAN]
    fraction = len(saturated) / len(heads)
    skipped = sorted({p.group for p in probes} - {p.group for p in rows_used})
    sampled = _sampled_text(rows_used, subject)
    if skipped:
        sampled += f"; not sampled (fewer than 4 keys): {', '.join(skipped)}"
    finding = judged(
        "attention.saturation", fraction, ap.SATURATED_HEAD_FRACTION, "above",
        bad=Severity.WARNING,
        summary=(f"{len(saturated)} of {len(heads)} trunk heads saturated, {len(content)} "
                 f"sharp content heads; logit spread "
                 f"{min(x['logit_spread'] for x in heads):.3g}.."
                 f"{max(x['logit_spread'] for x in heads):.3g}, mean max weight up to "
                 f"{max(x['max_weight'] for x in heads):.3g} [sampled: {sampled}]"),
        meaning=("saturated heads put ~all weight on one key chosen by large logits: the "
                 "softmax Jacobian is ~0 and no gradient flows through them (manual row 1)"),
        fix="check the logit scale 1/sqrt(d_k) and the init of W_Q, W_K",
        source=ap.SOURCE_SATURATION,
        details={"sampled": sampled, "heads": heads,
                 "saturated": [(x["attention"], x["head"]) for x in saturated]})
    if finding.severity is Severity.OK and len(content) / len(heads) > ap.SATURATED_HEAD_FRACTION:
        finding = replace(finding, severity=Severity.INFO, meaning=(
            "most heads are sharp but still pass gradient: normal in a trained policy"))
    return [finding]


@register_policy_check("attention.mask-coverage", kind=DYNAMIC, source=SOURCE_MASKS)
def check_mask_coverage(subject: PolicySubject) -> list[Finding]:
    """The trunk's backend weights: zero on forbidden keys, every allowed key reached, rows
    summing to 1."""
    from transformer_math.doctor import attention_probes as ap

    probes = attention_probes(subject)
    forbidden = 0.0
    row_err = 0.0
    blocked: dict[str, int] = {}
    zero_by_group: dict[str, Tensor] = {}
    for p in probes:
        w = p.weights
        if not bool(torch.isfinite(w).all()):
            forbidden = row_err = math.inf
        elif bool((~p.allowed).any()):
            forbidden = max(forbidden, float(w[..., ~p.allowed].abs().max()))
        if math.isfinite(row_err):
            rows = p.allowed.any(-1)
            row_err = max(row_err, float((w.sum(-1) - 1)[..., rows].abs().max()))
        zero = (p.scores <= ap.BLOCKED_LOGIT) if p.scores is not None else (w == 0)
        cells = zero.all(dim=(0, 1)) & p.allowed
        prev = zero_by_group.get(p.group)
        zero_by_group[p.group] = cells if prev is None or prev.shape != cells.shape \
            else prev & cells
    for group, cells in zero_by_group.items():
        if int(cells.sum()):
            blocked[group] = int(cells.sum())
    total_blocked = sum(blocked.values())
    sampled = _sampled_text(probes, subject) + " (weights from the attention backend)"
    forbidden_where = sorted({p.group for p in probes if bool((~p.allowed).any())})
    details = {"sampled": sampled, "forbidden_max_weight": forbidden,
               "blocked_allowed_cells": blocked, "row_sum_max_error": row_err,
               "attentions_with_forbidden_keys": forbidden_where}
    findings = []
    if forbidden_where:
        findings.append(judged(
            "attention.mask-coverage", forbidden, ap.FORBIDDEN_TOL, "above", bad=Severity.ERROR,
            summary=f"largest weight on a forbidden key: {forbidden:.3g} (in "
                    f"{', '.join(forbidden_where)}) [sampled: {sampled}]",
            subject="forbidden keys",
            meaning="queries attend to keys the mask forbids (padded action steps, or the "
                    "suffix seen from the prefix)",
            fix="add the mask to the logits before the softmax (-inf where forbidden)",
            source=SOURCE_MASKS, details=details))
    findings.append(judged(
        "attention.mask-coverage", float(total_blocked), 0.0, "above", bad=Severity.ERROR,
        summary=(f"{total_blocked} allowed (query, key) cells get zero weight in every head and "
                 f"layer of their stack ({blocked or 'none'}) [sampled: {sampled}]"),
        subject="allowed keys",
        meaning="the mask blocks keys that must be visible (e.g. the state token, real action "
                "steps, the memory)",
        fix="check the padding mask's polarity (True = padded key) and the mask's comparison",
        source=SOURCE_MASKS, details=details))
    findings.append(judged(
        "attention.mask-coverage", row_err, ap.ROW_SUM_TOL, "above", bad=Severity.ERROR,
        summary=f"attention rows sum to 1 within {row_err:.3g} [sampled: {sampled}]",
        subject="row sums",
        meaning="the weights are not a softmax over the keys (normalised over the queries, or "
                "masked after the softmax without renormalising)",
        fix="softmax over the last (key) axis, after adding the mask",
        source=ap.SOURCE_SOFTMAX, details=details))
    return findings


# ------------------------------------------------------------------------------- executor
@register_policy_check("policy.executor", kind=DYNAMIC, source=SOURCE_ENSEMBLE)
def check_executor(subject: PolicySubject) -> list[Finding]:
    """The loaded executor against ACT's ensemble or the receding-horizon schedule."""
    from transformer_math.robotics.policies.ensembling import ChunkQueue, TemporalEnsembler

    policy = subject.need_policy()
    executor = getattr(policy, "executor", None)
    if not isinstance(executor, TemporalEnsembler | ChunkQueue):
        raise NotApplicable(f"the {policy.kind!r} policy has no chunk executor the doctor "
                            f"knows ({type(executor).__name__})")
    k, a_dim = policy.chunk_size, policy.action_dim
    if isinstance(executor, TemporalEnsembler):
        return _ensembler_finding(copy.deepcopy(executor), k, a_dim)
    return _queue_finding(subject, copy.deepcopy(executor), k, a_dim)


def _ensembler_finding(executor: Any, k: int, a_dim: int) -> list[Finding]:
    """One-hot probe (module docstring): k episodes, steps 0 .. k - 1."""
    executor.reset()
    decay, order = float(executor.decay), executor.order
    issued = [0]

    def chunk_fn(obs: Tensor) -> Tensor:
        s = issued[0]
        issued[0] += 1
        c = torch.zeros(k, k, a_dim)
        c[s] = 1.0  # the chunk issued at step s is 1 in episode s
        return c

    obs = torch.zeros(k, 1)
    worst, rows = 0.0, []
    for t in range(k):
        executed = executor(chunk_fn, obs)[:, 0].double()  # (k episodes,)
        got = executed[: t + 1].tolist()  # weight of the prediction issued at s = 0 .. t
        ref = act_weights(t + 1, decay) if order == "oldest_first" else \
            list(reversed(act_weights(t + 1, decay)))
        worst = max(worst, max(abs(a - b) for a, b in zip(got, ref, strict=True)),
                    float(executed[t + 1:].abs().max()) if t + 1 < k else 0.0)
        rows.append(got)
    executor.reset()
    last, ref_last = rows[-1], (act_weights(k, decay) if order == "oldest_first"
                                else list(reversed(act_weights(k, decay))))
    rel = worst / max(max(ref_last), 1e-30)
    sampled = (f"one-hot probe: {k} episodes in lockstep over {k} steps (the chunk issued at "
               f"step s is 1 in episode s), m = {decay:g}, order {order}")
    return [judged(
        "policy.executor", rel, EXECUTOR_TOL, "above", bad=Severity.ERROR,
        summary=(f"executed ensemble weights of the {k} predictions of a step (oldest first) "
                 f"{last[0]:.4g} .. {last[-1]:.4g}; the definition exp(-m i) / Z "
                 f"({order}): {ref_last[0]:.4g} .. {ref_last[-1]:.4g}; max |diff| "
                 f"{worst:.3g} [sampled: {sampled}]"),
        subject="temporal ensemble",
        meaning="the executor averages the predictions with other weights than it declares: "
                "a reversed order weighs the newest prediction most",
        fix="w_i = exp(-m i) / sum_j exp(-m j) with i = 0 the OLDEST prediction (ACT)",
        source=SOURCE_ENSEMBLE,
        details={"sampled": sampled, "executed_weights_oldest_first": last,
                 "reference_weights": ref_last, "max_abs_error": worst})]


def _queue_finding(subject: PolicySubject, executor: Any, k: int, a_dim: int
                   ) -> list[Finding]:
    """Random chunks through the queue against a_t = c_q[t - q]."""
    executor.reset()
    n = int(executor.n_action_steps)
    g = subject.generator("policy:executor")
    steps = 2 * k + 3
    chunks = [torch.randn(2, k, a_dim, generator=g) for _ in range(steps)]
    queried: list[int] = []
    step = [0]

    def chunk_fn(obs: Tensor) -> Tensor:
        queried.append(step[0])
        return chunks[len(queried) - 1]

    worst, scale = 0.0, 0.0
    obs = torch.zeros(2, 1)
    for t in range(steps):
        step[0] = t
        executed = executor(chunk_fn, obs)
        q = n * (t // n)  # the reference query step
        ref = chunks[t // n][:, t - q]
        worst = max(worst, float((executed - ref).abs().max()))
        scale = max(scale, float(ref.abs().max()))
    executor.reset()
    want = [n * i for i in range((steps - 1) // n + 1)]
    rel = worst / max(scale, 1e-30)
    sampled = (f"{steps} steps of 2 episodes with random chunks of {k} actions, "
               f"n_action_steps {n}")
    findings = [judged(
        "policy.executor", rel, EXECUTOR_TOL, "above", bad=Severity.ERROR,
        summary=(f"receding horizon: executed actions off a_t = c_q[t - q] by {rel:.3g} "
                 f"(relative); queried at steps {queried[:6]}{'...' if len(queried) > 6 else ''}"
                 f", expected every {n} [sampled: {sampled}]"),
        subject="action queue",
        meaning="the queue executes other actions than the chunk it holds (a frozen index, or "
                "a re-query every step that silently turns chunks into replanning)",
        fix="pop the queue one action per step and re-query only when n_action_steps ran",
        source=SOURCE_CHUNK,
        details={"sampled": sampled, "queried_at": queried, "expected_queries": want,
                 "max_abs_error": worst})]
    return findings


# -------------------------------------------------------------------------------- latency
def _latency(subject: PolicySubject, calls: int) -> tuple[float, str]:
    """(median seconds of ``calls`` timed predict_action_chunk calls on one observation after
    one warm-up call, what was sampled)."""
    policy = subject.need_policy()
    if not hasattr(policy, "predict_action_chunk"):
        raise NotApplicable(f"a {policy.kind!r} policy predicts no action chunks")
    obs = observation(subject, 1, "policy:latency")
    times = []
    with torch.no_grad():
        policy.predict_action_chunk(obs)
        for _ in range(max(1, calls)):
            start = time.perf_counter()
            policy.predict_action_chunk(obs)
            times.append(time.perf_counter() - start)
    device = next(iter(policy.parameters())).device
    return statistics.median(times), (
        f"median of {len(times)} predict_action_chunk calls (batch 1, after a warm-up call) on "
        f"{device.type}, {torch.get_num_threads()} torch thread(s)")


@register_policy_check("policy.chunk-latency", kind=DYNAMIC, source=SOURCE_CHUNK)
def check_chunk_latency(subject: PolicySubject) -> list[Finding]:
    """Inference latency against the chunk horizon and the query period."""
    options = subject.options
    if options.latency is not None:
        latency, how = options.latency, f"--latency {options.latency:g} s (stated)"
    else:
        latency, how = _latency(subject, int(subject.scratch.get("latency_calls",
                                                                 LATENCY_CALLS)))
    sizes = _sizes(subject)
    k, steps = sizes["chunk_size"], sizes["n_action_steps"]
    if options.fps is None:
        return [Finding("policy.chunk-latency", Severity.INFO,
                        f"inference latency {latency:.3g} s [sampled: {how}]; give --fps to "
                        "judge it against the chunk horizon", measured=latency,
                        subject="latency", source=SOURCE_CHUNK,
                        details={"sampled": how, "latency_s": latency})]
    if k is None:
        raise NotApplicable("config.json states no chunk_size")
    fps = options.fps
    horizon = k / fps
    period = (1 if sizes["coeff"] is not None else (steps or k)) / fps
    details = {"sampled": how, "latency_s": latency, "horizon_s": horizon,
               "query_period_s": period}
    return [
        judged("policy.chunk-latency", horizon, latency, "below", bad=Severity.WARNING,
               summary=(f"chunk horizon {horizon:.3g} s ({k:g} actions at {fps:g} Hz) vs "
                        f"inference latency {latency:.3g} s [sampled: {how}]"),
               subject="chunk vs latency",
               meaning="the chunk runs out before the next one is computed: the robot waits "
                       "(or repeats its last action) whatever the scheduling",
               fix="longer chunks, a faster model or device, or a lower control rate",
               source=SOURCE_CHUNK, details=details),
        judged("policy.chunk-latency", period, latency, "below", bad=Severity.WARNING,
               summary=(f"query period {period:.3g} s vs inference latency {latency:.3g} s"),
               subject="query period vs latency",
               meaning="a synchronous control loop (select_action inline) stalls at every "
                       "query; temporal ensembling queries every control step",
               fix="execute more actions per query (n_action_steps), run inference "
                   "asynchronously, or use a faster device",
               source=SOURCE_CHUNK, details=details),
    ]


# --------------------------------------------------------------------------------- running
def select_policy_checks(patterns: Iterable[str] | None = None, *,
                         static_only: bool = False) -> list[Check]:
    """The policy checks in registration order, filtered by glob ``patterns`` and kind."""
    pats = list(patterns or [])
    chosen = [POLICY_CHECKS[n] for n in POLICY_CHECKS.names()
              if not (static_only and POLICY_CHECKS[n].kind != STATIC)
              and (not pats or any(fnmatch.fnmatchcase(n, p) for p in pats))]
    if pats and not chosen:
        raise ValueError(f"checks {pats} match no policy doctor check; known: "
                         f"{', '.join(POLICY_CHECKS.names())}")
    return chosen


def run_policy_checks(subject: PolicySubject, checks: list[Check], *,
                      progress: Callable[[str], None] | None = None,
                      budget: float | None = None, already_spent: float = 0.0) -> Diagnosis:
    """Run ``checks`` on ``subject`` (as ``doctor.run_checks``: NotApplicable is a skip, any
    other exception an error finding). ``budget`` seconds: static checks first, then the
    dynamic ones by :data:`VALUE_ORDER`, each skipped when its estimated cost (calls of one
    timed ``predict_action_chunk``, :data:`COST_CALLS`) exceeds what is left."""
    started = time.perf_counter() - already_spent
    o = subject.options
    diagnosis = Diagnosis(str(subject.path), "static" if subject.policy is None else "policy",
                          options={"folder": subject.folder_kind, "type": subject.policy_type,
                                   "fps": o.fps, "latency": o.latency,
                                   "chunk_bound": o.chunk_bound, "seed": o.seed,
                                   "batch": o.batch})
    if subject.load_error is not None:
        diagnosis.findings.append(Finding(
            "policy.loads", Severity.ERROR,
            f"the policy cannot be loaded: {subject.load_error}",
            meaning="the dynamic checks cannot run; the static checks judge config.json",
            fix="correct the config or weights named in the message",
            source="issue 15 (checkpoints trust nothing); robotics/policies/files.py"))
    plan: dict[str, Any] | None = None
    if budget is not None:
        rank = {n: i for i, n in enumerate(VALUE_ORDER)}
        checks = ([c for c in checks if c.kind == STATIC]
                  + sorted((c for c in checks if c.kind == DYNAMIC),
                           key=lambda c: rank.get(c.name, len(rank))))
        plan = {"seconds": budget, "load_s": already_spent, "forward_s": None,
                "full_forward_s": None, "sampled": None, "skipped": []}
    for check in checks:
        if plan is not None and check.kind == DYNAMIC and subject.policy is not None:
            if plan["forward_s"] is None:
                plan["forward_s"] = _time_call(subject)
            left = plan["seconds"] - (time.perf_counter() - started)
            need = COST_CALLS.get(check.name, 1.0) * plan["forward_s"]
            if check.name == "policy.chunk-latency" and o.latency is None:
                fits = int(max(left, 0.0) / max(plan["forward_s"], 1e-9))
                subject.scratch["latency_calls"] = min(LATENCY_CALLS, fits)
                need = plan["forward_s"] * (1 if fits >= 1 else 2)
            if need > left:
                diagnosis.skipped[check.name] = (
                    f"budget: needs ~{need:.3g} s ({need / max(plan['forward_s'], 1e-12):.3g} "
                    f"predict_action_chunk calls of {plan['forward_s']:.3g} s), "
                    f"{max(left, 0.0):.3g} s left of {plan['seconds']:.3g} s")
                diagnosis.seconds[check.name] = 0.0
                plan["skipped"].append(check.name)
                continue
        if progress is not None:
            progress(check.name)
        start = time.perf_counter()
        try:
            found = check.run(subject)  # type: ignore[arg-type]
        except NotApplicable as why:
            diagnosis.skipped[check.name] = str(why)
        except Exception as exc:  # a failing probe is itself a finding
            diagnosis.findings.append(Finding(
                check.name, Severity.ERROR, f"the probe raised {type(exc).__name__}: {exc}",
                meaning="the policy fails on an input the check needs",
                fix="run the check's probe by hand (doctor/policy.py) to find the failure",
                source=check.source, details={"crashed": True}))
        else:
            diagnosis.findings.extend(found)
        diagnosis.seconds[check.name] = time.perf_counter() - start
    if plan is not None:
        plan["spent"] = round(time.perf_counter() - started, 3)
        diagnosis.budget = plan
    return diagnosis


def _time_call(subject: PolicySubject) -> float:
    """Seconds of one predict_action_chunk call on one synthetic observation (the first call:
    an overestimate, the safe side)."""
    policy = subject.policy
    if not hasattr(policy, "predict_action_chunk"):
        return 0.0  # no check calls the network of a policy without chunks
    obs = observation(subject, 1, "policy:budget")
    start = time.perf_counter()
    with torch.no_grad():
        policy.predict_action_chunk(obs)
    return time.perf_counter() - start


def examine_policy(path: str | Path, *, fps: float | None = None,
                   latency: float | None = None, chunk_bound: float = CHUNK_BOUND_S,
                   seed: int = 0, batch: int = 2, checks: Iterable[str] | None = None,
                   static_only: bool = False, budget: float | str | None = None,
                   progress: Callable[[str], None] | None = None) -> Diagnosis:
    """Diagnose the policy folder ``path`` (module docstring); arguments as the CLI's."""
    from transformer_math.doctor.budget import parse_budget

    seconds = None if budget is None else parse_budget(budget, "budget")
    options = PolicyOptions(fps=fps, latency=latency, chunk_bound=chunk_bound, seed=seed,
                            batch=batch)
    chosen = select_policy_checks(checks, static_only=static_only)
    loading = time.perf_counter()
    subject = policy_subject(path, options, static_only=static_only)
    return run_policy_checks(subject, chosen, progress=progress, budget=seconds,
                             already_spent=time.perf_counter() - loading)
