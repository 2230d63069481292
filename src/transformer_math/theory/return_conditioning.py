"""Return-conditioned behaviour cloning (the Decision Transformer's objective) and reward-weighted
regression on a discrete data set (000 §8.3.8, lines 1224-1228).

Data: a joint distribution D(s, a, R) over states, actions and (discretised) returns-to-go R.

- The Decision Transformer (Chen et al. 2021) fits p_theta(a | s, R) by UNWEIGHTED maximum
  likelihood, max_theta E_D[log p_theta(a | s, R)]. A tabular model attains the conditional of the
  data, p*(a | s, R) = D(s, a, R) / D(s, R).
- Reweighting the training data by any function w(R) of the conditioning return alone,
  max E_D[w(R) log p_theta(a | s, R)], leaves that optimum unchanged: for each (s, R) the weight
  is a constant factor of the cross-entropy of one conditional. Sampling trajectories with
  probability proportional to exp(R / tau) is such a reweighting; it does not turn the DT into RWR.
- Reward-weighted regression (Peters & Schaal 2007) maximises E_D[exp(R / tau) log pi(a | s)] over
  an UNCONDITIONED policy; its optimum is pi_RWR(a | s) = sum_R D(s, a, R) exp(R / tau) / Z(s).
- The equivalence that does hold is at the level of the executed policy: draw the conditioning
  return at inference from the tilted data distribution q(R | s) = D(R | s) exp(R / tau) / Z(s);
  the DT's action marginal sum_R p*(a | s, R) q(R | s) = sum_R D(s, a, R) exp(R / tau) / Z'(s) is
  exactly pi_RWR (Bayes' rule). The seed's (000:1226) "E_tau[log p_theta(a | R, s, ...)]
  proportional to E[exp(R / tau) log pi_theta(a | s)]" is not an identity in theta: the two
  objectives score different models (a conditional and an unconditioned policy) and their ratio
  varies with theta.

``fit_return_conditioned`` minimises the (optionally weighted) cross-entropy numerically (damped
Newton), so the optimum is measured rather than read off the closed form.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

TILT_IGNORES_DATA = declare_bug(
    "robotics.rwr-tilt-ignores-data",
    "the tilted return distribution is exp(R / tau) normalised over the return grid, without the "
    "data's D(R | s): the conditioning return is drawn as if every return were equally common",
    module=__name__,
    seen_in="the seed's own wording (000:1224, 'R-hat sampled with exponential weights') read "
    "literally: a return prior proportional to exp(R / tau) alone")


def _check_joint(joint: Tensor, returns: Tensor) -> None:
    if joint.dim() != 3 or returns.dim() != 1 or joint.shape[2] != returns.shape[0]:
        raise ValueError(f"need joint (S, A, R) and returns (R,), got {tuple(joint.shape)}, "
                         f"{tuple(returns.shape)}")
    if bool((joint < 0).any()) or not math.isclose(float(joint.sum()), 1.0, abs_tol=1e-9):
        raise ValueError("joint must be a probability table (non-negative, summing to 1)")


def random_joint(num_states: int, num_actions: int, returns: Tensor,
                 generator: torch.Generator) -> Tensor:
    """A data distribution D(s, a, R) (float64, full support) whose returns depend on the action:
    action a shifts the return distribution towards the top by a / (A - 1)."""
    n_r = returns.shape[0]
    base = torch.rand(num_states, num_actions, n_r, generator=generator, dtype=torch.float64)
    skew = torch.linspace(0.0, 1.0, num_actions, dtype=torch.float64)[None, :, None]
    grid = torch.linspace(-1.0, 1.0, n_r, dtype=torch.float64)[None, None, :]
    joint = (0.2 + base) * torch.exp(2.0 * skew * grid)
    return joint / joint.sum()


def dt_conditional(joint: Tensor) -> Tensor:
    """Closed form p*(a | s, R) = D(s, a, R) / D(s, R), shape (S, A, R)."""
    return joint / joint.sum(1, keepdim=True)


def behaviour_policy(joint: Tensor) -> Tensor:
    """D(a | s), shape (S, A)."""
    m = joint.sum(2)
    return m / m.sum(1, keepdim=True)


def rwr_policy(joint: Tensor, returns: Tensor, tau: float) -> Tensor:
    """Closed-form optimum of RWR: pi(a | s) proportional to sum_R D(s, a, R) exp(R / tau)."""
    _check_joint(joint, returns)
    w = (joint * torch.exp(returns / tau)[None, None, :]).sum(2)
    return w / w.sum(1, keepdim=True)


def tilted_returns(joint: Tensor, returns: Tensor, tau: float) -> Tensor:
    """q(R | s) proportional to D(R | s) exp(R / tau), shape (S, R): the conditioning returns to
    draw at inference for the DT's action marginal to equal the RWR policy."""
    _check_joint(joint, returns)
    tilt = torch.exp(returns / tau)[None, :]
    prior = joint.sum(1)  # D(s, R)
    if planted(TILT_IGNORES_DATA):  # planted bug: falsifier of robotics.dt-rwr-equivalence
        prior = torch.ones_like(prior)
    q = prior * tilt
    return q / q.sum(1, keepdim=True)


