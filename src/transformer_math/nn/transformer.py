"""The one Transformer of the project: a block and a stack, both built from ``TransformerConfig``.

Math (000 §8.3.1 attention, §8.3.3 positions, §8.3.7 residuals and norms; Vaswani et al. 2017
§3.1; Radford et al. 2019; Xiong et al. 2020 eqs. 1-2; Touvron et al. 2023):

    h_0 = Embed(x) [+ P(pos)]
    pre-norm:   h <- h + Attn(N(h)),   [h <- h + CrossAttn(N(h), memory)],   h <- h + FFN(N(h))
    post-norm:  h <- N(h + Attn(h)),   [h <- N(h + CrossAttn(h, memory))],   h <- N(h + FFN(h))
    out = Head(N_f(h_L))

With ``condition_size`` set (adaLN-Zero, DiT: Peebles & Xie 2023 §3.2) a condition c (B, C)
modulates each pre-norm sublayer: h <- h + g(c) * f(N(h) (1 + s(c)) + b(c)), zero at init.

A residual sublayer is one forward-Euler step h_{l+1} = h_l + f(h_l) (000 §8.3.7 "理论 A").
Positions enter as an added code (learned, sinusoidal), rotated q/k (RoPE, shared by every
layer), or a logit bias (ALiBi, relative). Every model of the project is a preset of the config:
the checkpoint families (``checkpoints/adapters``), the experiment models, the policy trunks.

Hook points (``nn/hooks.py``), per block ``layers.{i}``: ``hook_resid_pre`` (B, T, d) input,
``hook_attn_out`` (B, T, d) the attention branch f(h) before dropout, ``hook_resid_mid`` after
the attention sublayer, ``hook_cross_out``/``hook_resid_cross`` for cross-attention,
``hook_ffn_out`` the FFN branch, ``hook_resid_post`` the block output; inside ``attn``: q, k, v,
scores, pattern, z (``nn/attention.py``), in ``ffn`` the neurons (``nn/feedforward.py``), in
every norm its scale and output (``nn/norms.py``). Model level: ``hook_tok_embed`` (B, T, d) the
token embedding (Gemma's scale included), ``hook_pos_embed`` (B, T, d) the additive position code
(learned, sinusoidal; absent for RoPE/ALiBi), ``hook_embed`` (B, T, d) their sum h_0,
``hook_final`` (B, T, d) after the final norm. TransformerLens's names for these:
``nn/tl_names.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.masks import sliding_window_mask
from transformer_math.functional.rope import can_read_values, is_tracing
from transformer_math.nn.adaln import AdaLNModulation, Modulation, modulate
from transformer_math.nn.attention import KVCache, MultiHeadAttention, count_parameters
from transformer_math.nn.config import SUBLAYERS, TransformerConfig
from transformer_math.nn.feedforward import build_feedforward
from transformer_math.nn.hooks import HookPoint, hooks_live
from transformer_math.nn.init import normal_matrices_, reset_children, seeded
from transformer_math.nn.norms import build_norm
from transformer_math.nn.position import POSITIONS, RotaryEmbedding

# Planted bug owned by the position claims (issue 14): falsifier of
# position.kv-cache-compatibility.
KV_POSITIONS_RESTART = declare_bug(
    "position.kv-positions-restart",
    "with a KV cache, the new tokens get positions 0 .. t-1 instead of past .. past + t - 1 "
    "(the cache offset is forgotten)",
    module=__name__, seen_in="decoding loops that rebuild arange(seq_len) for every step")
# Planted bug owned by the position claims (issue 31: moved here from the extrapolation
# experiment's private mask): falsifier of position.window-relative and
# position.extrapolation-experiment.
WINDOW_MASK_SIGN = declare_bug(
    "position.window-mask-sign",
    "the sliding-window mask compares the signed offset the wrong way round (j - i < W instead "
    "of i - j < W): every past key stays visible and the window does nothing",
    module=__name__,
    seen_in="sliding-window masks built from (j - i) vs (i - j); the window silently becomes "
            "full causal attention")
PRE_LN_AS_POST_LN = declare_bug(
    "norm.pre-ln-as-post-ln",
    "a block configured as Pre-LN normalises after the residual addition, N(h + f(h)), as "
    "Post-LN does (the final norm stays)",
    module=__name__,
    seen_in="the two placements differ by where one call sits (Xiong et al. 2020 eqs. 1-2); "
    "004 'Pre-Norm vs Post-Norm' table",
)
RESIDUAL_DROPPED = declare_bug(
    "residual.dropped",
    "a sublayer returns its branch instead of the residual sum: h <- f(N h) (pre) or "
    "h <- N(f h) (post), the identity path is lost",
    module=__name__,
    seen_in="'x = self.attn(x)' for 'x = x + self.attn(x)', a common slip in hand-written "
    "blocks; 000 §8.3.7 反面 (no residual: the Jacobian product vanishes)",
)
CROSS_MASK_DROPPED = declare_bug(
    "transformer.cross-attention-mask-dropped",
    "the decoder's cross-attention ignores memory_key_padding_mask: padded source tokens are "
    "attended",
    module=__name__,
    seen_in="004's DecoderLayer, whose source mask lands in the value slot and is never applied",
)

_PLUMBING = "tests/checkpoints/test_plumbing_bugs.py::"
LEFT_PAD_POSITIONS = declare_bug(
    "transformer.left-pad-positions-counted",
    "with a left-padded attention_mask, positions run 0 .. T-1 over the padding too instead of "
    "counting real tokens only (cumsum(mask) - 1): a padded row is rotated differently from the "
    "same prompt unpadded",
    module=__name__, seen_in="batched generation that builds position ids with arange(T)",
    test=_PLUMBING + "test_left_padded_positions_count_real_tokens")
LOSS_UNSHIFTED = declare_bug(
    "transformer.loss-labels-unshifted",
    "the causal LM loss compares logits[:, t] with labels[:, t] instead of labels[:, t + 1] "
    "(the model is scored on copying its input)",
    module=__name__, seen_in="forgetting the shift that transformers' ForCausalLMLoss applies",
    test=_PLUMBING + "test_loss_is_the_shifted_next_token_loss")
LOGITS_KEEP_FIRST = declare_bug(
    "transformer.logits-to-keep-first",
    "logits_to_keep=k computes the head at the first k positions instead of the last k, so "
    "generation's prefill predicts the next token from the prompt's first position",
    module=__name__, seen_in="h[:, :k] for h[:, -k:] when slicing before the LM head",
    test=_PLUMBING + "test_logits_to_keep_is_the_last_k_positions")
WINDOW_OFF_BY_ONE = declare_bug(
    "transformer.sliding-window-off-by-one",
    "the sliding window keeps W + 1 keys (p - W <= j <= p) instead of W (p - W < j <= p)",
    module=__name__, seen_in="'<' vs '<=' in window masks; Mistral's window counts the query",
    test=_PLUMBING + "test_sliding_window_keeps_exactly_w_keys")
EMBED_SCALE_DROPPED = declare_bug(
    "transformer.embedding-scale-dropped",
    "Gemma's token embeddings are not multiplied by sqrt(d) (the config's embedding_scale)",
    module=__name__, seen_in="Gemma ports built on a Llama skeleton",
    test=_PLUMBING + "test_gemma_embedding_scale_and_norm_offset")

PADDING_MASK_INVERTED = declare_bug(
    "transformer.padding-mask-inverted",
    "attention_mask (1 = token, HF convention) is passed on as the key padding mask without the "
    "negation (True = pad, PyTorch convention): real tokens are masked, padding attended",
    module=__name__,
    seen_in="the HF / PyTorch mask-convention mix-up (nn.MultiheadAttention's "
    "key_padding_mask is True at pads; HF attention_mask is 1 at tokens)",
)


def _attention(config: TransformerConfig, rotary: RotaryEmbedding | None, alibi: bool
               ) -> MultiHeadAttention:
    return MultiHeadAttention(
        config.hidden_size, config.num_heads, num_kv_heads=config.kv_heads,
        head_dim=config.dim_per_head, bias=config.attention_bias, out_bias=config.out_bias,
        backend=config.attention_backend, dropout=config.dropout, rotary=rotary, alibi=alibi,
    )


class TransformerBlock(nn.Module):
    """One residual block: the sublayers named by ``config.sublayers`` (+ cross-attention)."""

    def __init__(self, config: TransformerConfig, rotary: RotaryEmbedding | None = None,
                 alibi: bool = False) -> None:
        super().__init__()
        self.config = config
        self.pre = config.norm_placement == "pre"
        parts = SUBLAYERS[config.sublayers]
        d, eps = config.hidden_size, config.eps
        self.attn_norm = build_norm(config.norm, d, eps=eps) if "attention" in parts else None
        self.attn = _attention(config, rotary, alibi) if "attention" in parts else None
        self.cross_norm = build_norm(config.norm, d, eps=eps) if config.cross_attention else None
        self.cross_attn = _attention(config, None, False) if config.cross_attention else None
        self.ffn_norm = build_norm(config.norm, d, eps=eps) if "ffn" in parts else None
        self.ffn = (build_feedforward(config.feedforward, d, config.ffn_size,
                                      bias=config.mlp_bias) if "ffn" in parts else None)
        # no module at p = 0: a Dropout call per sublayer and token is measurable in decoding
        self.dropout = nn.Dropout(config.dropout) if config.dropout > 0 else None
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        self.hook_attn_out = HookPoint()  # (B, T, d)
        self.hook_resid_mid = HookPoint()  # (B, T, d)
        self.hook_cross_out = HookPoint()  # (B, T, d)
        self.hook_resid_cross = HookPoint()  # (B, T, d)
        self.hook_ffn_out = HookPoint()  # (B, T, d)
        self.hook_resid_post = HookPoint()  # (B, T, d)
        n_parts = len(parts) + int(config.cross_attention)
        # adaLN-Zero (nn/adaln.py): (shift, scale, gate) per sublayer from the condition
        self.adaln = (AdaLNModulation(config.condition_size, d, n_parts)
                      if config.condition_size is not None else None)

    def _sublayer(self, h: Tensor, norm: nn.Module, branch: Callable[[Tensor], Tensor],
                  hook: HookPoint | None, mod: Modulation | None = None) -> Tensor:
        """pre: h + drop(f(N h)); post: N(h + drop(f h)); ``hook`` sees f's output. With
        adaLN (``mod`` = shift, scale, gate): h + gate * drop(f(N(h) (1 + scale) + shift))."""
        pre = self.pre and not planted(PRE_LN_AS_POST_LN)  # planted bug: pre-vs-post-norm
        x = norm(h) if pre else h
        if mod is not None:
            x = modulate(x, mod[0], mod[1])
        out = branch(x)
        if hook is not None:
            out = hook(out)
        if self.dropout is not None:
            out = self.dropout(out)
        if mod is not None:
            out = mod[2] * out
        if planted(RESIDUAL_DROPPED):  # planted bug: falsifier of architecture.residual-*
            return out if pre else norm(out)
        return h + out if pre else norm(h + out)

    def forward(
        self,
        h: Tensor,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
        position_ids: Tensor | None = None,
        kv_cache: KVCache | None = None,
        memory: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        condition: Tensor | None = None,
        rotary_tables: tuple[Tensor, Tensor] | None = None,
        key_start: int = 0,
    ) -> Tensor:
        """h (B, T, d) -> (B, T, d). ``memory`` (B, S, d) feeds the cross-attention;
        ``condition`` (B, condition_size) the adaLN modulation (required iff configured);
        ``rotary_tables``: the self-attention's cos/sin at ``position_ids`` when the model
        looked them up once for every layer; ``key_start``: the first cached key the
        self-attention's queries may see (``MultiHeadAttention.forward``)."""
        causal = self.config.causal if is_causal is None else is_causal
        live = hooks_live()  # hook points are skipped while nothing listens
        mods: list[Modulation | None] = [None, None, None]
        if self.adaln is not None:
            if condition is None:
                raise ValueError(f"condition (B, {self.config.condition_size}) is required: "
                                 "this block is adaLN-conditioned (config.condition_size)")
            present = [m is not None for m in (self.attn, self.cross_attn, self.ffn)]
            given = iter(self.adaln(condition))  # one triple per present sublayer, in order
            mods = [next(given) if p else None for p in present]
        if live:
            h = self.hook_resid_pre(h)
        if self.attn is not None:
            assert self.attn_norm is not None
            attn = self.attn

            def self_attention(x: Tensor) -> Tensor:
                return attn(x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                            is_causal=causal, kv_cache=kv_cache, position_ids=position_ids,
                            rotary_tables=rotary_tables, key_start=key_start)

            h = self._sublayer(h, self.attn_norm, self_attention,
                               self.hook_attn_out if live else None, mods[0])
            if live:
                h = self.hook_resid_mid(h)
        if self.cross_attn is not None:
            assert self.cross_norm is not None
            if memory is None:
                raise ValueError("memory (B, S, hidden_size) is required: this block has "
                                 "cross-attention")
            if (memory.dim() != 3 or memory.shape[0] != h.shape[0]
                    or memory.shape[-1] != h.shape[-1]):
                raise ValueError(f"memory must have shape (batch={h.shape[0]}, src_len, "
                                 f"{h.shape[-1]}), got {tuple(memory.shape)}")
            cross = self.cross_attn

            source_mask = (None if planted(CROSS_MASK_DROPPED)  # planted bug: encoder-decoder
                           else memory_key_padding_mask)

            def cross_attention(x: Tensor) -> Tensor:
                return cross(x, memory, memory, key_padding_mask=source_mask)

            h = self._sublayer(h, self.cross_norm, cross_attention,
                               self.hook_cross_out if live else None, mods[1])
            if live:
                h = self.hook_resid_cross(h)
        if self.ffn is not None:
            assert self.ffn_norm is not None
            h = self._sublayer(h, self.ffn_norm, self.ffn, self.hook_ffn_out if live else None,
                               mods[2])
        return self.hook_resid_post(h) if live else h


