"""Risk of the one-layer in-context regressor against the number and the noise of the demos.

Setting (000 §8.3.6, 000:1032 and 000:1062; Ahn et al. 2023 in the isotropic case): k demos
x_i ~ N(0, I_d), y_i = w^T x_i + eps_i with w ~ N(0, I_d), eps_i ~ N(0, sigma^2), a query
(x_q, y_q) from the same task. One linear self-attention layer loaded with the one-step-GD
construction predicts y_hat = x_q^T w_1, w_1 = (eta / k) X^T y. With H = X^T X / k, E H = I and
E H^2 = ((k + d + 1) / k) I (second moment of a Wishart matrix with k degrees of freedom),

    E (y_hat - y_q)^2 = sigma^2 + d [ eta^2 (k + d + 1 + sigma^2) / k - 2 eta + 1 ],

minimised by eta* = k / (k + d + 1 + sigma^2) (at sigma = 0 this is Ahn et al.'s isotropic
preconditioner n / (n + d + 1)), where the risk is

    R*(k, sigma^2) = sigma^2 + d (d + 1 + sigma^2) / (k + d + 1 + sigma^2):

it decreases in k with diminishing returns (the excess falls like 1/k) and grows with the noise:
noisy demos shrink the optimal step and pull the implicit w (000:1062, item 1).
"""

from __future__ import annotations


def _check(dim: int, demos: int, noise_var: float) -> None:
    if not (isinstance(dim, int) and dim > 0 and isinstance(demos, int) and demos > 0):
        raise ValueError(f"dim and demos must be positive ints, got {dim!r}, {demos!r}")
    if not noise_var >= 0:
        raise ValueError(f"noise_var must be >= 0, got {noise_var}")


def one_layer_risk(dim: int, demos: int, noise_var: float, eta: float) -> float:
    """E (y_hat - y_q)^2 of one GD step with step ``eta`` (closed form above)."""
    _check(dim, demos, noise_var)
    return noise_var + dim * (eta**2 * (demos + dim + 1 + noise_var) / demos - 2 * eta + 1)


def one_layer_optimal_step(dim: int, demos: int, noise_var: float) -> float:
    """eta* = k / (k + d + 1 + sigma^2), the step minimising :func:`one_layer_risk`."""
    _check(dim, demos, noise_var)
    return demos / (demos + dim + 1 + noise_var)


def one_layer_optimal_risk(dim: int, demos: int, noise_var: float) -> float:
    """R* = sigma^2 + d (d + 1 + sigma^2) / (k + d + 1 + sigma^2)."""
    _check(dim, demos, noise_var)
    return noise_var + dim * (dim + 1 + noise_var) / (demos + dim + 1 + noise_var)
