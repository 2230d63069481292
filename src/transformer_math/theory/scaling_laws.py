"""Compute-optimal model size (Chinchilla) and the inference-aware optimum (Sardana et al.).

Math (000 §8.3.7 "理论 C"; Hoffmann et al. 2022, eqs. 2-4 and Table 3; FACTS.md "Scaling laws"):
    training compute   C = 6 N D          (N parameters, D training tokens),
    parametric loss    L(N, D) = E + A / N^alpha + B / D^beta.
Minimising L subject to C = 6 N D (Lagrange: alpha A N^-alpha = beta B D^-beta) gives
    N_opt(C) = G (C/6)^a,   D_opt(C) = G^-1 (C/6)^b,
    a = beta / (alpha + beta),  b = alpha / (alpha + beta),
    G = (alpha A / (beta B))^(1/(alpha+beta)).

Fits, chosen by name from :data:`SCALING_FITS` (one function of the same signature each, as in the
registry pattern of ARCHITECTURE.md):
- ``"3"``: Approach 3 (parametric fit): E 1.6934, A 406.401, B 410.7228, alpha 0.33917,
  beta 0.28491.
- ``"epoch"``: Besiroglu et al. 2024 replication: E 1.8172, A 482.01, B 2085.43, alpha 0.3478,
  beta 0.3658.
- ``"1"`` and ``"2"``: Approaches 1 and 2 report only power laws, N_opt = k C^a with (a, b) =
  (0.50, 0.50) and (0.49, 0.51). FACTS.md gives the exponents but not the prefactors, so Approach 1
  uses the paper's headline ratio of 20 tokens per parameter (D = 20 N, hence N = sqrt(C / 120));
  Approach 2 is anchored to coincide with Approach 1 at C0 = 1.21e20 FLOPs (the 1B row of
  Table 3) and then follows its own exponents. These two have no loss surface.

The cost model is one function, :func:`training_flops` (C = 6 N D; the planted bug
``scaling.training-cost-2nd`` makes it 2 N D), and :func:`numerical_compute_optimum` minimises a
loss surface along that budget line numerically (no closed form), so that the closed form above
can be checked against it (exercise 8.3.7-1).

Inference-aware optimum (Sardana et al. 2024, ICML, eq. 3): at the loss l reached by the
compute-optimal model, choose N (and the D_train that reaches l with it,
D_train(N) = (B / (l - E - A N^-alpha))^(1/beta)) to minimise training + inference FLOPs
    6 N D_train(N) + 2 N D_inference.
With D_inference = 0 this is the Chinchilla optimum; larger inference demand gives smaller models
trained on more tokens. It needs a loss surface (fits ``"3"`` or ``"epoch"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from transformer_math.bugs import declare_bug, planted

FLOPS_PER_PARAM_TOKEN = 6.0  # training: forward 2 N + backward 4 N per token (Kaplan et al. 2020)
INFERENCE_FLOPS_PER_PARAM_TOKEN = 2.0  # one forward pass

TRAINING_COST_2ND = declare_bug(
    "scaling.training-cost-2nd",
    "training compute counted as C = 2 N D (the forward pass only) instead of 6 N D",
    module=__name__,
    seen_in="mixing the inference cost 2 N per token with the training cost 6 N per token "
    "(Kaplan et al. 2020 §2.1 count both)",
)


INFERENCE_AWARE_FIXED_TOKENS = declare_bug(
    "scaling.inference-aware-fixed-tokens",
    "the inference-aware optimum keeps the compute-optimal model's training tokens D fixed "
    "while it shrinks N (instead of holding the loss fixed and retraining on D_train(N))",
    module=__name__,
    seen_in="dividing a fixed data budget by a larger tokens-per-parameter ratio (000:1152, "
    "N ~ D / 1800 at the same D) instead of Sardana et al.'s fixed-loss objective",
)


def training_flops_per_param_token() -> float:
    """FLOPs per parameter and training token: 2 (forward) + 4 (backward) = 6."""
    if planted(TRAINING_COST_2ND):  # planted bug: falsifier of architecture.chinchilla
        return INFERENCE_FLOPS_PER_PARAM_TOKEN
    return FLOPS_PER_PARAM_TOKEN


def training_flops(params: float, tokens: float) -> float:
    """C = 6 N D: the training compute of N parameters on D tokens."""
    return training_flops_per_param_token() * float(params) * float(tokens)


@dataclass(frozen=True)
class ParametricLoss:
    """L(N, D) = E + A / N^alpha + B / D^beta."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    def __call__(self, params: float, tokens: float) -> float:
        return self.E + self.A / params**self.alpha + self.B / tokens**self.beta

    def tokens_for_loss(self, params: float, loss: float) -> float:
        """D with L(N, D) = loss, or inf when N alone cannot reach it (E + A/N^alpha >= loss)."""
        gap = loss - self.E - self.A / params**self.alpha
        return math.inf if gap <= 0 else (self.B / gap) ** (1.0 / self.beta)