def marginal_policy(conditional: Tensor, q: Tensor) -> Tensor:
    """The executed policy sum_R p(a | s, R) q(R | s), shape (S, A)."""
    return torch.einsum("sar,sr->sa", conditional, q)


def fit_return_conditioned(joint: Tensor, weights: Tensor | None = None, *,
                           max_iter: int = 30) -> Tensor:
    """Tabular p_theta(a | s, R) = softmax over a of logits[s, :, R], fitted numerically on the
    cross-entropy L(theta) = -sum D(s, a, R) w(R) log p_theta(a | s, R) (w = 1: the DT's
    unweighted loss), normalised by sum D w.

    Damped Newton from zero logits (the uniform policy): gradient and Hessian by autograd, the
    step pinv(H) g (H is singular along the softmax's shift invariance), halved until the loss
    does not increase; stops when max |g| < 1e-12. The loss is convex in the logits: 5-7
    iterations reach the optimum to rounding. Returns p_theta, shape (S, A, R), float64."""
    w = torch.ones(joint.shape[2], dtype=joint.dtype) if weights is None else weights
    target = joint * w[None, None, :]
    target = target / target.sum()

    def loss(x: Tensor) -> Tensor:
        return -(target * torch.log_softmax(x.view(joint.shape), dim=1)).sum()

    x = torch.zeros(joint.numel(), dtype=joint.dtype)
    for _ in range(max_iter):
        grad = torch.autograd.functional.jacobian(loss, x)
        if float(grad.abs().max()) < 1e-12:
            break
        hess = torch.autograd.functional.hessian(loss, x)
        step = torch.linalg.pinv(hess, hermitian=True) @ grad
        current, eta = float(loss(x)), 1.0
        while float(loss(x - eta * step)) > current and eta > 1e-4:
            eta /= 2.0
        x = x - eta * step
    return torch.softmax(x.view(joint.shape), dim=1)


def dt_tilted_objective(joint: Tensor, returns: Tensor, tau: float,
                        conditional: Tensor) -> float:
    """The seed's left side: the DT's expected log-likelihood with trajectories sampled with
    probability proportional to exp(R / tau): E_D[exp(R/tau) log p(a | s, R)] / E_D[exp(R/tau)]."""
    tilt = torch.exp(returns / tau)[None, None, :]
    return float((joint * tilt * torch.log(conditional)).sum() / (joint * tilt).sum())


def rwr_objective(joint: Tensor, returns: Tensor, tau: float, policy: Tensor) -> float:
    """RWR's objective E_D[exp(R / tau) log pi(a | s)] for an unconditioned policy (S, A)."""
    tilt = torch.exp(returns / tau)[None, None, :]
    return float((joint * tilt * torch.log(policy)[:, :, None]).sum())


def total_variation(p: Tensor, q: Tensor) -> float:
    """max over states of 0.5 sum_a |p(a | s) - q(a | s)|."""
    return float(0.5 * (p - q).abs().sum(-1).max())
