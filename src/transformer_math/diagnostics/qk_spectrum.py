"""QK-spectrum monitor: the eigenvalues of W_QK = W_Q W_K^T per head, computed correctly.

Math (Bao, Hataya, Karakida, ICML 2024, arXiv 2402.02098; FACTS.md). One head's logits are
x_i^T W_QK x_j / sqrt(d_k) with W_QK = W_Q W_K^T (d x d, rank <= d_k). W_QK is NOT symmetric in
general (W_Q != W_K), so
- its eigenvalues are complex in general (they come in conjugate pairs; their mean tr(W_QK)/d is
  real) and are computed with ``torch.linalg.eigvals`` (general, non-symmetric LAPACK geev);
- its singular values (``svdvals``) give the gain of the bilinear form;
- its symmetric part Sym = (W_QK + W_QK^T)/2 has a real spectrum (``eigvalsh`` is correct there
  because Sym is symmetric by construction); the quadratic form x^T W_QK x = x^T Sym x, so Sym
  alone governs a token's logit with itself.
Bao et al.: attention localises when the eigenspectrum of W_QK has a small variance around a
nonzero mean. This module reports mean and variance (mean |lambda - mean|^2) of each spectrum.

The third seed's monitor (004 ch. 12) calls ``torch.linalg.eigvalsh`` on W_Q W_K^T: eigvalsh
assumes a symmetric (Hermitian) input and silently reads only one triangle, so it returns the
spectrum of a different matrix. It also reports kappa = lambda_1 / sum(lambda), which is not the
quantity of the paper. ``spectrum.qk-localization`` demonstrates both; nothing here calls
eigvalsh on a non-symmetric matrix.

W_QK is a property of the weights, so it is read from the public ``q_proj``/``k_proj``
parameters; nothing calls the module's internals. The activations it acts on (q and k after RoPE)
and the resulting logits and weights are at the module's hook points ``hook_q``/``hook_k``/
``hook_scores``/``hook_pattern`` (``nn.hooks.run_with_cache``); without positions and biases
``hook_scores`` is x_i^T W_QK x_j / sqrt(d_k) (tests/diagnostics/test_qk_spectrum.py).

Monitoring: :class:`QKSpectrumMonitor` finds every attention module with ``q_proj``/``k_proj``
(``nn.attention.MultiHeadAttention``, e.g. ``layers.{i}.attn`` of ``nn.transformer.Transformer``)
in any model and records the spectra of each head, on demand (``measure()``) or every ``every``
forward calls through forward hooks (``attach()``), without touching the model's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from transformer_math.bugs import declare_bug, planted

EIGVALSH_NONSYMMETRIC = declare_bug(
    "spectrum.eigvalsh-nonsymmetric", "the monitor computes the eigenvalues of the non-symmetric "
    "W_QK with torch.linalg.eigvalsh, which reads one triangle only", module=__name__,
    seen_in="the third seed's QKSpectrumMonitor (004 ch. 12)")


def head_qk_matrices(module: nn.Module) -> Tensor:
    """(H, d_q, d_kv) stack of W_QK^(h) read from an attention module's q_proj / k_proj.

    ``nn.Linear`` stores W^T, so W_Q^(h) = q_proj.weight[h d_k:(h+1) d_k]^T; query head h uses
    key head h // (H / H_kv) (grouped-query attention).
    """
    for attr in ("q_proj", "k_proj", "num_heads", "head_dim"):
        if not hasattr(module, attr):
            raise TypeError(f"module must have q_proj, k_proj, num_heads, head_dim; lacks {attr}")
    h, d_k = int(module.num_heads), int(module.head_dim)
    h_kv = int(getattr(module, "num_kv_heads", h))
    wq = module.q_proj.weight.detach()
    wk = module.k_proj.weight.detach()
    mats = []
    for head in range(h):
        g = head // (h // h_kv)
        mats.append(wq[head * d_k : (head + 1) * d_k].T @ wk[g * d_k : (g + 1) * d_k])
    return torch.stack(mats)


def _mean_variance(values: Tensor) -> tuple[float, float]:
    mean = values.mean()
    var = (values - mean).abs().pow(2).mean()
    return float(mean.real if mean.is_complex() else mean), float(var)


@dataclass(frozen=True)
class QKSpectrum:
    """Spectra of one W_QK. Eigenvalue fields are None for a non-square (cross-attention) W_QK."""

    eigenvalues: Tensor | None  # complex (d,)
    singular_values: Tensor  # (min(d_q, d_kv),)
    symmetric_eigenvalues: Tensor | None  # real (d,), of (W + W^T)/2
    eig_mean: float | None  # tr(W)/d (real)
    eig_variance: float | None  # mean |lambda - mean|^2
    sym_mean: float | None
    sym_variance: float | None
    max_imag: float | None  # largest |Im lambda|: > 0 means complex eigenvalues

    def to_json(self) -> dict[str, Any]:
        return {
            "eig_mean": self.eig_mean,
            "eig_variance": self.eig_variance,
            "sym_mean": self.sym_mean,
            "sym_variance": self.sym_variance,
            "max_imag": self.max_imag,
            "top_singular_value": float(self.singular_values.max()),
        }


def qk_spectrum(w_qk: Tensor) -> QKSpectrum:
    """Complex eigenvalues, singular values and the symmetric part's spectrum of ``w_qk``."""
    if not isinstance(w_qk, Tensor) or not w_qk.is_floating_point() or w_qk.dim() != 2:
        raise ValueError(f"w_qk must be a 2-D floating tensor, got {getattr(w_qk, 'shape', w_qk)}")
    w = w_qk.detach().to(torch.float64)
    sv = torch.linalg.svdvals(w)
    if w.shape[0] != w.shape[1]:
        return QKSpectrum(None, sv, None, None, None, None, None, None)
    eig = torch.linalg.eigvals(w)  # general (non-symmetric) eigen-solver
    if planted(EIGVALSH_NONSYMMETRIC):  # planted bug: falsifier of spectrum.qk-localization
        eig = torch.linalg.eigvalsh(w).to(eig.dtype)
    sym = torch.linalg.eigvalsh(0.5 * (w + w.T))  # symmetric by construction
    eig_mean, eig_var = _mean_variance(eig)
    sym_mean, sym_var = _mean_variance(sym)
    return QKSpectrum(
        eigenvalues=eig,
        singular_values=sv,
        symmetric_eigenvalues=sym,
        eig_mean=eig_mean,
        eig_variance=eig_var,
        sym_mean=sym_mean,
        sym_variance=sym_var,
        max_imag=float(eig.imag.abs().max()),
    )