@dataclass(frozen=True)
class ScalingFit:
    """A compute-optimal frontier N_opt = G (C/6)^a, D_opt = (C/6)^b / G (a + b = 1)."""

    name: str
    a: float
    b: float
    G: float
    loss: ParametricLoss | None
    source: str

    def params_for_flops(self, flops: float) -> float:
        return self.G * (flops / FLOPS_PER_PARAM_TOKEN) ** self.a

    def tokens_for_flops(self, flops: float) -> float:
        return (flops / FLOPS_PER_PARAM_TOKEN) ** self.b / self.G

    def flops_for_params(self, params: float) -> float:
        return FLOPS_PER_PARAM_TOKEN * (params / self.G) ** (1.0 / self.a)

    def flops_for_tokens(self, tokens: float) -> float:
        return FLOPS_PER_PARAM_TOKEN * (tokens * self.G) ** (1.0 / self.b)


def _parametric_fit(name: str, loss: ParametricLoss, source: str) -> ScalingFit:
    s = loss.alpha + loss.beta
    G = (loss.alpha * loss.A / (loss.beta * loss.B)) ** (1.0 / s)
    return ScalingFit(name, loss.beta / s, loss.alpha / s, G, loss, source)


CHINCHILLA_LOSS = ParametricLoss(E=1.6934, A=406.401, B=410.7228, alpha=0.33917, beta=0.28491)
EPOCH_LOSS = ParametricLoss(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)
TOKENS_PER_PARAM_APPROACH_1 = 20.0
APPROACH_2_ANCHOR_FLOPS = 1.21e20


def approach_1() -> ScalingFit:
    """Approach 1 (fixed model sizes, varying tokens): a = b = 0.50, D = 20 N."""
    # N = G (C/6)^0.5 and D = 20 N  =>  G^2 = 1/20.
    return ScalingFit(
        "1",
        0.50,
        0.50,
        1.0 / math.sqrt(TOKENS_PER_PARAM_APPROACH_1),
        None,
        "Hoffmann et al. 2022, Approach 1 (a = b = 0.50, ~20 tokens/param)",
    )


def approach_2() -> ScalingFit:
    """Approach 2 (IsoFLOP profiles): a = 0.49, b = 0.51, anchored to Approach 1 at C0."""
    a, b = 0.49, 0.51
    ref = approach_1()
    n0 = ref.params_for_flops(APPROACH_2_ANCHOR_FLOPS)
    G = n0 / (APPROACH_2_ANCHOR_FLOPS / FLOPS_PER_PARAM_TOKEN) ** a
    return ScalingFit(
        "2",
        a,
        b,
        G,
        None,
        "Hoffmann et al. 2022, Approach 2 (a = 0.49, b = 0.51; anchored at C = 1.21e20)",
    )


def approach_3() -> ScalingFit:
    return _parametric_fit("3", CHINCHILLA_LOSS, "Hoffmann et al. 2022, Approach 3 (eq. 10)")


def epoch_fit() -> ScalingFit:
    return _parametric_fit("epoch", EPOCH_LOSS, "Besiroglu et al. 2024 (arXiv 2404.10102)")


SCALING_FITS: dict[str, Callable[[], ScalingFit]] = {
    "1": approach_1,
    "2": approach_2,
    "3": approach_3,
    "epoch": epoch_fit,
}


def get_scaling_fit(name: str) -> ScalingFit:
    """A fit by name: ``"1"``, ``"2"``, ``"3"`` or ``"epoch"``."""
    key = str(name).lower()
    if key not in SCALING_FITS:
        raise ValueError(f"approach must be one of {sorted(SCALING_FITS)}, got {name!r}")
    return SCALING_FITS[key]()


# (parameters, training FLOPs, training tokens) of Hoffmann et al. 2022 Table 3 (FACTS.md)
CHINCHILLA_TABLE_3: tuple[tuple[float, float, float], ...] = (
    (400e6, 1.92e19, 8.0e9),
    (1e9, 1.21e20, 20.2e9),
    (10e9, 1.23e22, 205.1e9),
    (67e9, 5.76e23, 1.5e12),
)


