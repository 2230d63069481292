"""kernel.kernel-audit and kernel.set-function-audit: their building blocks, both directions."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.kernel.set_functions import (
    PowerSums,
    SmallestGapFromPowerSums,
    _deep_sets,
)
from transformer_math.nn.sets import set_pool

F64 = torch.float64


def test_power_sums_and_newton_recover_the_smallest_gap():
    x = torch.tensor([[[0.1], [0.7], [0.35], [0.9]]], dtype=F64)
    model = _deep_sets(torch.Generator().manual_seed(0), 1, PowerSums(4),
                       SmallestGapFromPowerSums())
    with torch.no_grad():
        assert abs(float(model(x)) - 0.2) < 1e-9
        with plant("sets.sum-pool-as-mean"):
            assert abs(float(model(x)) - 0.2) > 1e-3


def test_sum_pool_bug_is_a_mean():
    h = torch.arange(6, dtype=F64).view(1, 3, 2)
    torch.testing.assert_close(set_pool(h, "sum"), h.sum(1))
    with plant("sets.sum-pool-as-mean"):
        torch.testing.assert_close(set_pool(h, "sum"), h.mean(1))


def test_kernel_audit_measures_asymmetry_on_the_module():
    from transformer_math.claims.kernel.mercer import _gram_audit
    from transformer_math.claims.registry import Context, Size

    ctx = Context(seed=0, size=Size.TINY)
    gram = _gram_audit(ctx)
    assert gram["untied_relative_asymmetry"] > 1e-3 and gram["tied_relative_asymmetry"] == 0.0
    assert gram["module_vs_written_out_log_gram"] < 1e-10
    with plant("attention.scale-by-model-width"):
        assert _gram_audit(ctx)["module_vs_written_out_log_gram"] > 1e-3
