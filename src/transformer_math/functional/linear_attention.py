"""Linear (kernelised) attention: feature maps, parallel / chunked / recurrent forms, a backend.

Math (000 §8.3.2, corollary 3 "核技巧通往线性注意力"; Katharopoulos et al. 2020, eqs. 4-9;
Choromanski et al. 2021 "Performer", Lemma 1). Replace the softmax kernel by an explicit feature
map, kappa(q, k) = phi(q)^T phi(k) with phi: R^d -> R^m_{>=0}. Attention becomes a
Nadaraya-Watson estimate with that kernel,

    out_i = sum_j phi(q_i)^T phi(k_j) v_j / sum_j phi(q_i)^T phi(k_j)
          = phi(q_i)^T S / phi(q_i)^T z,
    S = sum_j phi(k_j) v_j^T (m x d_v),   z = sum_j phi(k_j),

and S, z do not depend on the query: the n x n kernel matrix is never formed, time is
O(n m d_v) and memory O(m d_v) beyond the inputs. With a causal mask the sums run over j <= i and
become a recurrence (the "Transformer is an RNN" identity):

    S_i = S_{i-1} + phi(k_i) v_i^T,   z_i = z_{i-1} + phi(k_i),
    out_i = phi(q_i)^T S_i / phi(q_i)^T z_i.

Three forms compute the same numbers (checked by ``kernel.linear-attention-rnn``):
- :func:`linear_attention_parallel`: the explicit (masked) kernel matrix, O(n^2); returns weights.
- :func:`linear_attention_recurrent`: the recurrence above, one position at a time, O(1) state.
- :func:`linear_attention`: the production form, O(n) memory: factorised when non-causal, chunked
  when causal (inside a chunk of c positions the masked c x c kernel, across chunks the state).

Feature maps (registry :data:`FEATURE_MAPS`, chosen by name):
- ``"elu"``: phi(x) = elu(x) + 1 (Katharopoulos et al. 2020, eq. 7), positive, defines its own
  kernel; it does not approximate softmax and does not use the logit ``scale``.
- ``"relu"``: phi(x) = max(x, 0); a query whose features are all zero gets a zero output.
- ``"favor"``: positive random features (Performer, FAVOR+): with rows w_r ~ N(0, I_d) of a
  projection W (m x d), phi(x)_r = exp(w_r^T x - |x|^2 / 2) / sqrt(m). Then
  E[phi(q)^T phi(k)] = exp(q^T k) exactly (unbiased) with relative error O(m^{-1/2}). To estimate
  the scaled softmax kernel exp(scale * q^T k) the map is applied to sqrt(scale) q and
  sqrt(scale) k. The projection is drawn by :func:`draw_random_projection` from an explicit
  ``torch.Generator`` (redraw = call it again with the generator), optionally with orthogonal
  blocks (Performer §3: orthogonal rows with chi-distributed norms keep unbiasedness and lower
  the variance).

Shapes follow the project: q (B, H, T, D), k (B, H, S, D), v (B, H, S, D_v). When S > T and
``causal`` is set the queries are the last T positions (bottom-right alignment, as in
``functional.masks.causal_mask``), which is what decoding with a cache needs.

Low precision (the attention contract of ``functional/attention.py``): float16 / bfloat16 inputs
are computed in float32 (features, kernel sums, normaliser) and the result is cast back, so
kernel values phi(q)^T phi(k) above 65504 do not overflow to inf / NaN. Empty sequences give
empty outputs (q_len = 0) or zero rows (k_len = 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.attention import (
    LOW_PRECISION,
    AttentionOutput,
    register_attention_backend,
    repeat_kv,
    validate_qkv,
)

FeatureMap = Callable[[Tensor], Tensor]

# Planted bugs (transformer_math.bugs): off unless a falsifier or `tmath mutants` plants them.
NO_NORMALISER = declare_bug(
    "linear-attention.no-normaliser",
    "the O(n) form returns phi(q)^T S without dividing by phi(q)^T z (the Nadaraya-Watson "
    "denominator dropped)", module=__name__,
    seen_in="a common slip in linear-attention kernels: the numerator S = sum phi(k) v^T is kept "
    "and the normaliser z = sum phi(k) forgotten (Katharopoulos et al. 2020 eq. 6 needs both)")
READ_BEFORE_WRITE = declare_bug(
    "linear-attention.read-before-write",
    "the recurrent form reads out_i from the state before adding (k_i, v_i): a token does not "
    "see itself (off by one)", module=__name__,
    seen_in="the classic off-by-one of RNN-style decoding loops (update and read order swapped)")
FAVOR_NO_NORM_CORRECTION = declare_bug(
    "linear-attention.favor-no-norm-correction",
    "positive random features exp(w^T x)/sqrt(m) without the exp(-|x|^2/2) factor: biased by "
    "exp((|q|^2 + |k|^2)/2)", module=__name__,
    seen_in="Performer (Choromanski et al. 2021) Lemma 1 needs the -|x|^2/2 term; dropping it "
    "is the usual slip when porting FAVOR+")


def elu_feature_map(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1 > 0 (Katharopoulos et al. 2020, eq. 7)."""
    return F.elu(x) + 1.0


