"""Induction heads in a tiny 2-layer attention-only Transformer (000 §8.3.6 第四个视角,
000:1007-1018; Olsson et al. 2022).

An induction head completes [A][B] ... [A] -> [B]: a previous-token head in layer 0 writes
token[t-1] into position t, and a head in layer 1 queries with the current token against those
keys, attends to the position after the earlier [A] and copies its token. On a random sequence
of L tokens repeated twice, the second copy is then predictable from the first, the first is
not (loss ln V for uniformly random tokens), so the circuit shows as

- the induction score of a head: mean attention from t in [L, 2L) to t - L + 1 (the token that
  followed the earlier occurrence; ``diagnostics.icl_scores.induction_score``; 1 is perfect,
  ~1/t is uniform attention);
- the next-token loss on the repeated half far below the loss on the first half.

The model is the project's Transformer with the experiment's tiny preset
(``experiments.induction_heads.InductionHeadsConfig.tiny``: d 32, 2 heads, vocab 32, RoPE,
attention only), trained with AdamW on sequences of a random prefix and a random segment
repeated to the end (``data.induction.repeated_segment_batch``). Weights and data come from
seeded ``torch.Generator``s. The default 500 steps train in ~10 s on one CPU core.

    python examples/induction_heads_tiny.py [--steps 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from transformer_math.data.induction import repeated_random_sequence, repeated_segment_batch
from transformer_math.diagnostics.icl_scores import induction_score, previous_token_score
from transformer_math.experiments.induction_heads import (
    InductionHeadsConfig,
    loss_and_patterns,
    next_token_loss,
)
from transformer_math.nn.transformer import build_transformer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny tensors: a second thread costs more than it saves
    cfg = InductionHeadsConfig.tiny(seed=args.seed)
    g = torch.Generator().manual_seed(args.seed)
    model = build_transformer(cfg.model_config(num_layers=2), g)
    probe = repeated_random_sequence(64, cfg.probe_half_len, cfg.vocab_size,
                                     generator=torch.Generator().manual_seed(10_000 + args.seed))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98))
    half = cfg.probe_half_len
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        for group in opt.param_groups:  # linear warm-up
            group["lr"] = cfg.lr * min(1.0, step / cfg.warmup)
        tokens = repeated_segment_batch(cfg.batch_size, cfg.seq_len, cfg.vocab_size, generator=g,
                                        max_prefix=cfg.max_prefix, min_segment=cfg.min_segment,
                                        max_segment=cfg.max_segment)
        loss = next_token_loss(model(tokens), tokens).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % max(args.steps // 5, 1) == 0 or step == args.steps:
            print(f"step {step:4d}  training loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        losses, patterns = loss_and_patterns(model, probe)  # (B, 2L-1), (layers, B, H, T, T)
    # losses[:, t] predicts token t + 1: t < L - 1 are first-half targets; from t = L on the
    # target follows an earlier occurrence of token t (at t = L - 1 it does not: token L - 1 is
    # the last of the first copy)
    first, repeated = float(losses[:, : half - 1].mean()), float(losses[:, half:].mean())
    print(f"trained {args.steps} steps in {time.perf_counter() - start:.1f} s")
    for layer in range(patterns.shape[0]):
        ind = induction_score(patterns[layer], half).tolist()
        prev = previous_token_score(patterns[layer]).tolist()
        print(f"layer {layer}: induction score per head {[round(v, 3) for v in ind]}, "
              f"previous-token score {[round(v, 3) for v in prev]}")
    print(f"next-token loss, first half {first:.3f} (random tokens: ln V = "
          f"{math.log(cfg.vocab_size):.3f}); repeated half {repeated:.3f}")


if __name__ == "__main__":
    main()
