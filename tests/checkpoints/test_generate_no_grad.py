"""``generate`` builds no autograd graph (issue 33, h33 item 1).

Decoding is inference: with parameters that require grad, every forward that
:func:`transformer_math.nn.generation.generate` (and a loaded checkpoint's ``generate``) runs must
happen with grad mode off, so no step's logits or KV-cache tensors carry a ``grad_fn`` and no
graph is kept alive across steps (a retained graph would grow memory linearly with the number of
new tokens). A forward hook records grad mode and the logits' ``grad_fn`` at every step.
"""

from __future__ import annotations

from typing import Any

import torch

from transformer_math.checkpoints.io import from_pretrained
from transformer_math.nn.generation import generate


def _record(model: torch.nn.Module) -> tuple[list[tuple[bool, Any]], Any]:
    seen: list[tuple[bool, Any]] = []

    def hook(_module: Any, _args: Any, out: Any) -> None:
        logits = out.logits if hasattr(out, "logits") else out
        seen.append((torch.is_grad_enabled(), logits.grad_fn))

    return seen, model.register_forward_hook(hook)


def test_generate_builds_no_graph(tmp_path, ref) -> None:
    ref.llama(tmp_path, eos_token_id=None)
    model = from_pretrained(tmp_path)
    assert all(p.requires_grad for p in model.parameters())
    prompt = torch.tensor([[1, 5, 9, 13]])
    for call in (lambda: model.generate(prompt, max_new_tokens=6, do_sample=False),
                 lambda: generate(model, prompt, 6, do_sample=False),
                 lambda: generate(model, prompt, 6, do_sample=False, use_cache=False)):
        seen, handle = _record(model)
        try:
            out = call()
        finally:
            handle.remove()
        assert len(seen) >= 1 and out.shape[1] > prompt.shape[1]
        assert all(not grad_on and fn is None for grad_on, fn in seen), seen
        assert not out.requires_grad and out.grad_fn is None
    assert torch.is_grad_enabled()  # grad mode restored after generate
    assert all(p.grad is None for p in model.parameters())
    # Outside generate the same model does build a graph, so the hook would have seen one.
    seen, handle = _record(model)
    try:
        model(prompt)
    finally:
        handle.remove()
    assert seen[0][0] and seen[0][1] is not None
