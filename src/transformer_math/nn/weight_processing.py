"""TransformerLens's weight processing on the project's :class:`Transformer`, in place.

TransformerLens loads a checkpoint with four rewrites that change no log-probability
(``HookedTransformer.load_and_process_state_dict``, methods ``fold_layer_norm``,
``center_writing_weights``, ``center_unembed``, ``fold_value_biases``; Elhage et al. 2021 and
TransformerLens's ``further_comments.md``). With x_hat the normalised input of a pre-norm
sublayer and a following linear map y = W (gamma * x_hat + beta) + c (W: (out, d)):

1. fold_ln: W' = W diag(gamma), c' = c + W beta, then the norm keeps gamma = 1, beta = 0. For
   LayerNorm x_hat has mean zero, so the reading weights are also centred along the input axis,
   W' <- W' - mean_in(W') (W' x_hat unchanged). RMSNorm has no shift and no centring: only the
   gain is folded (TransformerLens ``fold_biases=False, center_weights=False``); Gemma's gain is
   1 + w (``rmsnorm_gemma``), so w becomes 0. The final norm folds into the unembedding.
2. center_writing_weights (LayerNorm models only, as TransformerLens): every matrix and bias that
   writes to the residual stream (token and learned position tables, W_O and b_O, the MLP's W_2
   and b_2) loses its mean over the model axis. Every reader is a LayerNorm, which removes that
   mean anyway.
3. center_unembed: W_U and b_U lose their mean over the vocabulary; each logit row moves by a
   constant, which log_softmax removes.
4. fold_value_biases: b_O' = b_O + sum_h W_O^h b_V^h, b_V' = 0 (attention rows sum to 1, so a
   value bias adds a constant W_O^h b_V^h to the output; grouped key/value heads repeated for
   their query heads, ``repeat_interleave`` as TransformerLens).

Tied embeddings are untied first (the unembedding changes, the token table must not). A bias
that the fold makes non-zero is added where the layer had none, as zeros on the layers of the
same kind (``config`` has one flag per kind and is updated to say so).
Post-norm blocks, cross-attention and adaLN conditioning are refused: the folds need a norm
directly before each sublayer's input projections.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.nn.feedforward import GeluMLP, SwiGLU
from transformer_math.nn.norms import GemmaRMSNorm, LayerNorm, RMSNorm
from transformer_math.nn.transformer import Transformer


@dataclass(frozen=True)
class ProcessedWeights:
    """What :func:`process_weights` did; ``skipped`` says which asked-for step did not apply
    and why (TransformerLens logs the same cases as warnings)."""

    fold_ln: bool
    center_writing_weights: bool
    center_unembed: bool
    fold_value_biases: bool
    skipped: tuple[str, ...] = ()


def _add_bias(linear: nn.Linear) -> Tensor:
    """The bias of ``linear``, created as zeros when it had none."""
    if linear.bias is None:
        linear.bias = nn.Parameter(torch.zeros(linear.out_features, dtype=linear.weight.dtype,
                                               device=linear.weight.device))
    return linear.bias


def _gain_and_shift(norm: nn.Module) -> tuple[Tensor | None, Tensor | None]:
    """(gamma, beta) of a norm as applied (Gemma: 1 + w); None where the norm has none."""
    if isinstance(norm, GemmaRMSNorm):
        return (None if norm.weight is None else 1.0 + norm.weight.to(torch.float32)), None
    if isinstance(norm, LayerNorm):
        return norm.weight, norm.bias
    if isinstance(norm, RMSNorm):
        return norm.weight, None
    raise ValueError(f"norm: cannot fold {type(norm).__name__}")


def _reset_norm(norm: nn.Module) -> None:
    """The identity gain (Gemma: w = 0) and zero shift: the norm is now TransformerLens's
    ``LayerNormPre`` / ``RMSNormPre``."""
    if isinstance(norm, GemmaRMSNorm):
        if norm.weight is not None:
            norm.weight.zero_()
        return
    if isinstance(norm, LayerNorm | RMSNorm):
        if norm.weight is not None:
            norm.weight.fill_(1.0)
        bias = getattr(norm, "bias", None)
        if bias is not None:
            bias.zero_()


def _fold_into(norm: nn.Module, readers: list[nn.Linear], centre: bool) -> None:
    """Fold ``norm``'s gain and shift into the ``readers`` that read its output."""
    gain, shift = _gain_and_shift(norm)
    for linear in readers:
        w = linear.weight
        if shift is not None and bool(shift.ne(0).any()):
            bias = _add_bias(linear)
            bias.add_(w @ shift)  # with the unscaled W, as TransformerLens folds biases first
        if gain is not None:
            w.mul_(gain.to(w.dtype)[None, :])
        if centre:
            w.sub_(w.mean(dim=1, keepdim=True))
    _reset_norm(norm)


def _centre_rows(linear: nn.Linear) -> None:
    """A writer W (d, in) and b (d,): subtract their means over the model axis d."""
    linear.weight.sub_(linear.weight.mean(dim=0, keepdim=True))
    if linear.bias is not None:
        linear.bias.sub_(linear.bias.mean())


def _readers(ffn: nn.Module) -> list[nn.Linear]:
    if isinstance(ffn, GeluMLP):
        return [ffn.fc_in]
    if isinstance(ffn, SwiGLU):
        return [ffn.gate, ffn.up]
    raise ValueError(f"ffn: cannot fold into {type(ffn).__name__}")