@dataclass(frozen=True)
class ComputeOptimum:
    """A training configuration: parameters, tokens, FLOPs (= 6 N D) and, if known, the loss."""

    params: float
    tokens: float
    flops: float
    loss: float | None
    approach: str

    @property
    def tokens_per_param(self) -> float:
        return self.tokens / self.params

    def to_json(self) -> dict[str, float | str | None]:
        return {
            "params": self.params,
            "tokens": self.tokens,
            "flops": self.flops,
            "loss": self.loss,
            "tokens_per_param": self.tokens_per_param,
            "approach": self.approach,
        }


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be a positive finite number, got {value}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


def compute_optimal(
    *,
    flops: float | None = None,
    params: float | None = None,
    tokens: float | None = None,
    approach: str = "1",
    flops_per_param_token: float | None = None,
) -> ComputeOptimum:
    """The compute-optimal (N, D, C) given exactly one of ``flops``, ``params`` or ``tokens``.

    ``flops`` C -> N_opt(C), D = C / (6 N). ``params`` N -> the C at which N is optimal.
    ``tokens`` D -> the N whose optimal budget uses D tokens (the data-limited sizing of 000
    §8.3.7: D = 1e9 -> N ~ 5e7). ``flops_per_param_token`` defaults to
    :func:`training_flops_per_param_token` (6).
    """
    given = {
        k: v for k, v in (("flops", flops), ("params", params), ("tokens", tokens)) if v is not None
    }
    if len(given) != 1:
        raise ValueError(
            f"give exactly one of flops, params, tokens; got {sorted(given) or 'none'}"
        )
    ((name, value),) = given.items()
    value = _positive(name, value)
    k = _positive("flops_per_param_token", training_flops_per_param_token()
                  if flops_per_param_token is None else flops_per_param_token)
    fit = get_scaling_fit(approach)
    try:
        if name == "flops":
            n = fit.params_for_flops(value * FLOPS_PER_PARAM_TOKEN / k)
            d = value / (k * n)
        elif name == "params":
            n = value
            d = fit.tokens_for_flops(fit.flops_for_params(n))
        else:
            d = value
            n = fit.params_for_flops(fit.flops_for_tokens(d))
        c = k * n * d
        loss = fit.loss(n, d) if fit.loss is not None else None
        per_param = d / n
    except (OverflowError, ZeroDivisionError):
        raise ValueError(_out_of_range(name, value, "the result overflows the float range")) \
            from None
    results = {"params": n, "tokens": d, "flops": c, "tokens_per_param": per_param,
               "loss": 1.0 if loss is None else loss}
    for key, x in results.items():
        if not (math.isfinite(x) and x > 0):
            raise ValueError(_out_of_range(name, value, f"the compute-optimal {key} would be {x}"))
    return ComputeOptimum(n, d, c, loss, fit.name)


def _out_of_range(name: str, value: float, why: str) -> str:
    return f"{name}={value:g} is out of the range this calculation can represent: {why}"


@dataclass(frozen=True)
class InferenceAwareOptimum:
    """Sardana et al. optimum next to the compute-optimal model reaching the same loss."""

    params: float
    tokens: float
    flops: float
    inference_tokens: float
    inference_flops: float
    total_flops: float
    loss: float
    compute_optimal: ComputeOptimum
    compute_optimal_total_flops: float

    def to_json(self) -> dict[str, object]:
        return {
            "params": self.params,
            "tokens": self.tokens,
            "flops": self.flops,
            "loss": self.loss,
            "tokens_per_param": self.tokens / self.params,
            "inference_tokens": self.inference_tokens,
            "inference_flops": self.inference_flops,
            "total_flops": self.total_flops,
            "compute_optimal": self.compute_optimal.to_json(),
            "compute_optimal_total_flops": self.compute_optimal_total_flops,
            "savings": 1.0 - self.total_flops / self.compute_optimal_total_flops,
        }


def inference_aware_optimum(
    base: ComputeOptimum, inference_tokens: float, *, approach: str | None = None
) -> InferenceAwareOptimum:
    """Minimise 6 N D_train(N) + 2 N D_inf at the loss ``base`` reaches (Sardana et al. 2024).

    The one-dimensional problem in log N is solved by a log-spaced scan followed by golden-section
    refinement (the objective is smooth and unimodal on the feasible range N > N_min, where
    E + A / N_min^alpha = loss).
    """
    if isinstance(inference_tokens, bool) or not isinstance(inference_tokens, (int, float)):
        raise TypeError(f"inference_tokens must be a number, got {type(inference_tokens).__name__}")
    try:
        d_inf = float(inference_tokens)
    except OverflowError:  # an int beyond the float range
        d_inf = math.inf
    if not math.isfinite(d_inf) or d_inf < 0:
        raise ValueError(f"inference_tokens must be a finite number >= 0, got {inference_tokens}")
    fit = get_scaling_fit(approach or base.approach)
    if fit.loss is None:
        raise ValueError(
            f"the inference-aware optimum needs a loss surface: approach must be '3' or 'epoch', "
            f"got {fit.name!r}"
        )
    surface = fit.loss
    for key in ("params", "tokens", "flops"):
        x = getattr(base, key)
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"base.{key} must be a positive finite number, got {x}")
    try:
        result = _inference_aware(base, surface, d_inf)
    except (OverflowError, ZeroDivisionError, ValueError):
        result = None
    if result is None or not all(
        math.isfinite(x) for x in (result.params, result.tokens, result.total_flops,
                                   result.compute_optimal_total_flops, result.loss)
    ) or result.compute_optimal_total_flops <= 0:
        raise ValueError(
            f"inference_tokens={inference_tokens:g} with a compute-optimal model of "
            f"{base.params:g} parameters is out of the range this calculation can represent "
            f"(the optimum overflows or the loss gap above E vanishes in float64)"
        )
    return result


