"""Hook points: read or replace any named tensor of a model without editing the model.

Pattern (TransformerLens ``HookPoint``; Elhage et al. 2021 for what to read): an identity module
sits at every tensor a study reads (q, k, v, attention logits and pattern, per-head outputs,
sublayer outputs, the residual stream). Its name is its path in ``model.named_modules()``, e.g.
``layers.0.attn.hook_pattern``. Two ways in:

* :func:`run_with_cache` runs the model once and returns ``(output, cache)`` with
  ``cache[name]`` the tensor seen at that hook point (detached unless ``detach=False``);
* :func:`hooks` installs temporary callbacks ``fn(tensor, hook) -> tensor | None`` for the length
  of a ``with`` block (ablation, patching, steering); a returned tensor replaces the value.

Cost when unused: the model's hot loops ask :func:`hooks_live` once per forward and skip every
hook point while no callback is registered anywhere (on a hook point, or torch's global module
hooks); a hook point called anyway returns its input at once. So a model full of hook points
runs as fast as one without them (``tmath bench -k hooks`` measures the ratio).

TransformerLens's names (``blocks.0.attn.hook_pattern``, ``blocks.1.mlp.hook_post``) are accepted
wherever a name is, and ``run_with_cache(..., layout="transformer_lens")`` returns the cache under
its names in its layouts (``nn/tl_names.py`` holds the table); the project's names and layouts
stay the default. ``nn/weight_processing.py`` gives TransformerLens's processed weights.

Some hook points are computed only on demand: the attention logits and pattern exist only when
something listens (``MultiHeadAttention`` then asks its backend for the weights); see
:meth:`HookPoint.active`.
"""

from __future__ import annotations

import fnmatch
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.modules import module as _torch_module

from transformer_math.nn.tl_names import (
    is_transformer_lens_name,
    to_project_names,
    to_transformer_lens,
    to_transformer_lens_name,
)

HookFn = Callable[[Tensor, "HookPoint"], Tensor | None]

_WITH_HOOKS: list[weakref.ref[HookPoint]] = []  # points that were given a hook (a plain list:
#                                                 its emptiness is tested at C speed)


def hooks_live() -> bool:
    """True when some hook point has a callback, or torch has global module hooks.

    Cheap when nothing was ever registered (an empty set); points whose hooks were all removed
    are dropped from the set as they are found.
    """
    if _torch_module._global_forward_hooks or _torch_module._global_forward_pre_hooks:
        return True
    if not _WITH_HOOKS:
        return False
    live = [ref for ref in _WITH_HOOKS if (p := ref()) is not None
            and (p._forward_hooks or p._forward_pre_hooks)]
    _WITH_HOOKS[:] = live
    return bool(live)


class HookPoint(nn.Module):
    """Identity at a named tensor; ``name`` is filled in from ``named_modules()`` on first use."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str | None = None

    def active(self) -> bool:
        """True when a callback would see this tensor (own or torch-global forward hooks)."""
        return bool(self._forward_hooks or self._forward_pre_hooks
                    or _torch_module._global_forward_hooks
                    or _torch_module._global_forward_pre_hooks)

    def register_forward_hook(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        _WITH_HOOKS.append(weakref.ref(self))
        return super().register_forward_hook(*args, **kwargs)

    def register_forward_pre_hook(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        _WITH_HOOKS.append(weakref.ref(self))
        return super().register_forward_pre_hook(*args, **kwargs)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def __call__(self, x: Tensor) -> Tensor:  # type: ignore[override]
        if not (self._forward_hooks or self._forward_pre_hooks
                or _torch_module._global_forward_hooks
                or _torch_module._global_forward_pre_hooks):
            return x  # the fast path (the test of active(), inlined): no module-call machinery
        return super().__call__(x)


def name_hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Every hook point of ``model`` by its ``named_modules()`` path (and record the names)."""
    points = {}
    for name, module in model.named_modules():
        if isinstance(module, HookPoint):
            if module.name != name:  # nn.Module.__setattr__ is slow: set a name once
                module.name = name
            points[name] = module
    return points


Names = Iterable[str] | str | Callable[[str], bool] | None
LAYOUTS = ("project", "transformer_lens")


def uses_rotary(model: nn.Module) -> bool:
    """True when some module of ``model`` rotates q/k (RoPE): TransformerLens's ``hook_q``/
    ``hook_k`` are then the project's ``hook_q_pre_rope``/``hook_k_pre_rope``."""
    return any(getattr(m, "rotary", None) is not None for m in model.modules())


