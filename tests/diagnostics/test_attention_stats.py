"""diagnostics.attention_stats: entropy and effective rank of attention weights."""

import pytest
import torch

from transformer_math.diagnostics.attention_stats import effective_rank, normalized_entropy


def test_attention_stats():
    uniform = torch.full((3, 5), 0.2)
    assert torch.allclose(normalized_entropy(uniform), torch.ones(3))
    assert float(effective_rank(torch.eye(4))) == pytest.approx(4.0)
    assert float(effective_rank(torch.ones(4, 4))) == pytest.approx(1.0)
