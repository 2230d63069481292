"""Claims about scaled dot-product and multi-head attention (CLAIMS.md, section "attention").

Sources: the main seed 000 §8.3.1 (自注意力机制: the boxed definition, the three key properties,
multi-head attention and its low-rank bottleneck, the causal mask, the hand-computed example,
the Lipschitz discussion, the pitfalls and exercises 8.3.1-1 and 8.3.1-2) and the third seed 004,
chapter "Self-Attention机制" (scaling, complexity table, softmax stability, parameter table).
Papers: Vaswani et al. 2017 (eq. 1, §3.2.2); Bhojanapalli et al. 2020 (low-rank bottleneck);
Kim, Papamakarios & Mnih 2021 (Lipschitz constant of self-attention).

Modules: ``scaling`` (the 1/sqrt(d_k) scale: the variance it normalises, the hand example),
``softmax`` (saturation without the scale, the max-subtracted softmax), ``masking``
(row-stochastic rows, the causal mask, permutation equivariance, the KV-cache alignment of the
causal mask, fully masked rows), ``grouped`` (grouped-query attention's head layout),
``geometry`` (asymmetry, the per-head rank bound), ``lipschitz`` (no global Lipschitz bound),
``complexity`` (parameter and FLOP counts), ``quadratic_cost`` (counted work against n, full
tier); shared helpers in ``_common``.

Every check measures the project's own implementation (``functional.attention_logits``,
``functional.scaled_dot_product_attention``, ``functional.stable_softmax``,
``nn.MultiHeadAttention`` with its weights read at ``hook_pattern``, ``nn.count_parameters``)
and compares it with a prediction computed independently (closed form, sampling theory or the
seed's printed numbers). Every falsifier is a bug planted in the library code the check runs
(``transformer_math.bugs``: a 1/d_k default scale, a top-left causal mask with a KV cache, GQA
heads tiled instead of grouped, finfo.min masks, the mask applied after the softmax, a softmax
without its max shift, ...), and the same check is run with it planted (issue 14). All
randomness comes from ``ctx.generator(offset)`` and modules are
built by ``nn.init.seeded`` from such a generator (no draw from the global RNG), so each check is
deterministic given ``ctx.seed``; the verdict of ``attention.quadratic-cost`` rests on counted
work, and only the times it reports beside it vary from run to run. The quick checks run with
one intra-op thread (``_common.single_threaded``).

Every check reports its pass conditions as margins (``Evidence.margins``) and takes its verdict
from them (``decide``), so a margin that does not hold is exactly a failed check (issue 12); the
one refuted claim (``multihead-param-count``) computes the seed's numbers against the same counts
(``seed_margins``).
"""
