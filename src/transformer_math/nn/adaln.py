"""adaLN-Zero: a conditioning vector modulates every pre-norm sublayer (DiT, Peebles & Xie 2023).

DiT §3.2 "adaLN-Zero block": from a condition c (B, C) (there: timestep + class embeddings) a
linear map regresses, per sublayer, a shift beta, a scale gamma and a residual gate alpha, each
(B, d), and the pre-norm sublayer h <- h + f(N(h)) becomes

    h <- h + alpha(c) * f( N(h) * (1 + gamma(c)) + beta(c) ),
    [beta, gamma, alpha] = W SiLU(c) + b

with W and b initialised to ZERO, so every block is the identity at initialisation (alpha = 0)
and the network starts as its embedding followed by the final norm. The final norm is modulated
the same way (shift and scale, no gate), as DiT's final layer is. The condition enters every
block; it is the way diffusion and flow-matching action heads (Diffusion Policy, pi0's action
expert) inject the denoising time and the observation into a Transformer.

Planted bug ``nn.adaln-condition-ignored``: the modulation is computed from zeros instead of c
(only the learned bias b remains: the same shift/scale/gate for every timestep and state).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted

ADALN_CONDITION_IGNORED = declare_bug(
    "nn.adaln-condition-ignored",
    "adaLN modulation regressed from zeros instead of the condition c: every timestep and every "
    "observation gets the same shift/scale/gate (the learned bias), so the network cannot see "
    "its conditioning",
    module=__name__,
    test="tests/robotics/test_mechanics_checks.py::"
    "test_adaln_transformer_output_depends_on_its_condition",
    seen_in="a conditioning vector that is computed but not passed on (a default of zeros or "
    "None silently used), e.g. a timestep embedding built and then dropped")

Modulation = tuple[Tensor, Tensor, Tensor]


class AdaLNModulation(nn.Module):
    """c (B, C) -> ``parts`` triples (shift, scale, gate), each (B, 1, d); zero-initialised."""

    def __init__(self, condition_size: int, hidden_size: int, parts: int, gated: bool = True
                 ) -> None:
        super().__init__()
        self.parts, self.gated, self.hidden_size = parts, gated, hidden_size
        self.proj = nn.Linear(condition_size, (3 if gated else 2) * parts * hidden_size)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """adaLN-Zero: W = 0 and b = 0 (no draw: ``generator`` is not advanced)."""
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, c: Tensor) -> list[Modulation]:
        if planted(ADALN_CONDITION_IGNORED):  # planted bug: falsifier of robotics.decoder-*
            c = torch.zeros_like(c)
        out = self.proj(nn.functional.silu(c))[:, None, :]  # (B, 1, k * parts * d)
        chunks = out.chunk((3 if self.gated else 2) * self.parts, dim=-1)
        if self.gated:
            return [tuple(chunks[3 * i:3 * i + 3]) for i in range(self.parts)]  # type: ignore[misc]
        ones = torch.ones_like(chunks[0])
        return [(chunks[2 * i], chunks[2 * i + 1], ones) for i in range(self.parts)]


def modulate(x: Tensor, shift: Tensor, scale: Tensor) -> Tensor:
    """N(h) * (1 + scale) + shift (DiT's ``modulate``), broadcast over the sequence."""
    return x * (1.0 + scale) + shift