def _inference_aware(base: ComputeOptimum, surface: ParametricLoss,
                     d_inf: float) -> InferenceAwareOptimum:
    """The optimisation of :func:`inference_aware_optimum` (inputs already checked)."""
    target = surface(base.params, base.tokens)

    def train_tokens(n: float) -> float:
        if planted(INFERENCE_AWARE_FIXED_TOKENS):  # planted bug: falsifier of
            return base.tokens  # architecture.inference-aware-sizing
        return surface.tokens_for_loss(n, target)

    def cost(log_n: float) -> float:
        n = math.exp(log_n)
        d = train_tokens(n)
        return training_flops(n, d) + INFERENCE_FLOPS_PER_PARAM_TOKEN * n * d_inf

    # Smallest feasible N: A / N^alpha < target - E.
    log_n_min = math.log(surface.A / (target - surface.E)) / surface.alpha
    lo, hi = log_n_min + 1e-9, math.log(base.params) + math.log(1e3)
    grid = [lo + (hi - lo) * i / 400 for i in range(401)]
    values = [cost(x) for x in grid]
    i = min(range(len(grid)), key=values.__getitem__)
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(100):
        c1, c2 = b - phi * (b - a), a + phi * (b - a)
        if cost(c1) <= cost(c2):
            b = c2
        else:
            a = c1
    n = math.exp((a + b) / 2.0)
    d = train_tokens(n)
    train = training_flops(n, d)
    inf = INFERENCE_FLOPS_PER_PARAM_TOKEN * n * d_inf
    base_total = base.flops + INFERENCE_FLOPS_PER_PARAM_TOKEN * base.params * d_inf
    return InferenceAwareOptimum(
        params=n,
        tokens=d,
        flops=train,
        inference_tokens=d_inf,
        inference_flops=inf,
        total_flops=train + inf,
        loss=surface(n, d),
        compute_optimal=base,
        compute_optimal_total_flops=base_total,
    )


def _golden_section(fn: Callable[[float], float], lo: float, hi: float, steps: int) -> float:
    """argmin of a unimodal ``fn`` on [lo, hi] by golden-section search."""
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    for _ in range(steps):
        c1, c2 = b - phi * (b - a), a + phi * (b - a)
        if fn(c1) <= fn(c2):
            b = c2
        else:
            a = c1
    return (a + b) / 2.0


def numerical_compute_optimum(loss: ParametricLoss, flops: float) -> ComputeOptimum:
    """Minimise L(N, D) over N with D = C / (c N), c = :func:`training_flops_per_param_token`,
    numerically (golden section in log N over [1, C], then on a bracket of a log grid).

    Independent of the closed form N_opt = G (C/6)^a: it only evaluates the loss surface
    (Hoffmann et al. 2022 eq. 10 / exercise 8.3.7-1) on the budget line of the library's cost
    model. The golden-section bracket shrinks by 0.618 per step: 200 steps resolve log N far
    below float64 rounding.
    """
    c = _positive("flops", flops)
    per = training_flops_per_param_token()
    if c <= per:
        raise ValueError(f"flops must exceed {per:g} (one parameter, one token), got {flops}")

    def objective(log_n: float) -> float:
        n = math.exp(log_n)
        return loss(n, c / (per * n))

    hi = math.log(c / per)  # D >= 1 token
    grid = [hi * i / 400 for i in range(401)]
    values = [objective(x) for x in grid]
    i = min(range(len(grid)), key=values.__getitem__)
    log_n = _golden_section(objective, grid[max(i - 1, 0)], grid[min(i + 1, 400)], 200)
    n = math.exp(log_n)
    d = c / (per * n)
    return ComputeOptimum(n, d, training_flops(n, d), loss(n, d), "numerical")
