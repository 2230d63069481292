"""Small pre-LN Transformer blocks for the policies, built on the project's MultiHeadAttention.

Pre-LN block (Xiong et al. 2020; 000 §8.3.1 for attention):
    x <- x + SelfAttn(LN(x)),   [x <- x + CrossAttn(LN(x), memory)],   x <- x + MLP(LN(x)),
with MLP(h) = W_2 GELU(W_1 h) (hidden width ``mlp_ratio * dim``) and dropout on both residual
branches. Kept local to the robotics package on purpose (the policies' shapes are fixed here).
"""

from __future__ import annotations

from torch import Tensor, nn

from transformer_math.nn.attention import MultiHeadAttention


class PolicyBlock(nn.Module):
    """One pre-LN block; ``cross_attention=True`` adds a cross-attention sub-layer."""

    def __init__(self, dim: int, num_heads: int, *, mlp_ratio: int = 4, dropout: float = 0.0,
                 cross_attention: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = MultiHeadAttention(dim, num_heads, dropout=dropout)
        self.cross = (
            MultiHeadAttention(dim, num_heads, dropout=dropout) if cross_attention else None
        )
        self.norm_cross = nn.LayerNorm(dim) if cross_attention else None
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(),
                                 nn.Linear(mlp_ratio * dim, dim))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, memory: Tensor | None = None, *,
                is_causal: bool = False) -> Tensor:
        x = x + self.drop(self.attn(self.norm1(x), is_causal=is_causal).output)  # (B, T, d)
        if self.cross is not None:
            if memory is None:
                raise ValueError("memory is required by a block with cross_attention=True")
            assert self.norm_cross is not None
            x = x + self.drop(self.cross(self.norm_cross(x), memory, memory).output)
        return x + self.drop(self.mlp(self.norm2(x)))


def mlp(in_dim: int, hidden: int, layers: int, out_dim: int) -> nn.Sequential:
    """``layers`` hidden Linear+GELU layers of width ``hidden`` then a Linear to ``out_dim``."""
    if layers < 1 or hidden < 1:
        raise ValueError(f"layers and hidden must be >= 1, got {layers}, {hidden}")
    mods: list[nn.Module] = []
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.GELU()]
        width = hidden
    mods.append(nn.Linear(width, out_dim))
    return nn.Sequential(*mods)