def _attention_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    return [
        (name, m)
        for name, m in model.named_modules()
        if hasattr(m, "q_proj") and hasattr(m, "k_proj") and hasattr(m, "num_heads")
        and hasattr(m, "head_dim")
    ]


class QKSpectrumMonitor:
    """Record the W_QK spectra of every head of every attention module of ``model``.

    Use ``measure(step)`` in a training loop, or ``attach(every=k)`` to measure through forward
    hooks every k forward calls of each module (``detach()`` removes them; also a context
    manager). ``history`` holds one dict per (measurement, module, head) with the fields of
    :meth:`QKSpectrum.to_json` plus ``step``, ``module``, ``head``.
    """

    def __init__(self, model: nn.Module) -> None:
        self.modules = _attention_modules(model)
        if not self.modules:
            raise ValueError("model contains no attention module with q_proj/k_proj/num_heads")
        self.history: list[dict[str, Any]] = []
        self._handles: list[RemovableHandle] = []
        self._calls: dict[str, int] = {}

    def measure_module(
        self, name: str, module: nn.Module, step: int | None
    ) -> list[dict[str, Any]]:
        rows = []
        for head, w in enumerate(head_qk_matrices(module)):
            row = {"step": step, "module": name, "head": head, **qk_spectrum(w).to_json()}
            rows.append(row)
        self.history.extend(rows)
        return rows

    @torch.no_grad()
    def measure(self, step: int | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for name, module in self.modules:
            rows.extend(self.measure_module(name, module, step))
        return rows

    def attach(self, every: int = 1) -> QKSpectrumMonitor:
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an int >= 1, got {every!r}")
        self.detach()
        for name, module in self.modules:
            self._calls[name] = 0

            def hook(mod: nn.Module, args: Any, output: Any, name: str = name) -> None:
                count = self._calls[name]
                self._calls[name] = count + 1
                if count % every == 0:
                    with torch.no_grad():
                        self.measure_module(name, mod, count)

            self._handles.append(module.register_forward_hook(hook))
        return self

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> QKSpectrumMonitor:
        return self.attach() if not self._handles else self

    def __exit__(self, *exc: object) -> None:
        self.detach()