def _writer(ffn: nn.Module) -> nn.Linear:
    return ffn.fc_out if isinstance(ffn, GeluMLP) else ffn.down


def _check(model: Transformer) -> None:
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a transformer_math Transformer, got "
                         f"{type(model).__name__}")
    c = model.config
    if c.norm_placement != "pre":
        raise ValueError("model: weight processing needs pre-norm blocks (a norm right before "
                         f"each sublayer), got norm_placement={c.norm_placement!r}")
    if c.cross_attention or c.condition_size is not None:
        raise ValueError("model: weight processing does not handle cross-attention or adaLN "
                         "conditioning")


@torch.no_grad()
def process_weights(model: Transformer, fold_ln: bool = True, center_writing_weights: bool = True,
                    center_unembed: bool = True, fold_value_biases: bool = True
                    ) -> ProcessedWeights:
    """Rewrite ``model``'s weights in place as TransformerLens's ``from_pretrained`` does (the
    module docstring has the math); the log-probabilities stay equal up to float rounding.

    Returns what was done. Idempotent in effect: processing twice changes nothing more than
    rounding (every step maps its own output to itself).
    """
    _check(model)
    c = model.config
    skipped: list[str] = []
    layer_norm = c.norm == "layernorm"
    foldable = c.norm != "none"
    if model.lm_head is not None and model.embed_tokens is not None and (
            model.lm_head.weight is model.embed_tokens.weight):
        model.lm_head.weight = nn.Parameter(model.embed_tokens.weight.detach().clone())
    blocks = list(model.layers)
    if fold_ln and not foldable:
        skipped.append("fold_ln: the model has no norms (norm='none')")
    if fold_ln and foldable:
        for block in blocks:
            if block.attn is not None and block.attn_norm is not None:
                a = block.attn
                _fold_into(block.attn_norm, [a.q_proj, a.k_proj, a.v_proj], centre=layer_norm)
            if block.ffn is not None and block.ffn_norm is not None:
                _fold_into(block.ffn_norm, _readers(block.ffn), centre=layer_norm)
        if model.final_norm is not None and model.lm_head is not None:
            _fold_into(model.final_norm, [model.lm_head], centre=layer_norm)
    if center_writing_weights and not layer_norm:
        skipped.append(f"center_writing_weights: norm={c.norm!r} does not remove the mean "
                       "(TransformerLens centres LayerNorm models only)")
    if center_writing_weights and layer_norm:
        if model.embed_tokens is not None:
            table = model.embed_tokens.weight
            table.sub_(table.mean(dim=-1, keepdim=True))
        positions = getattr(model.embed_positions, "weight", None)
        if isinstance(positions, nn.Parameter):
            positions.sub_(positions.mean(dim=-1, keepdim=True))
        for block in blocks:
            if block.attn is not None:
                _centre_rows(block.attn.out_proj)
            if block.ffn is not None:
                _centre_rows(_writer(block.ffn))
    if center_unembed and model.lm_head is not None:
        head = model.lm_head
        head.weight.sub_(head.weight.mean(dim=0, keepdim=True))
        if head.bias is not None:
            head.bias.sub_(head.bias.mean())
    elif center_unembed:
        skipped.append("center_unembed: the model has no head")
    if fold_value_biases:
        for block in blocks:
            a = block.attn
            if a is None or a.v_proj.bias is None or not bool(a.v_proj.bias.ne(0).any()):
                continue
            b_v = a.v_proj.bias.view(a.num_kv_heads, a.head_dim).repeat_interleave(
                a.num_heads // a.num_kv_heads, dim=0).reshape(-1)  # (H d_head,)
            _add_bias(a.out_proj).add_(a.out_proj.weight @ b_v)
            a.v_proj.bias.zero_()
    _update_config(model)
    return ProcessedWeights(fold_ln and foldable, center_writing_weights and layer_norm,
                            center_unembed and model.lm_head is not None, fold_value_biases,
                            tuple(skipped))


def _update_config(model: Transformer) -> None:
    """The config says what the modules now are: untied head, biases where folds added them."""
    c = model.config
    attn = [b.attn for b in model.layers if b.attn is not None]
    ffn = [b.ffn for b in model.layers if b.ffn is not None]
    groups = {"qkv": [lin for a in attn for lin in (a.q_proj, a.k_proj, a.v_proj)],
              "out": [a.out_proj for a in attn],
              "mlp": [lin for f in ffn for lin in (*_readers(f), _writer(f))]}
    has = {}
    for group, linears in groups.items():  # one config flag per group: zeros where missing
        has[group] = any(lin.bias is not None for lin in linears)
        if has[group]:
            for lin in linears:
                _add_bias(lin)
    qkv_bias, out_bias, mlp_bias = has["qkv"], has["out"], has["mlp"]
    head_bias = model.lm_head is not None and model.lm_head.bias is not None
    new = dataclasses.replace(
        c, tie_embeddings=False, head_bias=head_bias or c.head_bias,
        attention_bias=qkv_bias if attn else c.attention_bias,
        attention_out_bias=out_bias if attn else c.attention_out_bias,
        mlp_bias=mlp_bias if ffn else c.mlp_bias)
    model.config = new
    for block in model.layers:
        block.config = new

