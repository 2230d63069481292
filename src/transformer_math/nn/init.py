"""One initialisation convention for every module of the package: ``reset_parameters(generator)``.

Why: a parameter drawn from torch's global RNG makes a result depend on whatever ran before it
(issue 12). Every model in ``src/`` is therefore built with :func:`seeded`, which

1. constructs the module with torch's own initialisers silenced (:func:`no_init_draws`, the same
   idea as Hugging Face's ``no_init_weights``): ``nn.Linear(...)`` and friends draw nothing from
   the global RNG during construction;
2. re-draws every parameter from an explicit ``torch.Generator`` with :func:`reset_parameters`.

:func:`reset_parameters` is recursive. At each module it uses, in this order,

- the module's own ``reset_parameters(generator)`` method, when it has one that takes a generator
  (every project module with parameters of its own or a scheme of its own defines one; it resets
  its children with :func:`reset_children` and then its own tensors);
- a rule for a torch built-in (``nn.Linear``, ``nn.Embedding``, ``nn.LayerNorm``, ...), drawing the
  same distribution as torch's default (``nn.Linear``: weight and bias ~ U(-1/sqrt(fan_in),
  1/sqrt(fan_in)), the closed form of ``kaiming_uniform_(a=sqrt(5))``; PyTorch
  ``torch/nn/modules/linear.py``);
- recursion into the children, and an error if the module holds parameters that none of the
  above initialises (no parameter silently keeps a draw from elsewhere).

The order of draws is the order of ``named_children()`` (registration order), so a model is a
pure function of its config and the generator's seed.

Dropout is the one consumer of randomness during training that torch gives no generator argument
(``F.dropout``, SDPA's ``dropout_p``): :func:`private_rng` runs a block on a forked global RNG
seeded from an explicit seed and restores the caller's state afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

import torch
from torch import nn

M = TypeVar("M", bound=nn.Module)

# torch.nn.init functions that draw random numbers (or fill tensors) and are called by torch's
# built-in modules' reset_parameters() during construction.
_SILENCED = (
    "uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
    "xavier_uniform_", "xavier_normal_", "orthogonal_", "sparse_", "constant_", "ones_", "zeros_",
)


@contextlib.contextmanager
def no_init_draws() -> Iterator[None]:
    """Within the block, ``torch.nn.init``'s initialisers return their tensor untouched.

    Modules constructed here hold uninitialised memory until :func:`reset_parameters` fills them;
    the global RNG is neither read nor advanced by their construction.
    """
    originals = {getattr(nn.init, name): name for name in _SILENCED}
    # ``torch.nn.init`` itself, and every torch.nn module that imported an initialiser by name
    # (``torch/nn/modules/activation.py`` does: ``from torch.nn.init import xavier_uniform_``).
    holders = [nn.init, *(m for name, m in list(sys.modules.items())
                          if name.startswith("torch.nn.modules.") and m is not None)]
    saved: list[tuple[object, str, object]] = []

    def untouched(tensor: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        return tensor

    try:
        for holder in holders:
            for attr, value in list(vars(holder).items()):
                if callable(value) and value in originals:
                    saved.append((holder, attr, value))
                    setattr(holder, attr, untouched)
        yield
    finally:
        for holder, attr, value in saved:
            setattr(holder, attr, value)


def seeded(factory: Callable[[], M], generator: torch.Generator | int) -> M:
    """``factory()`` built without global-RNG draws, then every parameter drawn from
    ``generator`` (a ``torch.Generator``, or an int seed for a fresh CPU generator)."""
    gen = as_generator(generator)
    with no_init_draws():
        module = factory()
    reset_parameters(module, gen)
    return module


def as_generator(generator: torch.Generator | int) -> torch.Generator:
    """A ``torch.Generator``: the one given, or a fresh CPU generator seeded with the int."""
    if isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, bool) or not isinstance(generator, int):
        raise TypeError(f"generator must be a torch.Generator or an int seed, got {generator!r}")
    return torch.Generator().manual_seed(generator)


@functools.cache
def _takes_generator(cls: type) -> bool:
    method = getattr(cls, "reset_parameters", None)
    if method is None:
        return False
    try:
        return "generator" in inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False


Gen = torch.Generator | None


def _uniform_fan_in(t: torch.Tensor, fan_in: int, generator: Gen) -> None:
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    t.uniform_(-bound, bound, generator=generator)


@torch.no_grad()
def _linear(m: nn.Linear, generator: Gen) -> None:
    _uniform_fan_in(m.weight, m.in_features, generator)
    if m.bias is not None:
        _uniform_fan_in(m.bias, m.in_features, generator)


@torch.no_grad()
def _embedding(m: nn.Embedding, generator: Gen) -> None:
    m.weight.normal_(0.0, 1.0, generator=generator)
    if m.padding_idx is not None:
        m.weight[m.padding_idx].zero_()


@torch.no_grad()
def _affine_norm(m: nn.Module, generator: Gen) -> None:
    weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
    if weight is not None:
        weight.fill_(1.0)
    if bias is not None:
        bias.zero_()


@torch.no_grad()
def _torch_mha(m: nn.MultiheadAttention, generator: Gen) -> None:
    """torch's own scheme: Xavier-uniform packed in-projection, zero biases, the out-projection
    as an ``nn.Linear`` (``torch/nn/modules/activation.py``, ``_reset_parameters``)."""
    for w in (m.in_proj_weight, m.q_proj_weight, m.k_proj_weight, m.v_proj_weight):
        if w is not None:
            bound = math.sqrt(6.0 / (w.shape[0] + w.shape[1]))
            w.uniform_(-bound, bound, generator=generator)
    _uniform_fan_in(m.out_proj.weight, m.out_proj.in_features, generator)
    for b in (m.in_proj_bias, m.out_proj.bias):
        if b is not None:
            b.zero_()
    for b in (m.bias_k, m.bias_v):
        if b is not None:
            bound = math.sqrt(6.0 / (b.shape[-2] + b.shape[-1]))
            b.uniform_(-bound, bound, generator=generator)


BUILTIN_RULES: dict[type, Callable[[nn.Module, Gen], None]] = {
    nn.Linear: _linear,  # type: ignore[dict-item]
    nn.Embedding: _embedding,  # type: ignore[dict-item]
    nn.LayerNorm: _affine_norm,
    nn.RMSNorm: _affine_norm,
    nn.MultiheadAttention: _torch_mha,  # type: ignore[dict-item]
}


def reset_parameters(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-draw every parameter of ``module`` and its submodules from ``generator`` (recursive;
    see the module docstring for the order of rules). Returns ``module``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    _reset(module, generator, type(module).__name__)
    return module


def reset_children(module: nn.Module, generator: torch.Generator | None) -> None:
    """Apply :func:`reset_parameters` to each direct child of ``module``, in registration order.

    A module's own ``reset_parameters(generator)`` calls this first, then fills its own tensors.
    ``generator=None`` draws from the global RNG, as torch's own ``reset_parameters()`` does (for a
    user's direct call; nothing in the package passes None).
    """
    for name, child in module.named_children():
        _reset(child, generator, f"{type(module).__name__}.{name}")


def _reset(module: nn.Module, generator: torch.Generator | None, where: str) -> None:
    cls = type(module)
    if _takes_generator(cls):
        module.reset_parameters(generator=generator)  # type: ignore[operator]
        return
    rule = BUILTIN_RULES.get(cls)
    if rule is not None:
        rule(module, generator)
        return
    own = [name for name, _ in module.named_parameters(recurse=False)]
    if own:
        raise TypeError(
            f"{where} ({cls.__name__}) holds parameters {own} but defines no "
            "reset_parameters(generator) and has no built-in rule in transformer_math.nn.init"
        )
    reset_children(module, generator)


@contextlib.contextmanager
def private_rng(seed: int) -> Iterator[None]:
    """Run the block on torch's global CPU RNG forked and seeded with ``seed``; the caller's
    state is restored afterwards. For dropout only, which takes no generator argument."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@torch.no_grad()
def normal_matrices_(module: nn.Module, generator: torch.Generator | None, std: float = 0.02
                     ) -> None:
    """Every parameter with two or more dimensions ~ N(0, std^2), in ``named_parameters`` order
    (GPT-2's scheme, Radford et al. 2019; ``std = 0.02``). Vectors (biases, norm gains) keep what
    :func:`reset_children` gave them. Tied tensors are drawn once."""
    for p in module.parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, 0.0, std, generator=generator)
