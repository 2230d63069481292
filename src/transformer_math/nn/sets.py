"""Set layers: Deep Sets and the Set Transformer blocks (SAB, ISAB, PMA) on MultiHeadAttention.

Math (000 §8.3.2, theory B). A function f of n elements is permutation INVARIANT when
f(x_pi(1), ..., x_pi(n)) = f(x_1, ..., x_n) for every permutation pi, and EQUIVARIANT when
permuting the inputs permutes the outputs the same way.

- Deep Sets (Zaheer et al. 2017, Theorem 2): f(X) = rho(pool_j phi(x_j)) with a shared encoder
  phi, a symmetric pooling (sum, mean or max) and a decoder rho: invariant by construction. With
  phi a shared MLP and max pooling this is PointNet's global feature (Qi et al. 2017). Elements do
  not see each other before pooling, so pairwise relations ("are two points closer than r?") must
  be encoded through phi alone.
- Set Transformer (Lee et al. 2019, eqs. 6-11), multihead attention block
  MAB(X, Y) = LN(H + rFF(H)), H = LN(X + MultiHead(X, Y, Y)) (post-norm, as in the paper).
  SAB(X) = MAB(X, X) is permutation EQUIVARIANT (attention without positions is, 000 §8.3.1 (3));
  ISAB_m(X) = MAB(X, MAB(I, X)) with m learned inducing points costs O(n m) instead of O(n^2) and
  is equivariant; PMA_k(Z) = MAB(S, rFF(Z)) with k learned seed vectors S is permutation
  INVARIANT (the queries do not depend on the order, the softmax sums over all elements).
  SetTransformer = rFF(SAB(PMA_k(SAB(...SAB(X))))) is invariant.

Adding a positional code breaks these symmetries (000 §8.3.2, troubleshooting: do not add
positions to point clouds). Point-cloud use: a LiDAR / depth point cloud is an unordered set of
(x, y, z[, features]) rows; feed it as (batch, num_points, 3) with a ``key_padding_mask``
(True = padding) for clouds of different sizes; use ``DeepSets(pooling="max")`` for a PointNet-like
global descriptor and ``SetTransformer`` (or ``ISAB`` for thousands of points, or
``attention_backend="linear"``) when relations between points matter (grasp/collision reasoning).

Shapes: inputs (batch, set_size, dim); masks (batch, set_size) bool, True = padded element.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import reset_children

POOLINGS = ("sum", "mean", "max")

# Planted bug (transformer_math.bugs): off unless a falsifier or `tmath mutants` plants it.
SAB_OVER_BATCH = declare_bug(
    "sets.sab-attends-over-batch",
    "SAB attends along the batch axis instead of the set axis (batch-first / sequence-first "
    "confusion): an element sees the same slot of the other sets, never the other elements of "
    "its own set", module=__name__,
    seen_in="torch.nn.MultiheadAttention defaults to (seq, batch, dim); feeding it (batch, seq, "
    "dim) without batch_first=True silently attends over the batch")
SUM_POOL_AS_MEAN = declare_bug(
    "sets.sum-pool-as-mean",
    "sum pooling divides by the set size (a mean): the pooled features no longer carry the "
    "size of the set, so the power sums of the Deep Sets theorem are lost", module=__name__,
    seen_in="'sum' pooling written as .mean(dim=1) (PointNet-style code reused for Deep Sets); "
    "Zaheer et al.'s theorem needs the sum")


def _mlp(in_dim: int, hidden_dim: int, out_dim: int, num_layers: int) -> nn.Sequential:
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers}")
    layers: list[nn.Module] = []
    width = in_dim
    for _ in range(num_layers - 1):
        layers += [nn.Linear(width, hidden_dim), nn.ReLU()]
        width = hidden_dim
    layers.append(nn.Linear(width, out_dim))
    return nn.Sequential(*layers)


def _check_set(x: Tensor, dim: int, mask: Tensor | None) -> None:
    if x.dim() != 3 or x.shape[-1] != dim:
        raise ValueError(f"x must have shape (batch, set_size, {dim}), got {tuple(x.shape)}")
    if mask is not None and (mask.dtype != torch.bool or tuple(mask.shape) != tuple(x.shape[:2])):
        raise ValueError(
            f"key_padding_mask must be bool of shape {tuple(x.shape[:2])}, got "
            f"{mask.dtype} {tuple(mask.shape)}"
        )


def set_pool(h: Tensor, pooling: str, key_padding_mask: Tensor | None = None) -> Tensor:
    """Symmetric pooling over the set axis: (B, n, d) -> (B, d); padded elements are ignored.

    An all-padding set pools to zeros (sum, mean) or zeros (max, by convention).
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if key_padding_mask is None:
        if pooling == "sum":
            if planted(SUM_POOL_AS_MEAN):  # planted bug: falsifier of kernel.set-function-audit
                return h.mean(dim=1)
            return h.sum(dim=1)
        if pooling == "mean":
            return h.mean(dim=1)
        return h.amax(dim=1)
    keep = (~key_padding_mask).unsqueeze(-1).to(h.dtype)  # (B, n, 1)
    if pooling == "sum":
        return (h * keep).sum(dim=1)
    if pooling == "mean":
        return (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
    filled = h.masked_fill(key_padding_mask.unsqueeze(-1), float("-inf")).amax(dim=1)
    return torch.where(torch.isneginf(filled), torch.zeros_like(filled), filled)


class DeepSets(nn.Module):
    """f(X) = rho(pool_j phi(x_j)) (Zaheer et al. 2017): permutation invariant.

    Args: in_dim, hidden_dim, out_dim; ``pooling`` in {"sum", "mean", "max"} ("max" with an MLP
    phi is PointNet's global feature); ``phi_layers`` / ``rho_layers`` MLP depths.
    Input (B, n, in_dim) -> output (B, out_dim).
    """

    def __init__(
        self,
        in_dim: int,
        hidden_dim: int,
        out_dim: int,
        *,
        pooling: str = "sum",
        phi_layers: int = 2,
        rho_layers: int = 2,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.in_dim = in_dim
        self.pooling = pooling
        self.phi = nn.Sequential(_mlp(in_dim, hidden_dim, hidden_dim, phi_layers), nn.ReLU())
        self.rho = _mlp(hidden_dim, hidden_dim, out_dim, rho_layers)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_set(x, self.in_dim, key_padding_mask)
        return self.rho(set_pool(self.phi(x), self.pooling, key_padding_mask))


class MultiheadAttentionBlock(nn.Module):
    """MAB(X, Y) = LN(H + rFF(H)), H = LN(X + MultiHead(X, Y, Y)) (Lee et al. 2019, eqs. 6-7)."""

    def __init__(
        self, dim: int, num_heads: int, *, ff_mult: int = 2, attention_backend: str = "sdpa"
    ) -> None:
        super().__init__()
        self.dim = dim
        self.attention = MultiHeadAttention(dim, num_heads, backend=attention_backend)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(
            nn.Linear(dim, ff_mult * dim), nn.ReLU(), nn.Linear(ff_mult * dim, dim)
        )

    def forward(self, x: Tensor, y: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        h = self.norm1(x + self.attention(x, y, y, key_padding_mask=key_padding_mask))
        return self.norm2(h + self.ff(h))


class SetAttentionBlock(nn.Module):
    """SAB(X) = MAB(X, X): permutation EQUIVARIANT self-attention over the set (no positions)."""

    def __init__(self, dim: int, num_heads: int, **kwargs: object) -> None:
        super().__init__()
        self.mab = MultiheadAttentionBlock(dim, num_heads, **kwargs)  # type: ignore[arg-type]

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_set(x, self.mab.dim, key_padding_mask)
        if planted(SAB_OVER_BATCH):  # planted bug: falsifier of kernel.set-invariance and
            xt = x.transpose(0, 1)  # kernel.deepsets-vs-set-transformer (set and batch swapped)
            return self.mab(xt, xt).transpose(0, 1)
        return self.mab(x, x, key_padding_mask)


class InducedSetAttentionBlock(nn.Module):
    """ISAB_m(X) = MAB(X, MAB(I, X)) with m learned inducing points I: equivariant, O(n m)."""

    def __init__(self, dim: int, num_heads: int, num_inducing: int, **kwargs: object) -> None:
        super().__init__()
        if num_inducing < 1:
            raise ValueError(f"num_inducing must be >= 1, got {num_inducing}")
        self.inducing = nn.Parameter(torch.empty(1, num_inducing, dim))
        self.mab_in = MultiheadAttentionBlock(dim, num_heads, **kwargs)  # type: ignore[arg-type]
        self.mab_out = MultiheadAttentionBlock(dim, num_heads, **kwargs)  # type: ignore[arg-type]
        nn.init.normal_(self.inducing, 0.0, dim**-0.5)  # torch's convention: the global RNG

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Children by the package convention, then I ~ N(0, 1/d) (Lee et al. 2019 use a
        Xavier-scaled draw; 1/d keeps |I_j| ~ 1)."""
        reset_children(self, generator)
        nn.init.normal_(self.inducing, 0.0, self.inducing.shape[-1] ** -0.5, generator=generator)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_set(x, self.mab_in.dim, key_padding_mask)
        inducing = self.inducing.expand(x.shape[0], -1, -1).to(x.dtype)
        h = self.mab_in(inducing, x, key_padding_mask)  # (B, m, d)
        return self.mab_out(x, h)


class PoolingByMultiheadAttention(nn.Module):
    """PMA_k(Z) = MAB(S, rFF(Z)) with k learned seeds S.

    Permutation INVARIANT: (B, n, d) -> (B, k, d).
    """

    def __init__(self, dim: int, num_heads: int, num_seeds: int = 1, **kwargs: object) -> None:
        super().__init__()
        if num_seeds < 1:
            raise ValueError(f"num_seeds must be >= 1, got {num_seeds}")
        self.seeds = nn.Parameter(torch.empty(1, num_seeds, dim))
        self.rff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.mab = MultiheadAttentionBlock(dim, num_heads, **kwargs)  # type: ignore[arg-type]
        nn.init.normal_(self.seeds, 0.0, dim**-0.5)  # torch's convention: the global RNG

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Children by the package convention, then the seeds S ~ N(0, 1/d)."""
        reset_children(self, generator)
        nn.init.normal_(self.seeds, 0.0, self.seeds.shape[-1] ** -0.5, generator=generator)

    def forward(self, z: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_set(z, self.mab.dim, key_padding_mask)
        seeds = self.seeds.expand(z.shape[0], -1, -1).to(z.dtype)
        return self.mab(seeds, self.rff(z), key_padding_mask)


class SetTransformer(nn.Module):
    """An element-wise MLP embedding, an encoder of ``num_sab`` SABs, PMA with ``num_seeds``
    seeds, an SAB over the seeds and a linear head (Lee et al. 2019, §3.2): invariant,
    (B, n, in_dim) -> (B, num_seeds * out_dim).

    ``num_sab = 0`` removes every interaction between elements before pooling (an ablation that
    reduces the model to attention-pooled Deep Sets).
    """

    def __init__(
        self,
        in_dim: int,
        dim: int,
        out_dim: int,
        *,
        num_heads: int = 4,
        num_sab: int = 2,
        num_seeds: int = 1,
        attention_backend: str = "sdpa",
    ) -> None:
        super().__init__()
        if num_sab < 0:
            raise ValueError(f"num_sab must be >= 0, got {num_sab}")
        self.in_dim = in_dim
        self.embed = nn.Sequential(nn.Linear(in_dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        kw = {"attention_backend": attention_backend}
        self.encoder = nn.ModuleList(
            SetAttentionBlock(dim, num_heads, **kw) for _ in range(num_sab)
        )
        self.pool = PoolingByMultiheadAttention(dim, num_heads, num_seeds, **kw)
        self.decoder = SetAttentionBlock(dim, num_heads, **kw)
        self.head = nn.Linear(dim, out_dim)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        _check_set(x, self.in_dim, key_padding_mask)
        h = self.embed(x)
        for block in self.encoder:
            h = block(h, key_padding_mask)
        pooled = self.decoder(self.pool(h, key_padding_mask))  # (B, k, dim)
        return self.head(pooled).flatten(1)
