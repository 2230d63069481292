"""RoPE context extension (000 §8.3.3 理论 C, 000:649-666): what PI, NTK-aware and YaRN do to
each rotary pair, drawn against the trained length.

Pair i of plain RoPE turns at θ_i = b^(-2i/d) rad per position, wavelength λ_i = 2π/θ_i. Trained
on positions < L_train, a pair with λ_i > L_train never completes a turn, so a longer sequence
shows it phases it has never seen: the out-of-distribution pairs are the LOW-frequency ones (the
seed's 000:653 says high; claim ``position.rope-extrapolation-mechanism`` refutes it). The fixes,
from ``functional.rope_scaling`` with factor s = L_test / L_train:

- PI (``linear``, Chen et al. 2023): θ_i / s for every pair, so no phase at L_test is new;
- NTK-aware (``ntk``, bloc97 2023): base b s^(d/(d-2)), so θ_0 is kept and θ_{d/2-1} / s;
- YaRN (``yarn``, Peng et al. 2023): pairs turning more than beta_fast = 32 times in L_train
  kept, fewer than beta_slow = 1 times divided by s, a linear ramp between, plus the logit
  temperature (0.1 ln s + 1)^2.

The left panel draws λ_i per pair (log scale) with L_train and L_test; the right panel the
fraction of test positions [L_train, L_test) whose phase the pair never swept in training
(``functional.rope.unseen_phase_fraction``). Printed: the pairs with unseen phases per method.

    python examples/rope_scaling_figure.py --out rope_scaling.png
"""

from __future__ import annotations

import argparse
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from transformer_math.functional.rope import unseen_phase_fraction
from transformer_math.functional.rope_scaling import compute_rope_frequencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="rope_scaling.png", help="PNG to write")
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--base", type=float, default=10000.0)
    parser.add_argument("--train-len", type=int, default=4096)
    parser.add_argument("--factor", type=float, default=8.0, help="L_test / L_train")
    args = parser.parse_args()
    d, L0, s = args.head_dim, args.train_len, args.factor
    test_len = int(L0 * s)
    methods = {
        "plain RoPE": ("default", {}),
        "PI (linear)": ("linear", {"factor": s}),
        "NTK-aware": ("ntk", {"factor": s}),
        "YaRN": ("yarn", {"factor": s, "original_max_position_embeddings": L0}),
    }
    plain, _ = compute_rope_frequencies("default", d, args.base)
    pairs = list(range(d // 2))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    print(f"d = {d}, base {args.base:g}, L_train {L0}, L_test {test_len} (s = {s:g})")
    print(f"pairs with wavelength > L_train (predicted out of distribution, plain RoPE): "
          f"{sum(2 * math.pi / float(t) > L0 for t in plain)} of {d // 2}")
    print("method        | pairs with unseen phases | largest unseen fraction | logit scale")
    for label, (rope_type, params) in methods.items():
        inv_freq, attention_factor = compute_rope_frequencies(rope_type, d, args.base, params)
        unseen = unseen_phase_fraction(plain, L0, test_len, test_inv_freq=inv_freq)
        left.semilogy(pairs, (2 * math.pi / inv_freq).tolist(), label=label)
        right.plot(pairs, unseen.tolist(), label=label)
        print(f"{label:13s} | {int((unseen > 0).sum()):24d} | {float(unseen.max()):23.3f} | "
              f"{attention_factor**2:.3f}")
    for value, name, style in ((L0, "L_train", "--"), (test_len, "L_test", ":")):
        left.axhline(value, color="k", linestyle=style, linewidth=1, label=name)
    left.set(xlabel="pair i (0 = highest frequency)", ylabel="wavelength 2π/θ_i (positions)",
             title="wavelength per rotary pair")
    right.set(xlabel="pair i", ylabel="fraction of test positions with an unseen phase",
              title=f"phases at [{L0}, {test_len}) never seen in training")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"RoPE context extension: d = {d}, base {args.base:g}, s = {s:g}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
