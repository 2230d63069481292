"""Linear self-attention (no softmax) in von Oswald's token layout, for in-context regression.

Source: 000 §8.3.6 (输入编码 E, 线性注意力); von Oswald et al. 2023, eq. (3)-(4); FACTS.md.

Tokens are e_j = [x_j; y_j] (j = 1..N) and the query e_q = [x_q; 0], stacked as rows of a
(batch, N + 1, d + 1) tensor with the query LAST (``regression_tokens``). Each layer updates every
token with a sum over the N context tokens (the query is never a key):

    e_j <- e_j + P W_V sum_{i<=N} e_i (e_i^T W_K^T W_Q e_j),

and the model's prediction is the NEGATED label slot of the query, ``-h[:, -1, -1]`` (the sign
convention of the construction in ``theory/icl_construction.py``). No normalisation by N is
built in: the 1/N of the GD step lives in P, as in FACTS.md.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted

QUERY_AS_KEY = declare_bug(
    "icl.lsa-query-as-key",
    "linear self-attention lets the query token e_q be a key and value too (the mask that keeps "
    "the query out of the context sum dropped): harmless in the first layer (its label slot is "
    "0), but from the second layer on -x_q^T w_l leaks into every update",
    module=__name__,
    seen_in="von Oswald et al. 2023 exclude the query from the keys with a mask; forgetting it "
    "is the easy slip when the layer is written as full self-attention")
NORMALISE_BY_TOKENS = declare_bug(
    "icl.lsa-normalise-by-tokens",
    "linear self-attention averages its context sum over the T = N + 1 tokens of the prompt "
    "(a mean over the sequence length, the query counted) instead of summing it: every update "
    "is scaled by 1 / (N + 1); a trained layer with a fixed N absorbs the factor into P, but "
    "weights set by hand (the construction's 1/N lives in P) are off by it",
    module=__name__,
    seen_in="linear-attention code that divides by the sequence length (a 'mean' attention); "
    "von Oswald et al.'s layer has no normaliser, the 1/N of the GD step is in P")


def regression_tokens(x: Tensor, y: Tensor, x_query: Tensor) -> Tensor:
    """Stack context pairs and the query as rows [x_j, y_j] and [x_q, 0]: (B, N + 1, d + 1)."""
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, N, d), got {tuple(x.shape)}")
    b, n, d = x.shape
    if y.shape != (b, n):
        raise ValueError(f"y must have shape (batch, N) = ({b}, {n}), got {tuple(y.shape)}")
    if x_query.shape != (b, d):
        raise ValueError(
            f"x_query must have shape (batch, d) = ({b}, {d}), got {tuple(x_query.shape)}"
        )
    context = torch.cat([x, y.unsqueeze(-1)], dim=-1)  # (B, N, d+1)
    query = torch.cat([x_query, torch.zeros(b, 1, dtype=x.dtype)], dim=-1).unsqueeze(
        1
    )  # (B, 1, d+1)
    return torch.cat([context, query], dim=1)  # (B, N+1, d+1)


class LinearSelfAttentionLayer(nn.Module):
    """One layer e_j <- e_j + P W_V sum_{i in context} e_i (e_i^T W_K^T W_Q e_j).

    Parameters are full (embed_dim, embed_dim) matrices ``key`` (W_K), ``query`` (W_Q),
    ``value`` (W_V), ``projection`` (P), initialised N(0, init_std^2) from ``generator``.
    """

    def __init__(
        self,
        embed_dim: int,
        *,
        init_std: float = 0.02,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if not isinstance(embed_dim, int) or embed_dim <= 0:
            raise ValueError(f"embed_dim must be a positive int, got {embed_dim!r}")
        if init_std < 0:
            raise ValueError(f"init_std must be >= 0, got {init_std}")
        self.embed_dim, self.init_std = embed_dim, init_std

        def empty() -> nn.Parameter:
            return nn.Parameter(torch.empty(embed_dim, embed_dim, dtype=dtype))

        self.key = empty()
        self.query = empty()
        self.value = empty()
        self.projection = empty()
        self.reset_parameters(generator)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """W_K, W_Q, W_V, P ~ N(0, init_std^2), drawn in that order from ``generator``."""
        for w in (self.key, self.query, self.value, self.projection):
            nn.init.normal_(w, 0.0, self.init_std, generator=generator)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (B, N + 1, D) with the query last; returns the updated tokens, same shape."""
        context = tokens[:, :-1]  # (B, N, D): keys and values come from the context only
        if planted(QUERY_AS_KEY):  # planted bug: falsifier of icl.neumann-ols
            context = tokens
        keys = context @ self.key.T  # (B, N, D)   rows (W_K e_i)^T
        queries = tokens @ self.query.T  # (B, N+1, D) rows (W_Q e_j)^T
        values = context @ self.value.T  # (B, N, D)   rows (W_V e_i)^T
        scores = queries @ keys.transpose(1, 2)  # (B, N+1, N)  e_i^T W_K^T W_Q e_j
        update = (scores @ values) @ self.projection.T  # (B, N+1, D)
        if planted(NORMALISE_BY_TOKENS):  # planted bug: falsifier of icl.newton-schulz
            update = update / tokens.shape[1]
        return tokens + update

    @torch.no_grad()
    def load_weights(self, key: Tensor, query: Tensor, value: Tensor, projection: Tensor) -> None:
        """Copy explicit matrices (e.g. ``theory.icl_construction.one_step_gd_weights``)."""
        for name, src in (
            ("key", key),
            ("query", query),
            ("value", value),
            ("projection", projection),
        ):
            dst = getattr(self, name)
            if src.shape != dst.shape:
                raise ValueError(
                    f"{name} must have shape {tuple(dst.shape)}, got {tuple(src.shape)}"
                )
            dst.copy_(src)


