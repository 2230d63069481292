"""Induction heads form in a 2-layer attention-only model, with a phase change; not in 1 layer.

Olsson et al. 2022; setup of FACTS.md (sizing measured on this kind of machine): 2-layer
attention-only pre-LN transformer, d_model 64, 4 heads, RoPE (``model_config``: a
``TransformerConfig`` preset); vocab 128, length 64; each sequence
is 0-8 random tokens then a random segment of length U[8, 24] repeated to the end; AdamW 1e-3
(betas 0.9/0.98), 100 warm-up steps, batch 32, 1200 steps (``default``). A 1-layer model with the
same recipe is the control.

Measured every ``eval_every`` steps on fixed probes: per-head previous-token and induction scores
(``diagnostics.icl_scores``) on random sequences of ``probe_half_len`` tokens repeated twice; the
in-context loss (mean next-token loss on the second copy of the probe); the ICL score (loss at a
late minus loss at an early position on held-out training-distribution sequences). The
attention weights are read at the hook points ``layers.{i}.attn.hook_pattern`` (``nn/hooks.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.data.induction import repeated_random_sequence, repeated_segment_batch
from transformer_math.diagnostics.icl_scores import (
    in_context_learning_score,
    induction_score,
    previous_token_lead,
    previous_token_score,
)
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.hooks import run_with_cache, stack_layers
from transformer_math.nn.transformer import Transformer, build_transformer

PATTERNS = "layers.{}.attn.hook_pattern"

LABELS_UNSHIFTED = declare_bug(
    "icl.next-token-labels-unshifted",
    "the next-token loss scores the logits at position t against token t instead of token "
    "t + 1 (labels not shifted): the model is trained to repeat its current token, which the "
    "residual stream does without any attention, so nothing rewards an induction head",
    module=__name__,
    seen_in="the classic causal-LM slip: logits[:, :-1] paired with tokens[:, :-1] (or "
    "unshifted labels handed to a loss that does not shift them)",
    test="tests/claims/icl/test_trained_bugs.py::test_next_token_loss_shifts_the_labels")


def hand_built_induction_model(vocab_size: int, seq_len: int, *, gain: float = 10.0
                               ) -> Transformer:
    """A 2-layer attention-only Transformer (the project's, float64) with hand-set weights that
    implements the induction circuit of Olsson et al. 2022 (000 §8.3.6 第四个视角), no training.

    Residual coordinates: token one-hot (V), position one-hot (T), two flags [t = 0], [t > 0]
    (so every position carries exactly three ones: LayerNorm is then the same affine map at every
    position), a previous-token block (V) and an output block (V). One head per layer, pre-LN with
    unit gains, no biases, learned absolute positions set to the one-hot code.
    - Layer 0 (previous-token head): query = position t shifted to t - 1, key = position, so the
      logit of key t - 1 exceeds every other by ~4 ``gain``; value = the token block, written to
      the previous-token block. Position t then holds token[t - 1].
    - Layer 1 (induction head): query = current token, key = previous-token block, so position t
      attends to the s with token[s - 1] = token[t] (key s = 0, which holds token[0] itself, is
      pushed down through the flags); value = the token block, written to the output block.
    - The unembedding reads the output block: the prediction at t is token[s], the token that
      followed the earlier occurrence of token[t].
    """
    if vocab_size < 2 or seq_len < 2:
        raise ValueError(f"need vocab_size >= 2 and seq_len >= 2, got {vocab_size}, {seq_len}")
    v, t = vocab_size, seq_len
    tok, pos, first, later = 0, v, v + t, v + t + 1
    prev, out = v + t + 2, 2 * v + t + 2
    d = 3 * v + t + 2
    config = TransformerConfig(
        hidden_size=d, num_layers=2, num_heads=1, vocab_size=v, max_seq_len=t,
        position="learned", sublayers="attention_only", norm="layernorm", norm_placement="pre",
        final_norm=True, attention_bias=False, head_bias=False, causal=True,
        attention_backend="reference", init="torch", position_init_std=0.0,
    )
    model = build_transformer(config, 0).double()
    eye_v = torch.eye(v, dtype=torch.float64)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for name, param in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                param.fill_(1.0)  # LayerNorm gains 1, biases 0
        model.embed_tokens.weight[:, tok:tok + v] = eye_v
        table = model.embed_positions.weight
        table[:, pos:pos + t] = torch.eye(t, dtype=torch.float64)
        table[0, first] = 1.0
        table[1:, later] = 1.0
        a0, a1 = model.layers[0].attn, model.layers[1].attn
        for i in range(1, t):  # previous-token head: query t looks for key position t - 1
            a0.q_proj.weight[pos + i - 1, pos + i] = gain
        a0.k_proj.weight[pos:pos + t, pos:pos + t] = torch.eye(t, dtype=torch.float64)
        a0.v_proj.weight[prev:prev + v, tok:tok + v] = eye_v
        a0.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
        a1.q_proj.weight[prev:prev + v, tok:tok + v] = 4 * gain * eye_v  # match token[t] ...
        a1.k_proj.weight[prev:prev + v, prev:prev + v] = eye_v  # ... with token[s - 1]
        a1.q_proj.weight[first, first] = 4 * gain  # constant query on the flags ...
        a1.q_proj.weight[first, later] = 4 * gain
        a1.k_proj.weight[first, first] = -1.0  # ... pushes key s = 0 down
        a1.v_proj.weight[out:out + v, tok:tok + v] = eye_v
        a1.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
        model.lm_head.weight[:, out:out + v] = eye_v
    return model.eval()


@dataclass(frozen=True)
class InductionHeadsConfig:
    vocab_size: int = 128
    d_model: int = 64
    num_heads: int = 4
    seq_len: int = 64
    max_prefix: int = 8
    min_segment: int = 8
    max_segment: int = 24
    batch_size: int = 32
    steps: int = 2000
    lr: float = 1e-3
    warmup: int = 100
    eval_every: int = 25
    probe_half_len: int = 24
    probe_batch: int = 64
    icl_early: int = 4
    icl_late: int = 60
    control_layers: int = 1
    rope_theta: float = 10000.0
    seed: int = 0

    def model_config(self, num_layers: int) -> TransformerConfig:
        """Attention-only pre-LN decoder (Olsson et al. 2022) as a preset.

        Token embedding, ``num_layers`` blocks h <- h + Attn(LN(h)) with rotary q/k (RoPE, Su et
        al. 2021, "half" layout, base ``rope_theta``) and no biases, a final LayerNorm and an
        unembedding without bias; GPT-2 initialisation (every matrix ~ N(0, 0.02^2), LayerNorm
        gains 1). The reference backend computes softmax(q k^T / sqrt(d_k)) explicitly, so the
        pattern read at ``hook_pattern`` is the one the output is computed from.
        """
        return TransformerConfig(
            hidden_size=self.d_model,
            num_layers=num_layers,
            num_heads=self.num_heads,
            vocab_size=self.vocab_size,
            max_seq_len=max(self.seq_len, 2 * self.probe_half_len),
            position="rope",
            rope_theta=self.rope_theta,
            sublayers="attention_only",
            norm="layernorm",
            norm_placement="pre",
            final_norm=True,
            attention_bias=False,
            head_bias=False,
            causal=True,
            attention_backend="reference",
            init="gpt2",
        )

    @staticmethod
    def tiny(seed: int = 0) -> InductionHeadsConfig:
        return InductionHeadsConfig(
            vocab_size=32,
            d_model=32,
            num_heads=2,
            seq_len=32,
            max_prefix=2,
            min_segment=4,
            max_segment=10,
            batch_size=32,
            steps=500,
            lr=3e-3,
            warmup=30,
            eval_every=25,
            probe_half_len=10,
            probe_batch=32,
            icl_early=3,
            icl_late=28,
            seed=seed,
        )

    @staticmethod
    def default(seed: int = 0) -> InductionHeadsConfig:
        """The field defaults with 1200 steps instead of 2000 (issue 19).

        The learning rate is constant after the warm-up, so these 1200 steps are exactly the
        first 1200 of the 2000-step run: the phase change happens at steps 600-650 on seeds
        0-4, and by step 1200 the scores are near their plateau. Measured at 1200 steps, seeds
        0-4: induction 0.764, 0.726, 0.722, 0.755, 0.755; previous-token 0.497, 0.438, 0.469,
        0.432, 0.456; 1-layer control 0.029 on every seed (at 2000 steps, seeds 0-2: 0.784,
        0.780, 0.715 and 0.502, 0.450, 0.471).
        """
        return InductionHeadsConfig(steps=1200, seed=seed)

    @staticmethod
    def large(seed: int = 0) -> InductionHeadsConfig:
        return InductionHeadsConfig(
            d_model=128,
            num_heads=8,
            vocab_size=256,
            seq_len=128,
            max_segment=48,
            steps=5000,
            eval_every=50,
            probe_half_len=48,
            icl_late=124,
            seed=seed,
        )


@dataclass(frozen=True)
class TrainingCurves:
    """Curves of one model; scores are per layer, per head: [eval][layer][head]."""

    num_layers: int
    steps: list[int]
    previous_token: list[list[list[float]]]
    induction: list[list[list[float]]]
    in_context_loss: list[float]
    icl_score: list[float]
    train_loss: list[float]
    #: per head, previous-token score minus the largest mean weight at any other offset
    #: (``diagnostics.icl_scores.previous_token_lead``): [eval][layer][head]
    previous_token_lead: list[list[list[float]]] = field(default_factory=list)

    def max_induction(self, layer: int | None = None) -> list[float]:
        """Best head's induction score per evaluation (in ``layer``, or in any layer)."""
        layers = range(self.num_layers) if layer is None else [layer]
        return [max(max(scores[i]) for i in layers) for scores in self.induction]

    def max_previous_token(self, layer: int) -> list[float]:
        return [max(scores[layer]) for scores in self.previous_token]

    def max_previous_token_lead(self, layer: int) -> list[float]:
        """Best head's previous-token lead per evaluation (positive: some head of ``layer``
        attends to t - 1 more than to any other relative position)."""
        return [max(leads[layer]) for leads in self.previous_token_lead]

    def first_crossing(self, values: list[float], threshold: float) -> int | None:
        for step, v in zip(self.steps, values, strict=True):
            if v >= threshold:
                return step
        return None

    def steepest_loss_drop(self) -> int:
        """Step ending the largest decrease of the in-context loss between two evaluations."""
        drops = [
            a - b for a, b in zip(self.in_context_loss, self.in_context_loss[1:], strict=False)
        ]
        return self.steps[1 + max(range(len(drops)), key=drops.__getitem__)]


@dataclass(frozen=True)
class InductionHeadsResult:
    config: InductionHeadsConfig
    two_layer: TrainingCurves
    control: TrainingCurves
    seconds: float


def next_token_loss(logits: Tensor, tokens: Tensor) -> Tensor:
    """Cross-entropy of predicting token t+1 at position t: logits (B, T, V) -> (B, T-1)."""
    targets = tokens[:, 1:]
    if planted(LABELS_UNSHIFTED):  # planted bug: falsifier of icl.induction-heads
        targets = tokens[:, :-1]
    loss = F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        reduction="none",
    )
    return loss.view(tokens.shape[0], -1)