def relu_feature_map(x: Tensor) -> Tensor:
    """phi(x) = max(x, 0) >= 0."""
    return F.relu(x)


FEATURE_MAPS: dict[str, FeatureMap | None] = {
    "elu": elu_feature_map,
    "relu": relu_feature_map,
    "favor": None,  # needs a projection; see positive_random_features
}


def draw_random_projection(
    head_dim: int,
    num_features: int,
    *,
    generator: torch.Generator,
    orthogonal: bool = True,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """Random projection W (num_features, head_dim) for positive random features.

    Rows are N(0, I_d) samples. With ``orthogonal`` they are drawn in blocks of ``head_dim``
    orthonormal rows (QR of a Gaussian block) rescaled by the norms of independent Gaussian
    vectors, so each row still has the N(0, I_d) marginal (Performer, "ORF") while rows in a
    block are exactly orthogonal. Only ``generator`` supplies randomness: calling again with the
    same generator draws the next (redrawn) projection.
    """
    if not isinstance(head_dim, int) or head_dim <= 0:
        raise ValueError(f"head_dim must be a positive int, got {head_dim!r}")
    if not isinstance(num_features, int) or num_features <= 0:
        raise ValueError(f"num_features must be a positive int, got {num_features!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if not orthogonal:
        w = torch.randn(num_features, head_dim, generator=generator, dtype=torch.float64)
        return w.to(dtype=dtype, device=device)
    blocks = []
    remaining = num_features
    while remaining > 0:
        g = torch.randn(head_dim, head_dim, generator=generator, dtype=torch.float64)
        qmat, rmat = torch.linalg.qr(g)
        qmat = qmat * torch.sign(torch.diagonal(rmat)).unsqueeze(0)  # Haar-distributed
        gauss = torch.randn(head_dim, head_dim, generator=generator, dtype=torch.float64)
        norms = gauss.norm(dim=1)
        block = qmat.T * norms.unsqueeze(1)  # rows orthogonal, norms chi_d
        blocks.append(block[: min(remaining, head_dim)])
        remaining -= head_dim
    return torch.cat(blocks, dim=0).to(dtype=dtype, device=device)


def _favor_exponent(x: Tensor, projection: Tensor) -> Tensor:
    """w_r^T x - |x|^2 / 2 for every row w_r of ``projection``: (..., m)."""
    exponent = torch.matmul(x, projection.to(x.dtype).T)
    if planted(FAVOR_NO_NORM_CORRECTION):  # planted bug: falsifier of kernel.random-features
        return exponent
    return exponent - 0.5 * (x * x).sum(dim=-1, keepdim=True)


def positive_random_features(
    x: Tensor, projection: Tensor, *, stabilizer: Tensor | None = None
) -> Tensor:
    """phi(x)_r = exp(w_r^T x - |x|^2 / 2) / sqrt(m)  (Performer, Lemma 1), shape (..., m).

    E_w[phi(q)^T phi(k)] = exp(q^T k) because E[exp(w^T (q + k))] = exp(|q + k|^2 / 2).
    Without the -|x|^2/2 term (the planted bug ``linear-attention.favor-no-norm-correction``)
    the estimate is biased by the factor exp((|q|^2 + |k|^2) / 2).
    ``stabilizer`` (broadcastable to the exponent) is subtracted from the exponent; a constant
    per query row or one shared by all keys cancels in the attention ratio.
    """
    if projection.dim() != 2 or projection.shape[1] != x.shape[-1]:
        raise ValueError(
            f"projection must have shape (num_features, {x.shape[-1]}), "
            f"got {tuple(projection.shape)}"
        )
    exponent = _favor_exponent(x, projection)  # (..., m)
    if stabilizer is not None:
        exponent = exponent - stabilizer
    return torch.exp(exponent) / math.sqrt(projection.shape[0])


def feature_maps_qk(
    q: Tensor,
    k: Tensor,
    *,
    feature_map: str,
    scale: float | None,
    projection: Tensor | None,
) -> tuple[Tensor, Tensor]:
    """phi(q) (B, H, T, m) and phi(k) (B, H, S, m) for the named feature map.

    For ``"favor"`` the inputs are multiplied by sqrt(scale) (default 1/sqrt(head_dim)) so that
    phi(q)^T phi(k) estimates exp(scale q^T k); per-query and global key stabilisers are
    subtracted (they cancel in the normalised output).
    """
    if feature_map not in FEATURE_MAPS:
        raise ValueError(f"feature_map must be one of {sorted(FEATURE_MAPS)}, got {feature_map!r}")
    if feature_map != "favor":
        if projection is not None:
            raise ValueError(f"projection is only used by feature_map='favor', got {feature_map!r}")
        fn = FEATURE_MAPS[feature_map]
        assert fn is not None
        return fn(q), fn(k)
    if projection is None:
        raise ValueError("feature_map='favor' needs a projection (see draw_random_projection)")
    head_dim = q.shape[-1]
    scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0 for the softmax kernel, got {scale}")
    root = math.sqrt(scale)
    qs, ks = q * root, k * root
    q_exp = _favor_exponent(qs, projection)
    k_exp = _favor_exponent(ks, projection)
    q_stab = q_exp.amax(dim=-1, keepdim=True)  # per query row: cancels in the ratio
    k_stab = k_exp.amax(dim=(-2, -1), keepdim=True)  # one constant for all keys: cancels
    m = projection.shape[0]
    return torch.exp(q_exp - q_stab) / math.sqrt(m), torch.exp(k_exp - k_stab) / math.sqrt(m)


def _prepare(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str,
    causal: bool,
    scale: float | None,
    projection: Tensor | None,
    key_padding_mask: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    validate_qkv(q, k, v)
    if q.dtype in LOW_PRECISION:  # float32 features and sums; callers cast the result back
        q, k, v = q.float(), k.float(), v.float()
    t, s = q.shape[-2], k.shape[-2]
    if causal and s < t:
        raise ValueError(f"causal linear attention needs k_len >= q_len, got q_len={t}, k_len={s}")
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    phi_q, phi_k = feature_maps_qk(
        q, k, feature_map=feature_map, scale=scale, projection=projection
    )
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool or tuple(key_padding_mask.shape) != (q.shape[0], s):
            raise ValueError(
                f"key_padding_mask must be bool of shape (batch, k_len) = ({q.shape[0]}, {s}), "
                f"got {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}"
            )
        phi_k = phi_k.masked_fill(key_padding_mask[:, None, :, None], 0.0)
    return phi_q, phi_k, v


def _safe_divide(num: Tensor, den: Tensor) -> Tensor:
    """num / den with den (..., 1); rows with den == 0 (no admissible key) give 0, not NaN."""
    return num / torch.where(den == 0, torch.ones_like(den), den)


def linear_attention_parallel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str = "elu",
    causal: bool = False,
    scale: float | None = None,
    projection: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
) -> AttentionOutput:
    """Parallel form: the explicit kernel matrix K_ij = phi(q_i)^T phi(k_j) (masked when causal),
    A = K / rowsum(K), out = A V. O(n^2) memory; returns the weights A (B, H, T, S)."""
    phi_q, phi_k, v = _prepare(
        q, k, v, feature_map=feature_map, causal=causal, scale=scale, projection=projection,
        key_padding_mask=key_padding_mask,
    )
    kernel = torch.matmul(phi_q, phi_k.transpose(-2, -1))  # (B, H, T, S)
    if causal:
        t, s = q.shape[-2], k.shape[-2]
        allowed = torch.ones(t, s, dtype=torch.bool, device=q.device).tril(diagonal=s - t)
        kernel = kernel.masked_fill(~allowed, 0.0)
    weights = _safe_divide(kernel, kernel.sum(dim=-1, keepdim=True))
    out = torch.matmul(weights, v)
    return AttentionOutput(out.to(q.dtype), weights.to(q.dtype))


@dataclass
class LinearAttentionState:
    """The RNN state of causal linear attention: S (B, H, m, D_v) and z (B, H, m)."""

    S: Tensor
    z: Tensor

    @staticmethod
    def zeros(
        batch: int, heads: int, num_features: int, value_dim: int, *, like: Tensor
    ) -> LinearAttentionState:
        return LinearAttentionState(
            S=like.new_zeros(batch, heads, num_features, value_dim),
            z=like.new_zeros(batch, heads, num_features),
        )

    def update(self, phi_k: Tensor, v: Tensor) -> None:
        """S += phi(k) v^T, z += phi(k) for one position: phi_k (B, H, m), v (B, H, D_v)."""
        self.S = self.S + phi_k.unsqueeze(-1) * v.unsqueeze(-2)
        self.z = self.z + phi_k

    def read(self, phi_q: Tensor) -> Tensor:
        """out = phi(q)^T S / phi(q)^T z for one position: phi_q (B, H, m) -> (B, H, D_v)."""
        num = torch.einsum("bhm,bhmv->bhv", phi_q, self.S)
        den = torch.einsum("bhm,bhm->bh", phi_q, self.z).unsqueeze(-1)
        return _safe_divide(num, den)


def linear_attention_recurrent(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str = "elu",
    scale: float | None = None,
    projection: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
) -> Tensor:
    """Causal linear attention as an RNN: for each position i, update S, z with (k_i, v_i), then
    read out_i = phi(q_i)^T S / phi(q_i)^T z. The state is O(m D_v) whatever the length.

    With k_len > q_len the first k_len - q_len keys are absorbed into the state first (the
    queries are the last positions). Reading before the update (the planted bug
    ``linear-attention.read-before-write``) is off by one: a token does not see itself.
    """
    phi_q, phi_k, v = _prepare(
        q, k, v, feature_map=feature_map, causal=True, scale=scale, projection=projection,
        key_padding_mask=key_padding_mask,
    )
    b, h, t, m = phi_q.shape
    s = phi_k.shape[-2]
    state = LinearAttentionState.zeros(b, h, m, v.shape[-1], like=v)
    offset = s - t
    for j in range(offset):
        state.update(phi_k[:, :, j], v[:, :, j])
    outputs = [v.new_zeros((b, h, 0, v.shape[-1]))]  # q_len = 0 gives an empty output
    read_first = planted(READ_BEFORE_WRITE)  # planted bug: falsifier of kernel.linear-attention-rnn
    for i in range(t):
        if read_first:
            outputs.append(state.read(phi_q[:, :, i]))
            state.update(phi_k[:, :, offset + i], v[:, :, offset + i])
        else:
            state.update(phi_k[:, :, offset + i], v[:, :, offset + i])
            outputs.append(state.read(phi_q[:, :, i]))
    return torch.cat([o if o.dim() == 4 else o.unsqueeze(2) for o in outputs], dim=2).to(q.dtype)


def linear_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str = "elu",
    causal: bool = False,
    scale: float | None = None,
    projection: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    chunk_size: int = 64,
) -> Tensor:
    """Linear attention in O(n) memory (the form to use in models); see the module docstring.

    Non-causal: out = phi(Q) S / phi(Q) z with S = phi(K)^T V, z = phi(K)^T 1.
    Causal: chunks of ``chunk_size`` query positions; inside a chunk the masked c x c kernel,
    across chunks the running state (S, z) of all earlier keys. Peak extra memory
    O(c^2 + c m + m D_v) per (batch, head), never n x n.
    """
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    phi_q, phi_k, v = _prepare(
        q, k, v, feature_map=feature_map, causal=causal, scale=scale, projection=projection,
        key_padding_mask=key_padding_mask,
    )
    # planted bug: falsifier of kernel.linear-vs-softmax-retrieval (and a test of the
    # kernel-regression identity, tests/nn/test_attention_kernel_identities.py)
    drop_normaliser = planted(NO_NORMALISER)
    if not causal:
        S = torch.einsum("bhsm,bhsv->bhmv", phi_k, v)  # (B, H, m, D_v)
        z = phi_k.sum(dim=-2)  # (B, H, m)
        num = torch.matmul(phi_q, S)  # (B, H, T, D_v)
        if drop_normaliser:
            return num.to(q.dtype)
        den = torch.einsum("bhtm,bhm->bht", phi_q, z).unsqueeze(-1)
        return _safe_divide(num, den).to(q.dtype)
    t, s = phi_q.shape[-2], phi_k.shape[-2]
    offset = s - t
    S = torch.einsum("bhsm,bhsv->bhmv", phi_k[:, :, :offset], v[:, :, :offset])
    z = phi_k[:, :, :offset].sum(dim=-2)
    outputs = [v.new_zeros((*v.shape[:2], 0, v.shape[-1]))]  # q_len = 0 gives an empty output
    for start in range(0, t, chunk_size):
        stop = min(start + chunk_size, t)
        pq = phi_q[:, :, start:stop]  # (B, H, c, m)
        pk = phi_k[:, :, offset + start : offset + stop]
        vc = v[:, :, offset + start : offset + stop]
        intra = torch.matmul(pq, pk.transpose(-2, -1)).tril()  # (B, H, c, c), j <= i
        num = torch.matmul(pq, S) + torch.matmul(intra, vc)
        den = (torch.einsum("bhcm,bhm->bhc", pq, z) + intra.sum(-1)).unsqueeze(-1)
        outputs.append(num if drop_normaliser else _safe_divide(num, den))
        S = S + torch.einsum("bhcm,bhcv->bhmv", pk, vc)
        z = z + pk.sum(dim=-2)
    return torch.cat(outputs, dim=2).to(q.dtype)


def _key_mask_from_additive(mask: Tensor, batch: int, k_len: int) -> Tensor:
    """Turn an additive mask that only removes keys into a (B, S) padding mask, else raise.

    The checks are data-dependent: under ``torch.compile`` they become runtime assertions
    (``torch._assert_async``, a RuntimeError with the same message) instead of Python branches.
    """
    blocked = torch.isneginf(mask)  # (B|1, H|1, T, S)
    if torch.compiler.is_compiling():
        ok = ~(torch.isfinite(mask) & (mask != 0)).any()
        torch._assert_async(ok, "the linear backend supports only key-padding and causal masks")
        same = (blocked == blocked[..., :1, :]).all() & (blocked == blocked[:, :1]).all()
        torch._assert_async(same, "the linear backend supports only key-padding masks")
        return blocked[:, 0, 0, :].expand(batch, k_len)
    finite = torch.isfinite(mask)
    if bool((finite & (mask != 0)).any()):
        raise ValueError(
            "the linear backend supports only key-padding and causal masks; got an additive mask "
            "with finite nonzero biases (a bias cannot be factorised through the feature map)"
        )
    if not bool((blocked == blocked[..., :1, :]).all()) or not bool(
        (blocked == blocked[:, :1]).all()
    ):
        raise ValueError(
            "the linear backend supports only masks that drop the same keys for every query and "
            "head (key padding); use is_causal for causal masking"
        )
    return blocked[:, 0, 0, :].expand(batch, k_len)


@register_attention_backend("linear", exact=False, weights=True,
                            description="kernel feature map phi(q)phi(k)^T (not softmax)")
def linear_backend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float,
    dropout_p: float,
    return_weights: bool,
) -> AttentionOutput:
    """``MultiHeadAttention(..., backend="linear")``: elu+1 linear attention, O(n) memory.

    The elu+1 kernel defines its own similarity, so ``scale`` is not used. Masks: only
    key-padding masks (the same keys dropped for every query) and ``is_causal``; any other mask
    raises. Dropout on attention weights has no O(n) meaning and raises. ``return_weights``
    materialises the n x n weights with the parallel form (for diagnostics only).
    """
    del scale  # elu+1 defines its own kernel; documented above
    if dropout_p > 0:
        raise ValueError(f"the linear backend does not support attention dropout, got {dropout_p}")
    key_padding_mask = None
    if attn_mask is not None:
        key_padding_mask = _key_mask_from_additive(attn_mask, q.shape[0], k.shape[-2])
    if return_weights:
        return linear_attention_parallel(
            q, k, v, feature_map="elu", causal=is_causal, key_padding_mask=key_padding_mask
        )
    out = linear_attention(
        q, k, v, feature_map="elu", causal=is_causal, key_padding_mask=key_padding_mask
    )
    return AttentionOutput(out, None)