@dataclass(frozen=True)
class CausalLMOutput:
    """``forward(..., labels=...)`` / ``forward(..., return_dict=True)``: the logits (B, T, V)
    and the shifted cross-entropy (a scalar, or None without labels)."""

    logits: Tensor
    loss: Tensor | None = None


def _check_logits_to_keep(logits_to_keep: object, labels: Tensor | None) -> None:
    if isinstance(logits_to_keep, bool) or not isinstance(logits_to_keep, int) or (
            logits_to_keep < 0):
        raise ValueError(f"logits_to_keep must be an int >= 0 (0 = every position, k = the last "
                         f"k), got {logits_to_keep!r}")
    if labels is not None:
        raise ValueError(f"logits_to_keep={logits_to_keep} cannot be combined with labels: the "
                         f"loss needs the logits of every position (pass logits_to_keep=0)")


def causal_lm_loss(logits: Tensor, labels: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean cross-entropy of ``logits[:, t]`` (B, T, V) predicting ``labels[:, t + 1]`` (B, T)
    over the labels != ``ignore_index`` (float32; transformers' ``ForCausalLMLoss``)."""
    if (not isinstance(labels, Tensor) or labels.dtype != torch.long
            or tuple(labels.shape) != tuple(logits.shape[:2])):
        raise ValueError(f"labels must be a LongTensor of shape {tuple(logits.shape[:2])}, got "
                         f"{getattr(labels, 'dtype', type(labels).__name__)} "
                         f"{tuple(getattr(labels, 'shape', ()))}")
    target = torch.nn.functional.pad(labels, (0, 1), value=ignore_index)[:, 1:]
    if planted(LOSS_UNSHIFTED):  # planted bug: labels[:, t] for logits[:, t]
        target = labels
    return torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1).to(logits.device),
        ignore_index=ignore_index)