def loss_and_patterns(model: Transformer, tokens: Tensor) -> tuple[Tensor, Tensor]:
    """Next-token loss (B, T-1) and every layer's attention weights (L, B, H, T, T), read at the
    ``layers.*.attn.hook_pattern`` hook points."""
    logits, cache = run_with_cache(model, tokens, names=["layers.*.attn.hook_pattern"])
    return next_token_loss(logits, tokens), stack_layers(cache, PATTERNS)


def _train(config: InductionHeadsConfig, num_layers: int,
           progress: Callable[[float], None] | None, offset: float, share: float
           ) -> TrainingCurves:
    g = torch.Generator().manual_seed(config.seed * 7919 + num_layers)
    model = build_transformer(config.model_config(num_layers), g)
    g_probe = torch.Generator().manual_seed(10_000 + config.seed)
    probe = repeated_random_sequence(
        config.probe_batch, config.probe_half_len, config.vocab_size, generator=g_probe
    )
    held_out = repeated_segment_batch(
        config.probe_batch,
        config.seq_len,
        config.vocab_size,
        generator=g_probe,
        max_prefix=config.max_prefix,
        min_segment=config.min_segment,
        max_segment=config.max_segment,
    )
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98))
    steps, prev, ind, icl_loss, icl_score, train_loss, lead = [], [], [], [], [], [], []
    recent: list[float] = []

    def evaluate(step: int) -> None:
        model.eval()
        with torch.no_grad():
            loss, weights = loss_and_patterns(model, probe)  # (B, 2L-1), (L, B, H, T, T)
            held_loss = next_token_loss(model(held_out), held_out)
        model.train()
        half = config.probe_half_len
        steps.append(step)
        prev.append([previous_token_score(w).tolist() for w in weights])
        lead.append([previous_token_lead(w).tolist() for w in weights])
        ind.append([induction_score(w, half).tolist() for w in weights])
        icl_loss.append(float(loss[:, half:].mean()))  # predictions of second-copy tokens
        icl_score.append(in_context_learning_score(held_loss, config.icl_early, config.icl_late))
        train_loss.append(sum(recent) / len(recent) if recent else float("nan"))
        recent.clear()

    evaluate(0)
    for step in range(1, config.steps + 1):
        for group in opt.param_groups:
            group["lr"] = config.lr * min(1.0, step / config.warmup)
        tokens = repeated_segment_batch(
            config.batch_size,
            config.seq_len,
            config.vocab_size,
            generator=g,
            max_prefix=config.max_prefix,
            min_segment=config.min_segment,
            max_segment=config.max_segment,
        )
        loss = next_token_loss(model(tokens), tokens).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(float(loss.detach()))
        if step % config.eval_every == 0 or step == config.steps:
            evaluate(step)
            if progress is not None:
                progress(offset + share * step / config.steps)
    return TrainingCurves(num_layers, steps, prev, ind, icl_loss, icl_score, train_loss, lead)


def run(
    config: InductionHeadsConfig, progress: Callable[[float], None] | None = None
) -> InductionHeadsResult:
    """Train the 2-layer model and the ``control_layers``-layer control; deterministic."""
    start = time.perf_counter()
    two = _train(config, 2, progress, 0.0, 0.6)
    control = _train(config, config.control_layers, progress, 0.6, 0.4)
    return InductionHeadsResult(config, two, control, time.perf_counter() - start)
