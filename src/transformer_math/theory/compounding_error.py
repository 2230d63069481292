"""Compounding error of behaviour cloning and the effect of action chunking (000 §8.3.8).

Closed forms (predictions; nothing is trained here):
- Behaviour cloning (Ross & Bagnell 2010, Thm 2.1): with per-step cost in [0, 1] and per-step
  imitation error eps under the expert's state distribution, J(pi) <= J(pi*) + T^2 eps.
  DAgger (Ross, Gordon & Bagnell 2011): O(T eps).
- The seed's chunked formula: error(k) = O(T^2 eps / k); worked example T = 400, eps = 0.01:
  T^2 eps = 1600 at k = 1 and 1600 / 90 = 17.8 ("~18") at k = 90.

Which formula gives ~18. The seed derives the chunked error by "substituting T -> T/k"; done
literally that gives (T/k)^2 eps = 0.198 at k = 90, not 18. The number 18 = T^2 eps / k follows
when (i) the T/k decisions each err with probability eps (a chunk is no likelier to be wrong than
a single action) and (ii) cost is still counted per TIME STEP: (T/k)^2 eps decision-level regret,
times k steps per decision = T^2 eps / k. If instead each of the k open-loop steps of a chunk errs
at rate eps (chunk error ~ k eps), the bound is (T/k)^2 (k eps) k = T^2 eps: no gain. Whether
chunking helps is therefore a property of the task (errors correlated in time, incrementally
stable open-loop dynamics; Zhang, Pfrommer, Pan, Matni, Simchowitz 2025), not of counting alone.
Note also that T^2 eps = 1600 exceeds the largest possible cost T = 400 at T = 400: the bound is
vacuous there, so "1600" says nothing beyond "may fail from the start".

``worst_case_expected_cost`` evaluates the worst-case model behind these bounds by dynamic
programming (the learner leaves the expert's distribution at its first mistake and pays cost 1 at
every later step); its value must stay below the corresponding bound.
"""

from __future__ import annotations

import math


def _check(horizon: int, eps: float, chunk: int = 1) -> None:
    if not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon must be an int >= 1, got {horizon!r}")
    if not (isinstance(eps, int | float) and 0.0 <= eps <= 1.0 and math.isfinite(eps)):
        raise ValueError(f"eps must be in [0, 1], got {eps!r}")
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")


def bc_regret_bound(horizon: int, eps: float) -> float:
    """Ross & Bagnell's behaviour-cloning bound T^2 eps."""
    _check(horizon, eps)
    return horizon**2 * eps


def dagger_regret_bound(horizon: int, eps: float) -> float:
    """The O(T eps) order of DAgger (constant 1)."""
    _check(horizon, eps)
    return horizon * eps


def seed_chunked_bound(horizon: int, eps: float, chunk: int) -> float:
    """The seed's boxed formula T^2 eps / k (decision error eps per chunk, cost per step)."""
    _check(horizon, eps, chunk)
    return horizon**2 * eps / chunk


def substituted_bound(horizon: int, eps: float, chunk: int) -> float:
    """The literal substitution T -> T/k in T^2 eps: (T/k)^2 eps (forgets k steps/decision)."""
    _check(horizon, eps, chunk)
    return (horizon / chunk) ** 2 * eps


def worst_case_expected_cost(horizon: int, eps: float, chunk: int = 1,
                             per_step_error: bool = False) -> float:
    """Expected cost of the worst-case compounding model, by dynamic programming over steps.

    Decisions happen at steps 0, k, 2k, ...; a decision errs with probability eps (or, with
    ``per_step_error``, 1 - (1 - eps)^k: every open-loop step of the chunk may err). After the
    first error the learner pays cost 1 at every step, including the step of the error.
    """
    _check(horizon, eps, chunk)
    p_decision = 1.0 - (1.0 - eps) ** chunk if per_step_error else eps
    p_ok = 1.0  # probability that no decision has erred so far
    cost = 0.0
    for t in range(horizon):
        if t % chunk == 0:
            p_ok *= 1.0 - p_decision
        cost += 1.0 - p_ok
    return cost