class Transformer(nn.Module):
    """Embedding, ``num_layers`` :class:`TransformerBlock`, final norm, head.

    ``forward(input_ids)`` for token models, ``forward(inputs_embeds=x)`` for vector inputs;
    returns logits (B, T, head) or, without a head, the final hidden states (B, T, d).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = c = config
        d = c.hidden_size
        self.embed_tokens = nn.Embedding(c.vocab_size, d) if c.vocab_size is not None else None
        self.embed_inputs = nn.Linear(c.input_size, d) if c.input_size is not None else None
        parts = POSITIONS.get(c.position)(c)
        self.embed_positions = parts.embed
        self.rotary = parts.rotary
        self.relative_bias = parts.bias
        self.layers = nn.ModuleList(
            TransformerBlock(c, parts.rotary, parts.alibi) for _ in range(c.num_layers))
        self.final_norm = build_norm(c.norm, d, eps=c.eps) if c.has_final_norm else None
        # adaLN-Zero on the final norm (DiT's final layer: shift and scale, no gate)
        self.final_adaln = (AdaLNModulation(c.condition_size, d, 1, gated=False)
                            if c.condition_size is not None and self.final_norm is not None
                            else None)
        self.lm_head = nn.Linear(d, c.head_size, bias=c.head_bias) if c.head_size else None
        if c.tie_embeddings:
            assert self.lm_head is not None and self.embed_tokens is not None
            self.lm_head.weight = self.embed_tokens.weight
        self.hook_tok_embed = HookPoint()  # (B, T, d) the token (or input) embedding alone
        self.hook_pos_embed = HookPoint()  # (B, T, d) the additive position code alone
        self.hook_embed = HookPoint()  # (B, T, d) their sum h_0
        self.hook_final = HookPoint()  # (B, T, d)
        self.register_load_state_dict_post_hook(_retie_embeddings)

    # ------------------------------------------------------------------ initialisation
    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """``init="torch"``: every layer's PyTorch default (``nn.init`` rules); ``"gpt2"``: then
        every matrix ~ N(0, 0.02^2) (Radford et al. 2019; HF ``initializer_range``). Then the
        token table ~ N(0, embedding_init_std^2) if set and a learned position table
        ~ N(0, position_init_std^2) (0 gives a zero table)."""
        reset_children(self, generator)
        if self.config.init == "gpt2":
            normal_matrices_(self, generator, 0.02)
            for module in self.modules():  # adaLN-Zero stays zero (DiT §3.2)
                if isinstance(module, AdaLNModulation):
                    module.reset_parameters()
        if self.config.embedding_init_std is not None and self.embed_tokens is not None:
            nn.init.normal_(self.embed_tokens.weight, 0.0, self.config.embedding_init_std,
                            generator=generator)
        weight = getattr(self.embed_positions, "weight", None)
        if isinstance(weight, nn.Parameter):
            if self.config.position_init_std > 0:
                nn.init.normal_(weight, 0.0, self.config.position_init_std, generator=generator)
            else:
                weight.zero_()

    # ------------------------------------------------------------------ forward
    def new_caches(self) -> list[KVCache]:
        """One empty :class:`KVCache` per layer."""
        return [KVCache() for _ in self.layers]

    def set_rotary(self, rotary: RotaryEmbedding) -> None:
        """Swap the rotary embedding of every layer (a context-extension method, no training)."""
        if self.rotary is None:
            raise ValueError(f"set_rotary needs position='rope', got {self.config.position!r}")
        self.rotary = rotary
        for layer in self.layers:
            if layer.attn is not None:
                layer.attn.rotary = rotary

    def embed(self, input_ids: Tensor | None, inputs_embeds: Tensor | None,
              position_ids: Tensor) -> Tensor:
        """h_0 (B, T, d): token or vector embedding plus the additive position code.

        ``input_ids`` are checked as in :meth:`forward` (LongTensor (B, T), ids in
        [0, vocab_size)): ValueError naming input_ids otherwise.
        """
        if input_ids is not None:
            self._check_tokens(input_ids)
        return self._embed(input_ids, inputs_embeds, position_ids)

    def _embed(self, input_ids: Tensor | None, inputs_embeds: Tensor | None,
               position_ids: Tensor) -> Tensor:
        c = self.config
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            if self.embed_tokens is None:
                raise ValueError("this model takes inputs_embeds (config.vocab_size is None)")
            h = self.embed_tokens(input_ids)
            if c.embedding_scale != 1.0 and not planted(EMBED_SCALE_DROPPED):
                # Gemma: E[x] * sqrt(d), the scale rounded to h's dtype
                h = h * torch.tensor(c.embedding_scale, device=h.device).to(h.dtype)
        else:
            assert inputs_embeds is not None
            width = c.input_size if c.input_size is not None else c.hidden_size
            if (not isinstance(inputs_embeds, Tensor) or inputs_embeds.dim() != 3
                    or inputs_embeds.shape[-1] != width):
                raise ValueError(f"inputs_embeds must have shape (batch, seq, {width}), got "
                                 f"{tuple(getattr(inputs_embeds, 'shape', ()))}")
            h = inputs_embeds if self.embed_inputs is None else self.embed_inputs(inputs_embeds)
        if not hooks_live():
            return h if self.embed_positions is None else self.embed_positions(h, position_ids)
        h = self.hook_tok_embed(h)
        if self.embed_positions is not None:  # every additive code is P(0 + ...): x + P exactly
            h = h + self.hook_pos_embed(self.embed_positions(torch.zeros_like(h), position_ids))
        return self.hook_embed(h)

    def forward(
        self,
        input_ids: Tensor | None = None,
        *,
        inputs_embeds: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        attn_mask: Tensor | None = None,
        caches: list[KVCache] | None = None,
        memory: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
        labels: Tensor | None = None,
        return_dict: bool = False,
        condition: Tensor | None = None,
        logits_to_keep: int = 0,
    ) -> Tensor | CausalLMOutput:
        """Logits (B, T, head), or hidden states (B, T, d) when the model has no head.

        ``logits_to_keep`` (transformers' convention): 0 computes the head at every position;
        k > 0 only at the last k (B, min(k, T), head), as generation's prefill needs just the
        last position's logits (the head of a 128k vocabulary at 512 prompt positions is
        most of a 1B model's prefill, issue 36). Every layer, cache and hook still sees all T
        positions. Refused with ``labels`` (the loss needs every position).

        ``labels`` (B, T) LongTensor (or ``return_dict=True``): returns a
        :class:`CausalLMOutput` (``.logits``, ``.loss``) instead of the tensor; ``loss`` is the
        mean next-token cross-entropy of ``logits[:, t]`` against ``labels[:, t + 1]`` over the
        labels that are not -100 (transformers' ``ForCausalLMLoss``, computed in float32), None
        without labels. Without either argument the plain tensor is returned (every existing
        caller).

        ``attention_mask`` (B, past + T): 1 for tokens, 0 for (left) padding over every key so
        far (HF convention); positions then count real tokens only (``cumsum(mask) - 1``), so a
        left-padded row gives the same outputs as the unpadded one. ``position_ids`` (T,) or
        (B, T) override the default ``past .. past + T - 1``. ``attn_mask`` (T, S) bool (True =
        may attend) or additive is passed to every self-attention (e.g. a sliding window).
        ``caches``: one :class:`KVCache` per layer; the inputs continue the cached sequence.

        Refused with ValueError: an empty sequence (seq = 0) and, in eager mode, token ids
        outside [0, vocab_size) (the message names input_ids and vocab_size). Under
        ``torch.compile(fullgraph=True)`` / ``torch.export`` / ``torch.func.vmap`` the
        data-dependent checks (token and position ranges) are skipped so the graph has no break;
        shapes are still checked.

        ``condition`` (B, condition_size): the adaLN-Zero conditioning vector (``nn/adaln.py``),
        required exactly when ``config.condition_size`` is set.
        """
        if type(logits_to_keep) is not int or logits_to_keep:  # the default 0: no checks
            _check_logits_to_keep(logits_to_keep, labels)
        h = self.hidden_states(
            input_ids, inputs_embeds=inputs_embeds, attention_mask=attention_mask,
            position_ids=position_ids, attn_mask=attn_mask, caches=caches, memory=memory,
            memory_key_padding_mask=memory_key_padding_mask, is_causal=is_causal,
            condition=condition)
        if logits_to_keep:
            h = (h[:, :logits_to_keep] if planted(LOGITS_KEEP_FIRST)  # planted bug: the first k
                 else h[:, -logits_to_keep:])
        logits = h if self.lm_head is None else self.lm_head(h)
        if labels is None and not return_dict:
            return logits
        return CausalLMOutput(logits=logits, loss=None if labels is None else
                              causal_lm_loss(logits, labels))

    def hidden_states(
        self,
        input_ids: Tensor | None = None,
        *,
        inputs_embeds: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        attn_mask: Tensor | None = None,
        caches: list[KVCache] | None = None,
        memory: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
        condition: Tensor | None = None,
    ) -> Tensor:
        """The final (normalised) hidden states (B, T, d); arguments as :meth:`forward`."""
        c = self.config
        if input_ids is not None:
            self._check_tokens(input_ids)
        x = input_ids if input_ids is not None else inputs_embeds
        if not isinstance(x, Tensor) or x.dim() < 2:
            raise ValueError("input_ids (batch, seq) or inputs_embeds (batch, seq, width) "
                             "is required")
        b, t = x.shape[0], x.shape[1]
        self._check_condition(condition, b)
        if t == 0:
            name = "input_ids" if input_ids is not None else "inputs_embeds"
            raise ValueError(f"{name} must hold at least one position (seq >= 1), got shape "
                             f"{tuple(x.shape)}")
        if caches is not None and len(caches) != len(self.layers):
            raise ValueError(f"caches must hold {len(self.layers)} KVCache, got {len(caches)}")
        if caches is not None and "attention" not in SUBLAYERS[c.sublayers]:
            raise ValueError(f"caches need attention sublayers, got sublayers={c.sublayers!r}")
        past = 0 if caches is None else caches[0].seq_len
        key_padding_mask = None
        if attention_mask is not None:
            if tuple(attention_mask.shape) != (b, past + t):
                raise ValueError(f"attention_mask must have shape (batch, past + seq) = "
                                 f"({b}, {past + t}), got {tuple(attention_mask.shape)}")
            keep = attention_mask.to(torch.bool)
            # planted bug: HF's 1 = keep read as PyTorch's True = pad (contextual-mapping)
            key_padding_mask = keep if planted(PADDING_MASK_INVERTED) else ~keep
            if position_ids is None and not planted(LEFT_PAD_POSITIONS):  # bug: arange
                pos = keep.long().cumsum(-1) - 1
                position_ids = pos.masked_fill(~keep, 1)[:, past:]
        if position_ids is None:
            position_ids = torch.arange(past, past + t, device=x.device)
            if planted(KV_POSITIONS_RESTART):  # planted bug (position claims)
                position_ids = torch.arange(t, device=x.device)
        elif position_ids.shape[-1] != t or position_ids.dim() not in (1, 2) or (
                position_ids.dim() == 2 and position_ids.shape[0] != b):
            raise ValueError(f"position_ids must have shape ({t},) or ({b}, {t}), "
                             f"got {tuple(position_ids.shape)}")
        if (not POSITIONS.metadata(c.position)["extrapolates"] and can_read_values(position_ids)
                and int(position_ids.max()) >= c.max_seq_len):
            raise ValueError(f"position {int(position_ids.max())} exceeds max_seq_len="
                             f"{c.max_seq_len} of the {c.position!r} position table (it cannot "
                             "extrapolate)")
        key_start = 0
        if c.sliding_window is not None and past + t > c.sliding_window:
            width = c.sliding_window + (1 if planted(WINDOW_OFF_BY_ONE) else 0)  # planted bug
            window = sliding_window_mask(t, past + t, width, device=x.device)
            first = max(0, past - width + 1)  # the first key the first query (at past) sees
            if planted(WINDOW_MASK_SIGN):  # planted bug (position claims): j - i < W
                rows = torch.arange(past, past + t, device=x.device).unsqueeze(1)
                window = (torch.arange(past + t, device=x.device) - rows) < c.sliding_window
                first = 0
            no_mask = attn_mask is None
            attn_mask = window if attn_mask is None else _and_masks(attn_mask, window)
            key_start = first if self._can_skip_keys() else 0
            if key_start:  # (issue 36.3) attend to the keys inside the window only
                attn_mask = attn_mask[..., key_start:]
                if key_padding_mask is not None:
                    key_padding_mask = key_padding_mask[:, key_start:]
                if no_mask and t == 1:  # the one query sees every key from key_start on
                    attn_mask = None
        if self.relative_bias is not None:
            bias = self.relative_bias(t, past + t)  # (1, H, T, S)
            attn_mask = bias if attn_mask is None else _add_masks(attn_mask, bias)
        h = self._embed(input_ids, inputs_embeds, position_ids)  # input_ids checked above
        tables = self._rotary_tables(position_ids)
        # A call that raises in layer i must not leave layers 0..i-1 with the new positions
        # appended: the caches are restored (eager only; a traced graph has no partial state).
        snapshot = (None if caches is None or is_tracing()
                    else [(cache.key, cache.value) for cache in caches])
        try:
            for i, layer in enumerate(self.layers):
                h = layer(h, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                          is_causal=is_causal, position_ids=position_ids,
                          kv_cache=None if caches is None else caches[i], memory=memory,
                          memory_key_padding_mask=memory_key_padding_mask,
                          condition=condition, rotary_tables=tables, key_start=key_start)
        except BaseException:
            if snapshot is not None and caches is not None:
                for cache, (key, value) in zip(caches, snapshot, strict=True):
                    cache.key, cache.value = key, value
            raise
        if self.final_norm is not None:
            h = self.final_norm(h)
            if self.final_adaln is not None:
                assert condition is not None
                shift, scale, _ = self.final_adaln(condition)[0]
                h = modulate(h, shift, scale)
        return self.hook_final(h) if hooks_live() else h

    def _can_skip_keys(self) -> bool:
        """Whether a decoding step may leave the keys behind a sliding window out of the
        attention (``key_start``) instead of masking them: same outputs, attention over W
        keys instead of the whole cache (Mistral's decode was 1.5x transformers', whose
        sliding-window cache holds W keys). Not while hooks listen (``hook_scores`` /
        ``hook_pattern`` keep their (B, H, T, S) shapes over every key), nor with position
        biases that index keys (ALiBi, relative bias)."""
        if hooks_live() or self.relative_bias is not None:
            return False
        return all(layer.attn is not None and layer.attn.alibi is None for layer in self.layers)

    def _rotary_tables(self, position_ids: Tensor) -> tuple[Tensor, Tensor] | None:
        """cos, sin of the shared rotary embedding at ``position_ids``, looked up (and its
        positions checked) once per forward instead of once per layer (issue 36 item 3: the
        lookup with its range checks was a tenth of a 4-layer decoding step); (B, T, d) tables
        of batched positions get the head axis, (B, 1, T, d). None when some layer's
        attention has no rotary or another one than ``self.rotary`` (each then looks up its
        own)."""
        rotary = self.rotary
        if rotary is None or any(layer.attn is None or layer.attn.rotary is not rotary
                                 for layer in self.layers):
            return None
        cos, sin = rotary(position_ids)
        if cos.dim() == 3:  # (B, T, d) -> (B, 1, T, d)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return cos, sin

    def _check_condition(self, condition: Tensor | None, batch: int) -> None:
        """``condition`` must be (batch, condition_size) and finite iff the model is
        adaLN-conditioned, absent otherwise (ValueError naming ``condition``)."""
        size = self.config.condition_size
        if size is None:
            if condition is not None:
                raise ValueError("condition is given but this model has no adaLN conditioning "
                                 "(config.condition_size is None)")
            return
        if (not isinstance(condition, Tensor) or not condition.is_floating_point()
                or tuple(condition.shape) != (batch, size)):
            raise ValueError(f"condition must be a float tensor of shape (batch={batch}, "
                             f"condition_size={size}), got "
                             f"{tuple(getattr(condition, 'shape', ())) or condition!r}")
        if can_read_values(condition) and not bool(torch.isfinite(condition).all()):
            raise ValueError("condition must be finite, got NaN/inf entries")

    def _check_tokens(self, input_ids: Tensor) -> None:
        if (not isinstance(input_ids, Tensor) or input_ids.dim() != 2
                or input_ids.dtype != torch.long):
            raise ValueError(
                "input_ids must be a LongTensor of shape (batch, seq), got "
                f"{getattr(input_ids, 'dtype', type(input_ids).__name__)} "
                f"{tuple(getattr(input_ids, 'shape', ()))}")
        v = self.config.vocab_size
        if v is None:
            raise ValueError("this model takes inputs_embeds, not input_ids "
                             "(config.vocab_size is None)")
        if not can_read_values(input_ids):  # traced or vmapped: a host read would fail
            return
        if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= v):
            raise ValueError(f"input_ids: token ids must be in [0, {v}) (vocab_size={v}), got "
                             f"range [{int(input_ids.min())}, {int(input_ids.max())}]")

    # ------------------------------------------------------------------ generation
    def generate(self, input_ids: Tensor, max_new_tokens: int, **kwargs: object) -> Tensor:
        """Autoregressive continuation; see :func:`transformer_math.nn.generation.generate`.

        A model loaded from a checkpoint (``checkpoint_info`` set) stops at the checkpoint's
        ``eos_token_id`` and pads finished rows with its ``pad_token_id`` (from
        ``generation_config.json``, else ``config.json``) unless the call names them
        (``eos_token_id=None`` explicitly: never stop), as transformers' ``generate`` does."""
        from transformer_math.nn.generation import generate

        info = getattr(self, "checkpoint_info", None)
        if info is not None:
            for key in ("eos_token_id", "pad_token_id"):
                if key not in kwargs and getattr(info, key, None) is not None:
                    kwargs[key] = getattr(info, key)
        return generate(self, input_ids, max_new_tokens, **kwargs)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ summaries
    def parameter_breakdown(self) -> dict[str, int]:
        """Trainable parameters by part; a tied head counts once, under ``embedding``."""

        def total(modules: list[nn.Module | None]) -> int:
            return sum(count_parameters(m) for m in modules if m is not None)

        layers = list(self.layers)
        parts = {
            "embedding": total([self.embed_tokens, self.embed_inputs]),
            "positions": total([self.embed_positions, self.relative_bias]),
            "attention": total([m for la in layers for m in (la.attn, la.cross_attn)]),
            "feedforward": total([la.ffn for la in layers]),
            "norms": total([m for la in layers for m in (la.attn_norm, la.cross_norm,
                                                        la.ffn_norm)] + [self.final_norm]),
            "lm_head": 0 if self.config.tie_embeddings else total([self.lm_head]),
            "conditioning": total([la.adaln for la in layers] + [self.final_adaln]),
        }
        parts["total"] = count_parameters(self)
        parts["non_embedding"] = (parts["total"] - parts["embedding"] - parts["positions"]
                                  - parts["lm_head"])
        return parts

    def non_embedding_parameters(self) -> int:
        """Parameters excluding the token and position tables (the N of Kaplan et al. 2020; an
        untied head counts)."""
        parts = self.parameter_breakdown()
        return parts["total"] - parts["embedding"] - parts["positions"]


def _retie_embeddings(module: nn.Module, incompatible_keys: object) -> None:
    """``load_state_dict(..., assign=True)`` assigns each key its own Parameter, which unties a
    tied head from the token table; tie them again. A tied model's state dict holds one tensor
    under both keys, so nothing changes; if the two loaded tensors differ, the token table's
    values serve both."""
    assert isinstance(module, Transformer)
    if (module.config.tie_embeddings and module.lm_head is not None
            and module.embed_tokens is not None
            and module.lm_head.weight is not module.embed_tokens.weight):
        module.lm_head.weight = module.embed_tokens.weight


def _and_masks(attn_mask: Tensor, allowed: Tensor) -> Tensor:
    """A bool (True = allowed) or additive mask restricted to the bool mask ``allowed``."""
    if attn_mask.dtype == torch.bool:
        return attn_mask & allowed
    return attn_mask.masked_fill(~allowed, float("-inf"))


def _add_masks(attn_mask: Tensor, bias: Tensor) -> Tensor:
    """A bool (True = allowed) or additive mask plus an additive bias, as one additive mask."""
    if attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=bias.dtype, device=bias.device
                                ).masked_fill(~attn_mask, float("-inf"))
    return attn_mask + bias


def build_transformer(config: TransformerConfig, seed: torch.Generator | int) -> Transformer:
    """The model with every parameter drawn from ``seed`` (``nn.init.seeded``; the global RNG
    is neither read nor advanced)."""
    return seeded(lambda: Transformer(config), seed)