def _select(points: Mapping[str, HookPoint], names: Names, *, rotary: bool | None = None,
            all_transformer_lens: bool = False) -> dict[str, HookPoint]:
    """Hook points matching ``names``: None = all; a callable filter; names or glob patterns.

    TransformerLens names (``blocks.*``, ``ln_final.*``; every name when
    ``all_transformer_lens``) are translated first (``nn/tl_names.py``; ``rotary`` says whether
    the model uses RoPE). With ``all_transformer_lens`` a callable filters TransformerLens names
    and None means every point TransformerLens has a name for.
    """
    tl = bool(rotary)
    if names is None:
        if all_transformer_lens:
            return {n: p for n, p in points.items()
                    if to_transformer_lens_name(n, rotary=tl) is not None}
        return dict(points)
    if callable(names):
        if all_transformer_lens:
            keep = names
            return {n: p for n, p in points.items()
                    if (t := to_transformer_lens_name(n, rotary=tl)) is not None and keep(t)}
        return {n: p for n, p in points.items() if names(n)}
    patterns = [names] if isinstance(names, str) else list(names)
    chosen: dict[str, HookPoint] = {}
    for pattern in patterns:
        if pattern in points and not all_transformer_lens:  # an exact name: no matching needed
            chosen[pattern] = points[pattern]
            continue
        translated = [pattern]
        hits = [] if all_transformer_lens else [n for n in points
                                                if fnmatch.fnmatchcase(n, pattern)]
        if not hits and (all_transformer_lens or is_transformer_lens_name(pattern)):
            translated = to_project_names(pattern, rotary=tl)  # a module of the model's own
            hits = [n for n in points  # named blocks.* keeps its name (matched first)
                    if any(n == t or fnmatch.fnmatchcase(n, t) for t in translated)]
        if not hits:
            shown = repr(pattern) + ("" if translated == [pattern] else f" (= {translated})")
            raise ValueError(f"names: no hook point matches {shown}; the model has "
                             f"{len(points)} hook points, e.g. {list(points)[:6]}")
        chosen.update({n: points[n] for n in hits})
    return chosen


@contextmanager
def hooks(model: nn.Module, callbacks: Mapping[str, HookFn]) -> Iterator[None]:
    """Install ``callbacks`` ({name or glob pattern: fn}) for the duration of the block.

    ``fn(tensor, hook)`` may return a tensor of the same shape to replace the value (an
    intervention) or None to leave it. Every handle is removed on exit, also after an error.
    """
    points = name_hook_points(model)
    rotary = uses_rotary(model)
    with _installed([(p, fn) for pattern, fn in callbacks.items()
                     for p in _select(points, pattern, rotary=rotary).values()]):
        yield


@contextmanager
def _installed(pairs: list[tuple[HookPoint, HookFn]]) -> Iterator[None]:
    handles = []
    try:
        for point, fn in pairs:
            def forward_hook(module: nn.Module, args: tuple[Any, ...], output: Tensor,
                             fn: HookFn = fn) -> Tensor | None:
                assert isinstance(module, HookPoint)
                replaced = fn(output, module)
                if replaced is not None and replaced.shape != output.shape:
                    raise ValueError(f"hook at {module.name} returned shape "
                                     f"{tuple(replaced.shape)}, expected {tuple(output.shape)}")
                return replaced
            handles.append(point.register_forward_hook(forward_hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def run_with_cache(
    model: nn.Module,
    *args: Any,
    names: Names = None,
    detach: bool = True,
    layout: str = "project",
    **kwargs: Any,
) -> tuple[Any, dict[str, Tensor]]:
    """Run ``model(*args, **kwargs)`` once; return (output, {hook name: tensor}).

    ``names`` picks hook points: None = every one, a list of names or glob patterns
    (``"layers.*.attn.hook_pattern"``; TransformerLens names such as
    ``"blocks.*.attn.hook_pattern"`` too), or a predicate on the name. A hook point that fires
    twice in one call (a module reused in a loop) raises: a cache entry must mean one tensor.

    ``layout="transformer_lens"``: every name is read as TransformerLens's (``hook_embed`` is
    then the token embedding) and the cache is keyed by TransformerLens names with its layouts
    (q/k/v/z (B, T, H, d_head)); None selects every point TransformerLens has a name for. The
    default ``"project"`` keeps the project's names and layouts, whatever names were asked for.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    tl = layout == "transformer_lens"
    rotary = uses_rotary(model)
    points = _select(name_hook_points(model), names, rotary=rotary, all_transformer_lens=tl)
    cache: dict[str, Tensor] = {}

    def store(t: Tensor, hook: HookPoint) -> None:
        assert hook.name is not None
        if hook.name in cache:
            raise RuntimeError(f"hook point {hook.name} fired twice in one run_with_cache call")
        cache[hook.name] = t.detach() if detach else t

    with _installed([(point, store) for point in points.values()]):
        output = model(*args, **kwargs)
    return output, (to_transformer_lens(cache, rotary=rotary) if tl else cache)


@contextmanager
def hook_points_bypassed() -> Iterator[None]:
    """Make every HookPoint a plain identity, hooks or not (the baseline of the hook benchmark)."""
    original = HookPoint.__call__
    HookPoint.__call__ = lambda self, x: x  # type: ignore[method-assign]
    try:
        yield
    finally:
        HookPoint.__call__ = original  # type: ignore[method-assign]


def stack_layers(cache: Mapping[str, Tensor], pattern: str) -> Tensor:
    """Stack ``cache`` entries matching ``pattern`` with one ``{}`` for the layer index, in order:
    ``stack_layers(cache, "layers.{}.attn.hook_pattern")`` -> (L, B, H, T, S)."""
    layer = 0
    out = []
    while pattern.format(layer) in cache:
        out.append(cache[pattern.format(layer)])
        layer += 1
    if not out:
        raise KeyError(f"no cache entry matches {pattern.format(0)!r}")
    return torch.stack(out)