class LinearSelfAttention(nn.Module):
    """A stack of ``num_layers`` linear self-attention layers with read-out y_hat = -h[:, -1, -1].

    ``embed_dim`` is d + 1 (features plus the label slot).
    """

    def __init__(
        self,
        embed_dim: int,
        num_layers: int = 1,
        *,
        init_std: float = 0.02,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive int, got {num_layers!r}")
        self.embed_dim = embed_dim
        self.layers = nn.ModuleList(
            LinearSelfAttentionLayer(embed_dim, init_std=init_std, generator=generator, dtype=dtype)
            for _ in range(num_layers)
        )

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (B, N + 1, embed_dim), query last -> hidden states of the same shape."""
        if tokens.dim() != 3 or tokens.shape[-1] != self.embed_dim or tokens.shape[1] < 2:
            raise ValueError(
                f"tokens must have shape (batch, N + 1 >= 2, {self.embed_dim}), "
                f"got {tuple(tokens.shape)}"
            )
        h = tokens
        for layer in self.layers:
            h = layer(h)
        return h

    def predict(self, tokens: Tensor) -> Tensor:
        """y_hat = -h[:, -1, -1] (the construction stores the negative prediction), shape (B,)."""
        return -self.forward(tokens)[:, -1, -1]

    def label_preconditioner(self) -> Tensor:
        """For one layer: the matrix A with y_hat = x_q^T A (sum_i y_i x_i) + (other terms).

        With e_q = [x_q; 0], e_i = [x_i; y_i], u = last row of P W_V = [u_x; u_y] and
        B = W_K^T W_Q with blocks B_xx (d x d) and B_yx (1 x d), the read-out is
        y_hat = -sum_i (u_x^T x_i + u_y y_i)(x_i^T B_xx x_q + y_i B_yx x_q). Its part linear in
        y_i is -sum_i y_i x_i^T (u_y B_xx + u_x B_yx) x_q, so A = -(u_y B_xx + u_x B_yx)^T.
        n A is the preconditioner to compare with Gamma^{-1} of Ahn et al. 2023 (whose
        prediction is x_q^T Gamma^{-1} (1/n) sum_i y_i x_i).
        """
        if len(self.layers) != 1:
            raise ValueError(
                f"label_preconditioner needs exactly one layer, got {len(self.layers)}"
            )
        layer = self.layers[0]
        d = self.embed_dim - 1
        u = (layer.projection @ layer.value)[-1]  # (D,) last row of P W_V
        bilinear = layer.key.T @ layer.query  # B = W_K^T W_Q, (D, D)
        coefficient = u[d] * bilinear[:d, :d] + torch.outer(u[:d], bilinear[d, :d])
        return (-coefficient.T).detach()
