"""Chinese for the free text checks produce: notes, figure titles, axis and series labels.

``ZH_TEXT`` maps an exact English string to its Chinese; ``ZH_PATTERNS`` is a list of
``(regular expression, template)``: the expression must match the whole English text, and the
template (``re.Match.expand`` syntax, ``\\1`` or ``\\g<name>``) keeps the numbers it captured.

Most patterns are written with :func:`_pat`: an English template whose ``{}`` marks a number and
``{s}`` any text (both captured in order, ``1, 2, ...``), and a Chinese template that puts the
captures back as ``{1}``, ``{2}``, ...; :func:`_pat` escapes the literal parts and turns the
Chinese template into ``\\g<1>``, ``\\g<2>``, .... Labels that are only symbols or formulas
(``d_k``, ``1/(n+1)``, ``Var(scale * q.k)``) are the same in both languages and have no entry.
Terminology follows the main seed (``000``), as in :mod:`.zh_statements`.
"""

from __future__ import annotations

import re

NUMBER = r"(-?(?:\d[\d,]*(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+|inf|nan))"
"""A number as checks print it: ``3``, ``-0.25``, ``1,050,624``, ``5.9e-03``, ``inf``."""

_ANY = r"(.+?)"


def _pat(english: str, chinese: str) -> tuple[str, str]:
    """``(regex, template)`` from templates with ``{}`` (a number) and ``{s}`` (any text)."""
    pieces = re.split(r"(\{\}|\{s\})", english)
    rx = "".join(
        NUMBER if p == "{}" else _ANY if p == "{s}" else re.escape(p) for p in pieces
    )
    template = re.sub(r"\{(\d+)\}", r"\\g<\1>", chinese.replace("\\", "\\\\"))
    return rx, template


# --- figure titles, axis labels, series and line labels (exact) --------------------------------
_LABELS: dict[str, str] = {
    # architecture
    "Input-output Jacobian of a stack of project blocks vs depth": (
        "本项目块堆叠的输入-输出雅可比随深度的变化"
    ),
    "bound prod (1 + K_l)": "界 prod (1 + K_l)",
    "bound prod (1 - K_l) (smallest singular value)": "界 prod (1 - K_l)（最小奇异值）",
    # attention
    "value": "数值",
    "unscaled": "未缩放",
    # icl
    "residual": "残差",
    "measured": "实测",
    "risk": "风险",
    # expressivity
    "Approximation error vs number of units (log-log); slope -s/d": (
        "逼近误差随单元数的变化（双对数）；斜率 -s/d"
    ),
    "d=1,s=1.5 (|x|^1.5, ReLU net)": "d=1,s=1.5（|x|^1.5，ReLU 网络）",
    "d=1,s=2 (sin 3x, ReLU net)": "d=1,s=2（sin 3x，ReLU 网络）",
    "d=2,s=2 (sin 2x cos 3y, bilinear grid)": "d=2,s=2（sin 2x cos 3y，双线性网格）",
    # kernel
    # longcontext, memory, spectrum
    "N / d (pairs per dimension)": "N / d（每维的键值对数）",
    "cosine / nearest-value accuracy": "余弦 / 最近 value 准确率",
    "cosine(W k_i, v_i), measured": "cosine(W k_i, v_i)，实测",
    "nearest-value accuracy, measured": "最近 value 准确率，实测",
    "Gaussian-crosstalk estimate": "高斯串扰估计",
    "N = d: crosstalk = signal": "N = d：串扰 = 信号",
    # position
    "RoFormer relative upper bound": "RoFormer 相对上界",
    # computation
    # full-tier figures (read from the checks' source)
    "induction 0.5": "归纳分数 0.5",
    "step": "步数",
    "position": "位置",
    "expert": "专家",
}

_LABEL_PATTERNS: list[tuple[str, str]] = [
    _pat("Outer-product memory, d = {}: retrieval vs N/d", "外积记忆，d = {1}：检索随 N/d 的变化"),
    _pat("d={}, base {}", "d={1}，底数 {2}"),
    # full-tier figures
]

# --- notes: architecture -------------------------------------------------------------------------
_NOTES: dict[str, str] = {
    "|dLoss/dW2| of the last block's FFN output weight, mean of 3 Xavier draws per depth L in [2, "
    "4, 8, 16], project blocks (d = 64, 4 heads, causal, a final LayerNorm for Pre-LN), "
    "cross-entropy through a linear head on random vectors; 3 seeds, the pass condition on the "
    "worst.": (
        "最后一个块 FFN 输出权重的 |dLoss/dW2|，每个深度 L（取 [2, 4, 8, 16]）取 3 次 Xavier 抽样的"
        "均值，本项目的块（d = 64，4 个头，因果，Pre-LN 带最终 LayerNorm），在随机向量上经线性头计"
        "算交叉熵；3 个种子，通过条件取最差者。"
    ),
    "Version 2 (issue 14): the former bound used the branch Jacobians at x0 only (the chain rule "
    "takes each at its own layer's input) and e^-K as the lower bound, which is not implied; (1 - "
    "K/L)^L is. Now K_l = |J_{f_l}(x_{l-1})|_2 along the trajectory, the bounds are prod (1 + K_l) "
    "and prod max(0, 1 - K_l) (Weyl), and the stack is the project's Transformer (FFN-only pre-LN "
    "blocks, d = 16, Xavier init, float64, branch / L). The plain stack composes the FFN sublayers "
    "without residual and norm (the seed's 反面); with the LayerNorm kept, the "
    "composition is scale-free and its log-norm rate changed sign between seeds (-0.07..0.07).": (
        "版本 2（issue 14）：原先的界只用了 x0 处的分支雅可比（链式法则要求各自在本层输入处取值），"
        "并以 e^-K 作为下界，而这并不成立；成立的是 (1 - K/L)^L。现在沿轨迹取 K_l = "
        "|J_{f_l}(x_{l-1})|_2，界为 prod (1 + K_l) 和 prod max(0, 1 - K_l)（Weyl），堆叠的是本项目"
        "的 Transformer（仅 FFN 的 pre-LN 块，d = 16，Xavier 初始化，float64，分支 / L）。普通堆叠"
        "把 FFN 子层在没有残差和归一化的情况下复合（种子的反面）；若保留 LayerNorm，复合与尺度无"
        "关，其对数范数变化率在不同种子间改变符号（-0.07..0.07）。"
    ),
    "Values: growth exponents of ||J||_2 in c (fit over c >= 50) for the dot product, L2 attention "
    "(tied keys) and the dot product on LayerNorm-ed inputs.": (
        "数值：||J||_2 关于 c 的增长指数（在 c >= 50 上拟合），分别对点积、L2 注意力（绑定 key）和"
        "作用于 LayerNorm 后输入的点积。"
    ),
    "Order: max |row sum - 1| and min weight over the full and causal arms; outputs certified "
    "outside conv(V) (separating hyperplane) for the residual, W_O and FFN.": (
        "顺序：完整和因果两组上的 max |row sum - 1| 与最小权重；对残差、W_O 和 FFN，以分离超平面证"
        "明其输出在 conv(V) 之外。"
    ),
}

_NOTE_PATTERNS: list[tuple[str, str]] = [
    _pat("Seed's example: 6 N D = {} = {} x its budget; the optimum at C = {} is N = {}, D = {}.",
         "种子的例子：6 N D = {1} = 其预算的 {2} 倍；C = {3} 处的最优是 N = {4}, D = {5}。"),
    _pat("Inference-aware (Sardana et al.), C = {}, {} inference tokens: N = {} ({} tokens/param) "
         "instead of {}, total FLOPs {} %.",
         "考虑推理（Sardana et al.），C = {1}，{2} 个推理 token：N = {3}（每参数 {4} 个 token），而"
         "不是 {5}，总 FLOPs {6} %。"),
    _pat("max_l L K_l = {} (the unscaled branch norm); without residuals the norm goes from {} "
         "(L={}) to {} (L={}).",
         "max_l L K_l = {1}（未缩放的分支范数）；没有残差时，范数从 {2}（L={3}）变为 {4}"
         "（L={5}）。"),
    _pat("Values for B = {}, n = {}, d = {}, H = {}: FLOPs of the four projections (8 n d^2 per "
         "sequence) and of Q K^T plus A V (4 n^2 d). All {} settings match exactly (the last with "
         "grouped key/value heads).",
         "B = {1}, n = {2}, d = {3}, H = {4} 时的数值：四个投影的 FLOPs（每个序列 8 n d^2）以及 Q "
         "K^T 加 A V 的 FLOPs（4 n^2 d）。全部 {5} 种设置都精确吻合（最后一种使用分组 key/value "
         "头）。"),
    _pat("Projection share of the product FLOPs per setting: {s} — the seed's 'total O(n^2 d_k)' "
         "holds only when n >> d.",
         "各设置中投影占矩阵乘法 FLOPs 的比例：{1} —— 种子的 '总计 O(n^2 d_k)' 只在 n >> d 时成"
         "立。"),
    _pat("Attention outputs: distance to conv(V) by projected gradient <= {} (a second, "
         "weight-free view of the same fact).",
         "注意力输出：用投影梯度法求得到 conv(V) 的距离 <= {1}（对同一事实的第二种、与权重无关的视"
         "角）。"),
]

# --- notes: computation, expressivity ----------------------------------------------------------
_NOTES.update({
    "complexity class of RoPE transformers: seed says 004 ch. 10, Theorem 2.3: 'TC^0[log n], "
    "equivalent to log-depth threshold circuits'; source says Chen et al. 2025: DLOGTIME-uniform "
    "TC^0 (constant depth, poly(n) size); log-depth threshold circuits would be TC^1, not a TC^0 "
    "class -> disagrees with the paper (cited, not measured)": (
        "RoPE Transformer 的复杂度类：种子（004 第 10 章，Theorem 2.3）说 'TC^0[log n]，等价于对数"
        "深度阈值电路'；来源（Chen et al. 2025）说：DLOGTIME 一致 TC^0（常数深度，poly(n) 规模）；"
        "对数深度阈值电路是 TC^1，而不是 TC^0 类 -> 与论文不符（引用，未测量）"
    ),
    "circuit size: seed says 004 ch. 10, Theorem 1: Size(Phi_n) = O(L H d^2 d_k log n), and the "
    "comparison table built on it; source says Chen et al. 2025: poly(n)-size circuits; the O(L H "
    "d^2 d_k log n) formula is not in the paper -> disagrees with the paper (cited, not "
    "measured)": (
        "电路规模：种子（004 第 10 章，Theorem 1）说 Size(Phi_n) = O(L H d^2 d_k log n)，以及据此建"
        "立的对比表；来源（Chen et al. 2025）说：poly(n) 规模的电路；O(L H d^2 d_k log n) 公式不在"
        "论文中 -> 与论文不符（引用，未测量）"
    ),
    "PARITY and TC^0: seed says 000 §8.3.5: 'PARITY is not in TC^0 (its circuit depth grows with "
    "n)'; source says PARITY is in TC^0 (depth-2 threshold circuit, measured here); it is not in "
    "AC^0 (Furst, Saxe & Sipser 1984; Hastad 1986). The TC^0 bound therefore does not exclude "
    "PARITY; the limit for soft attention is Hahn's sensitivity argument -> refuted (measured: the "
    "seed margin)": (
        "PARITY 与 TC^0：种子（000 §8.3.5）说 'PARITY 不在 TC^0 中（其电路深度随 n 增长）'；来源说 "
        "PARITY 在 TC^0 中（深度 2 阈值电路，此处已测量）；它不在 AC^0 中（Furst, Saxe & Sipser "
        "1984；Hastad 1986）。因此 TC^0 的界并不排除 PARITY；软注意力的限制来自 Hahn 的敏感度论证 "
        "-> 被驳斥（实测：种子间隔）"
    ),
    "PARITY sensitivity = fraction of (string, position) pairs whose flip changes PARITY, measured "
    "on 8 random strings per n.": (
        "PARITY 敏感度 = 翻转后改变 PARITY 的（串，位置）对所占的比例，每个 n 在 8 个随机串上测量。"
    ),
    "version 2 (issue 14): backend sdpa -> reference (the project's own softmax); falsifier = "
    "planted bug computation.parity-position-off-by-one in theory/parity_margin.py (positions "
    "i / n instead of i / (n + 1)); it was a gain chosen by the check; slope margin added.": (
        "版本 2（issue 14）：后端 sdpa -> reference（本项目自己的 softmax）；证伪器 = "
        "theory/parity_margin.py 中植入的 bug computation.parity-position-off-by-one（位置取 i / n "
        "而不是 i / (n + 1)）；原先是由检查选定的增益；新增了斜率间隔。"
    ),
    "Required gain = 1 / margin: the amplification that maps the margin to a fixed confidence of 1 "
    "(what Chiang & Cholak's layer normalisation provides); it equals n + 1, and the FFN's input "
    "gain is n + 1 as well.": (
        "所需增益 = 1 / 间隔：把间隔映射到固定置信度 1 的放大倍数（即 Chiang & Cholak 的层归一化所"
        "提供的）；它等于 n + 1，FFN 的输入增益也是 n + 1。"
    ),
    "The exercise's numbers are the calculator's (theory/approximation.py) evaluated at the "
    "exercise's inputs and compared with the recorded answers 1e5 and 1e2.": (
        "习题中的数值由计算器（theory/approximation.py）在习题的输入上求得，并与记录的答案 1e5 和 "
        "1e2 比较。"
    ),
    "Measured exponents: sup error of explicit approximants fitted as N^(-s/d) by least squares in "
    "log-log; N = hidden ReLU units (d = 1) or grid values (d = 2). The |x|^1.5 case uses an odd "
    "number of segments so the kink sits mid-cell (no lucky alignment).": (
        "实测指数：显式逼近器的上确界误差在双对数坐标下用最小二乘拟合为 N^(-s/d)；N = 隐藏 ReLU 单"
        "元数（d = 1）或网格值个数（d = 2）。|x|^1.5 的情形使用奇数个分段，使拐点位于单元中间（没有"
        "侥幸的对齐）。"
    ),
    "Tolerance 5 % on d/s: pre-asymptotic curvature of the log-log fit over N = 15..511 (the "
    "measured fits have R^2 > 0.999).": (
        "d/s 的容差为 5 %：来自 N = 15..511 上双对数拟合的前渐近弯曲（实测拟合的 R^2 > 0.999）。"
    ),
    "This measures the rate of grid/interpolation schemes in d <= 2; d = 10 is only computed, not "
    "measured (1e5 units are easy, but a sup error in 10-D is not).": (
        "这里测量的是 d <= 2 时网格/插值方案的速率；d = 10 只计算、不测量（1e5 个单元很容易，但 10 "
        "维中的上确界误差不容易）。"
    ),
    "Issue 14: the falsifier is a bug planted in the ReLU interpolant of theory/approximation.py "
    "(output weights = slopes instead of slope changes), which the measured exponents must catch; "
    "before, it swapped the predicted rule.": (
        "Issue 14：证伪器是植入 theory/approximation.py 的 ReLU 插值器中的 bug（输出权重 = 斜率，而"
        "不是斜率的变化），实测指数必须捕获它；此前它只是替换了预测规则。"
    ),
    "Version 2 (issue 14): the threshold 1e-4 x the median distance was arbitrary and passed "
    "almost any map. Definition 3.1 asks for distinct codes; 'distinct' is measured against the "
    "arithmetic the model runs in: the same layer is evaluated in float32, each code moves by at "
    "most delta, and two codes farther apart than 2 delta cannot coincide. The pairs that share "
    "token and position differ only through the attention term (the 'tail' of the seed's toy "
    "encoding); a layer whose attention carries no context (falsifier: attention_mask inverted "
    "into the key padding mask, every key masked) gives them distance 0.": (
        "版本 2（issue 14）：原先的阈值 1e-4 x 中位距离是任意的，几乎任何映射都能通过。Definition "
        "3.1 要求编码互不相同；'互不相同' 以模型运行所用的算术来衡量：同一层在 float32 下求值，每个"
        "编码至多移动 delta，相距超过 2 delta 的两个编码不可能重合。token 和位置相同的那些对只通过"
        "注意力项相区别（种子玩具编码中的 '尾部'）；注意力不携带上下文的层（证伪器：attention_mask "
        "被反转成 key 填充掩码，所有 key 都被掩掉）使它们的距离为 0。"
    ),
})

_NOTE_PATTERNS += [
    _pat("{} random single-layer attention maps ({} heads, d = {}, float64) of the project's "
         "Transformer: token embedding + sinusoidal position, one attention-only block without "
         "norms, so the hidden state is x + Attn(x); the ids are passed with their attention mask "
         "(all ones). Worst case over trials.",
         "本项目 Transformer 的 {1} 个随机单层注意力映射（{2} 个头，d = {3}，float64）：token 嵌入 "
         "+ 正弦位置，一个没有归一化的仅注意力块，因此隐藏状态为 x + Attn(x)；ids 连同其注意力掩码"
         "（全为 1）一起传入。取各次试验中的最差情形。"),
    _pat("first coordinate of some codes (trial {}): a@1 in ab: {}, a@1 in aa: {}, a@2 in ba: {}, "
         "a@2 in aa: {}",
         "部分编码的第一个坐标（试验 {1}）：ab 中的 a@1：{2}，aa 中的 a@1：{3}，ba 中的 a@2：{4}，"
         "aa 中的 a@2：{5}"),
    _pat("Random float64 models of experiments.presets.tiny_transformer_config ({} layers, d = {}, "
         "no positions) on {} sequences of {} tokens over {}; the second batch keeps token 0 and "
         "redraws the others. This is the structural fact behind the FFN-only ceiling of "
         "expressivity.component-ablation, checked without training.",
         "experiments.presets.tiny_transformer_config 的随机 float64 模型（{1} 层，d = {2}，无位"
         "置），作用于 {3} 个长度为 {4}、取自 {5} 种 token 的序列；第二批保留 token 0、重新抽取其"
         "余 token。这是 expressivity.component-ablation 中仅 FFN 上限背后的结构性事实，无需训练即"
         "可检验。"),
]

# --- notes: icl, kernel ------------------------------------------------------------------------
_NOTES.update({
    "the quick check of theory.icl_construction.ahn_gamma, the prediction that "
    "icl.preconditioned-optimum compares the trained layer with": (
        "theory.icl_construction.ahn_gamma 的快速检查，icl.preconditioned-optimum 用这一预测与训练"
        "后的层比较"
    ),
    "the step that icl.trained-matches-gd compares the trained layer with": (
        "icl.trained-matches-gd 用来与训练后的层比较的那一步"
    ),
    "version 2 (issue 14): falsifier = planted bug icl.newton-schulz-scale (A_0 without the "
    "|M|_inf factor) in the library; it was an initial guess built by the check": (
        "版本 2（issue 14）：证伪器 = 库中植入的 bug icl.newton-schulz-scale（A_0 缺少 |M|_inf 因"
        "子）；原先是由检查构造的初始猜测"
    ),
    "Tolerance 1e-12: round-off only; the sides differ in the order of summation.": (
        "容差 1e-12：仅为舍入误差；两侧只在求和顺序上不同。"
    ),
    "Tolerance 1e-10: both sides are float64; they differ only in the order of summation and the "
    "max subtraction of the softmax (round-off ~1e-15 relative).": (
        "容差 1e-10：两侧均为 float64；它们只在求和顺序和 softmax 的减最大值上不同（相对舍入误差约 "
        "1e-15）。"
    ),
})

_NOTE_PATTERNS += [
    _pat("d = {}, n = {}, Sigma with eigenvalues {s} in a random basis",
         "d = {1}, n = {2}，Sigma 在随机基下的特征值为 {3}"),
    _pat("the Monte Carlo optimum E[w h^T] E[h h^T]^-1 is within {} (relative Frobenius) of "
         "Gamma^-1: reported, not a pass condition (its sampling error is not derived here)",
         "蒙特卡洛最优 E[w h^T] E[h h^T]^-1 与 Gamma^-1 相差在 {1} 以内（相对 Frobenius）：仅报告，"
         "不作为通过条件（此处未推导其抽样误差）"),
    _pat("d = {}, N = {}, x ~ U(-1, 1)^d, w ~ N(0, I), {} prompts, no noise",
         "d = {1}, N = {2}，x ~ U(-1, 1)^d，w ~ N(0, I)，{3} 个提示，无噪声"),
    _pat("kappa(M) = {}, A_0 = M^T/(|M|_1|M|_inf) from "
         "theory.icl_construction.newton_schulz_initial",
         "kappa(M) = {1}，A_0 = M^T/(|M|_1|M|_inf) 来自 "
         "theory.icl_construction.newton_schulz_initial"),
    _pat("{}x{} heads, {} queries, {} keys, d = {}, d_v = {}, m = {} random features; float64. "
         "relu rows whose features are all zero get 0 on both sides (the project's convention).",
         "{1}x{2} 个头，{3} 个 query，{4} 个 key，d = {5}, d_v = {6}，m = {7} 个随机特征；float64。"
         "特征全为零的 relu 行在两侧都取 0（本项目的约定）。"),
    _pat("max |MultiHeadAttention(x) - W_O concat_h NW_h(x)| over {s} outputs (float64, output "
         "scale {}).",
         "在 {1} 个输出上的 max |MultiHeadAttention(x) - W_O concat_h NW_h(x)|（float64，输出尺度 "
         "{2}）。"),
]

# --- notes: longcontext, memory, position, robotics, spectrum ----------------------------------
_NOTES.update({
    "Retired (issue 14): the gated-MLP comparison (a hand-set lookup table, not a learned MLP; see "
    "the module docstring). Boundary (003:52): random keys queried with stored keys; not a bound "
    "on "
    "what a trained model memorises.": (
        "已撤下（issue 14）：门控 MLP 的对比（那是手工设定的查找表，而不是学到的 MLP；见模块文档字"
        "符串）。边界（003:52）：用已存储的 key 查询随机 key；这不是训练后模型所能记忆内容的上界。"
    ),
    "Error-rate model (theory.associative_memory.predicted_nearest_error): independent Gaussian "
    "scores, right value N(1, (N-1)/d^2), wrong ones variance 2/d + (N-2)/d^2; it over-states the "
    "error (measured 2-4x lower in the tails), so the margin is one-sided.": (
        "错误率模型（theory.associative_memory.predicted_nearest_error）：独立的高斯分数，正确 "
        "value 为 N(1, (N-1)/d^2)，错误 value 的方差为 2/d + (N-2)/d^2；它高估了错误（在尾部实测低 "
        "2-4 倍），所以间隔是单侧的。"
    ),
    "Both weightings are FIR low-pass filters; they differ in which prediction (the oldest or the "
    "freshest) dominates, i.e. in how fast new observations act.": (
        "两种加权都是 FIR 低通滤波器；它们的区别在于哪个预测（最旧的还是最新的）占主导，即新观测起"
        "作用的快慢。"
    ),
    "the seed says the high-frequency pairs are OOD and PI compresses low-frequency resolution; "
    "the "
    "measurement says the opposite on both counts": (
        "种子说高频对是分布外的，且 PI 压缩了低频分辨率；测量结果在这两点上都相反"
    ),
})

_NOTE_PATTERNS += [
    _pat("Unit keys and values uniform on the sphere, d in {s}, N/d in {s}, {} independent "
         "memories each; each memory is queried with all its keys; nearest-value decoding = "
         "argmax_j v_j^T W k_i.",
         "单位 key 和 value 在球面上均匀分布，d 取 {1}，N/d 取 {2}，各 {3} 个独立记忆；每个记忆用它"
         "的全部 key 查询；最近 value 解码 = argmax_j v_j^T W k_i。"),
    _pat("Crosstalk tolerance: {} standard errors of the mean over {} independent trials (a t-test "
         "with {} degrees of freedom, two-sided p < {} per cell); the margin is the worst cell.",
         "串扰容差：{2} 次独立试验均值的 {1} 个标准误（自由度为 {3} 的 t 检验，每格双侧 p < {4}）；"
         "间隔取最差的一格。"),
    _pat("At N = d the crosstalk equals the signal (mean square (d-1)/d, cosine ~{}) and yet "
         "nearest-value decoding is right for >= {}% of the queries: 'interference equals signal' "
         "(003:52) is a conservative capacity threshold; decoding fails only when sqrt(2/d + "
         "N/d^2) nears 1/sqrt(2 ln N), N of order d^2/(2 ln N).",
         "在 N = d 时串扰等于信号（均方 (d-1)/d，余弦 ~{1}），但最近 value 解码仍对 >= {2}% 的查询"
         "正确：'干扰等于信号'（003:52）是一个保守的容量阈值；只有当 sqrt(2/d + N/d^2) 接近 "
         "1/sqrt(2 ln N)，即 N 达到 d^2/(2 ln N) 的量级时，解码才会失败。"),
    _pat("{} layer, hidden {}, {} heads, T = {}, W = {}; positions t = W-1..T-1",
         "{1} 层，隐藏维 {2}，{3} 个头，T = {4}，W = {5}；位置 t = W-1..T-1"),
    _pat("Untrained ACT (dim {}, latent {}, chunk {}); normalisation buffers at identity.",
         "未训练的 ACT（维度 {1}，隐变量 {2}，动作块 {3}）；归一化缓冲区取恒等。"),
    _pat("k = {}, {} steps; open loop (T_a = k) and replanning (T_a = 1) through the library's "
         "make_executor.",
         "k = {1}，{2} 步；通过库的 make_executor 执行开环（T_a = k）和重新规划（T_a = 1）。"),
    _pat("Untrained DT (dim {}): the rollout's conditioning does not depend on the weights.",
         "未训练的 DT（维度 {1}）：rollout 的条件不依赖于权重。"),
    _pat("k = {}, {} steps, i.i.d. N(0, 1) chunk entries from the seed's generator; the library's "
         "make_executor('act_ensemble', k) is driven by a scripted chunk stream.",
         "k = {1}，{2} 步，动作块元素为来自该种子生成器的 i.i.d. N(0, 1)；库的 "
         "make_executor('act_ensemble', k) 由脚本化的动作块流驱动。"),
    _pat("Seed's version on the same heads: its eigvalsh monitor misses the constructed "
         "mean/variance by up to {}; its kappa goes {} -> {} while the entropy rises {} -> {} "
         "(correlation {}): the most localised heads have the smallest kappa.",
         "种子的版本在同样的头上：其 eigvalsh 监测器与所构造的均值/方差相差至多 {1}；当熵从 {4} 上"
         "升到 {5} 时，其 kappa 从 {2} 变为 {3}（相关系数 {6}）：最局部化的头 kappa 最小。"),
]

# --- labels and notes of the claims added or revised in issue 18 -------------------------------
_LABELS.update({
})

_LABEL_PATTERNS += [
]

_NOTES.update({
    "Order: max |row sum - 1| and min weight over the full and causal arms; outputs certified "
    "outside conv(V) (separating hyperplane) for the residual and the FFN; single-head W_O o "
    "against conv(W_O v_j); two heads against conv(concat(v_j) W_O).": (
        "顺序：完整和因果两组上的 max |row sum - 1| 与最小权重；对残差和 FFN，以分离超平面证明其输"
        "出在 conv(V) 之外；单头的 W_O o 对照 conv(W_O v_j)；两个头对照 conv(concat(v_j) W_O)。"
    ),
    "000:221 counts W_O among the exits; a linear map keeps convex combinations (W_O sum_j a_j v_j "
    "= sum_j a_j W_O v_j), so measured: no single-head output leaves "
    "conv(W_O v_j). What leaves is several heads with different weights.": (
        "000:221 把 W_O 算作离开凸包的途径之一；但线性映射保持凸组合（W_O sum_j a_j v_j = sum_j "
        "a_j W_O v_j），所以实测：没有任何单头输出离开 conv(W_O v_j)。离开凸包的是权重各不相同的多"
        "个头。"
    ),
    "the registry's construction (icl.one-step-gd) silently used the label as the value; this "
    "claim reports the seed's version (SEED_AUDIT 000:929)": (
        "注册表中的构造（icl.one-step-gd）默默地把标签当作 value 使用；本声明报告的是种子的版本"
        "（SEED_AUDIT 000:929）"
    ),
})

_NOTE_PATTERNS += [
    _pat("Version 3 (issue 18): inference-aware tokens/param at the 1e21 optimum's loss for "
         "inference demands {s}; at the D = 1e9 model's loss (N = {}, L = {}) with {} inference "
         "tokens: N = {}, D_train = {}; the seed's N = 1e9 / 1800 = {} has L = {}; N_opt(1e21) / "
         "N(D = 1e9) = {} (seed 200); log10(N_opt(1e21) / 5.5e5) = {} (seed: four orders)",
         "版本 3（issue 18）：在 1e21 最优模型的损失下、考虑推理时的每参数 token 数，对各推理需求"
         "为 {1}；在 D = 1e9 模型的损失下（N = {2}, L = {3}），{4} 个推理 token 时：N = {5}, "
         "D_train = {6}；种子的 N = 1e9 / 1800 = {7} 的损失为 L = {8}；N_opt(1e21) / N(D = 1e9) = "
         "{9}（种子为 200）；log10(N_opt(1e21) / 5.5e5) = {10}（种子：四个数量级）"),
    _pat("d = {}; {} tokens with row means in [{}, {}] and scales {} .. {}; eps = {}; gamma ~ 1 + "
         "{} N(0, 1), beta ~ {} N(0, 1) for the affine part",
         "d = {1}；{2} 个 token，行均值取 [{3}, {4}]，尺度 {5} .. {6}；eps = {7}；仿射部分 gamma ~ "
         "1 + {8} N(0, 1)，beta ~ {9} N(0, 1)"),
    _pat("Jacobians by autograd at x = {} + sigma u for sigma in {s}: at eps = 0 |J| = 1/sigma (up "
         "to {}); at eps = {} it saturates at 1/sqrt(eps) = {}",
         "在 x = {1} + sigma u 处用 autograd 求雅可比，sigma 取 {2}：eps = 0 时 |J| = 1/sigma（最大"
         "到 {3}）；eps = {4} 时它饱和于 1/sqrt(eps) = {5}"),
    _pat("Version 3 (issue 18): the seed's 'one layer cannot distinguish all sequences' (000:739, "
         "000:704) is a seed margin on the same measurement, and the check runs on every sequence "
         "of {s} as well as the toy: one layer separates all {} codes, so the claim is refuted "
         "(Kajitsuka & Sato 2024 prove it for any finite set, with one head of rank-1 weights).",
         "版本 3（issue 18）：种子的 '一层无法区分所有序列'（000:739, 000:704）是同一测量上的种子间"
         "隔，检查除玩具例子外还在 {1} 的每个序列上运行：一层就能分开全部 {2} 个编码，所以该说法被"
         "驳斥（Kajitsuka & Sato 2024 对任意有限集证明了这一点，只需一个权重秩为 1 的头）。"),
    _pat("version 2 (issue 18): the seed's Sigma^-1 (000:967) as a seed margin on the same moment: "
         "max z vs Sigma^2 = {}; the Monte Carlo optimum is {} (relative Frobenius) from Sigma^-1 "
         "and {} from Gamma^-1",
         "版本 2（issue 18）：把种子的 Sigma^-1（000:967）作为同一矩上的种子间隔：相对 Sigma^2 的最"
         "大 z = {1}；蒙特卡洛最优与 Sigma^-1 相差 {2}（相对 Frobenius），与 Gamma^-1 相差 {3}"),
    _pat("seed's version: layers <= 2 log(1/eps) whatever kappa; measured {s} for eps = {} "
         "(log(1/eps) = {})",
         "种子的版本：无论 kappa 为多少，层数 <= 2 log(1/eps)；实测（eps = {2}，log(1/eps) = "
         "{3}）：{1}"),
    _pat("the seed's W_V is assembled block by block with torch.cat; for d >= {} torch rejects a "
         "d x d block in the 1 x d label row (the shapes the construction needs)",
         "种子的 W_V 用 torch.cat 逐块拼接；当 d >= {1} 时 torch 拒绝把 d x d 块放进 1 x d 的标签行"
         "（这是该构造所需的形状）"),
    _pat("eta = {}, N = {}, {} prompts per d; x, y, x_q ~ N(0, 1)",
         "eta = {1}, N = {2}，每个 d 取 {3} 个提示；x, y, x_q ~ N(0, 1)"),
    _pat("Gram matrices of one head on {} points (d = {}, d_k = {}): the module's own W_K (untied) "
         "and W_K := W_Q (tied); the untied Gram equals exp of the module's logits (hook_scores), "
         "a second computation of the same kernel.",
         "一个头在 {1} 个点上的 Gram 矩阵（d = {2}, d_k = {3}）：用模块自己的 W_K（不绑定）和 W_K "
         ":= W_Q（绑定）；不绑定的 Gram 矩阵等于模块 logits（hook_scores）的 exp，是对同一核的第二"
         "种计算。"),
    _pat("1 + q.k: {} queries, {} keys, N(0, I_{}); along q(t) = -t s/|s| (s = sum_j k_j) the "
         "normaliser n - t |s| crosses 0 at t* = n/|s|.",
         "1 + q.k：{1} 个 query，{2} 个 key，N(0, I_{3})；沿 q(t) = -t s/|s|（s = sum_j k_j），归一"
         "化常数 n - t |s| 在 t* = n/|s| 处穿过 0。"),
    _pat("uniqueness (000:614) in 2-D, {} random (m, n, t) in [{}, {}): the reflection family "
         "R(mθ)F (θ = 1, F across the x-axis) is continuous in m, every member has det -1; A F^m "
         "(A = R({}), F across the line at {} rad) alternates A and A F. With f(0) = I and f "
         "continuous in real m, G is a one-parameter subgroup of O(2), hence R(mθ): the seed's "
         "'continuity' is needed, and so is f(0) = I",
         "唯一性（000:614），2-D，[{2}, {3}) 中 {1} 组随机 (m, n, t)：反射族 R(mθ)F（θ = 1，F 关于 "
         "x 轴反射）对 m 连续，每个成员的行列式为 -1；A F^m（A = R({4})，F 关于 {5} rad 处的直线反"
         "射）在 A 与 A F 之间交替。若 f(0) = I 且 f 对实数 m 连续，则 G 是 O(2) 的单参数子群，因此"
         "是 R(mθ)：种子的 '连续性' 是必需的，f(0) = I 也是"),
]

# --- labels and notes of the full-tier claims (from `tmath verify --tier full --size tiny`) ----
_LABELS.update({
    "ACT (CVAE, z sampled per episode)": "ACT（CVAE，每个 episode 采样一次 z）",
    "Q-learning": "Q 学习",
})

_LABEL_PATTERNS += [
]

_NOTES.update({
    "version 2 (issue 14): three seeds, worst seed decides; falsifier = planted bug "
    "attention.causal-blocks-previous in functional/masks.py (no query can attend to the previous "
    "token, so p_i = p_{i-1} xor b_i cannot be computed); it was a copy scratchpad chosen by the "
    "check. Thresholds unchanged.": (
        "版本 2（issue 14）：三个种子，由最差的种子决定；证伪器 = functional/masks.py 中植入的 bug "
        "attention.causal-blocks-previous（任何 query 都不能注意到前一个 token，因此无法计算 p_i = "
        "p_{i-1} xor b_i）；原先是由检查选定的复制草稿。阈值不变。"
    ),
    "What the seed gets right: without attention no context (FFN-only sits exactly at the "
    "ceiling); one attention layer without an FFN falls short (a likely reason, not proven here: "
    "for a fixed own token, one head's output moves along a segment between value means as k "
    "varies, so a linear readout of it is monotone in k, and two heads add little). What it gets "
    "wrong: 'both are indispensable': two attention-only layers without any norm, whose only "
    "nonlinearity is the softmax, fit the task, in line with exercise 8.3.4-3 and with Hu, Liu, "
    "Chen, Wu & Liu 2025 (arXiv 2504.15956: two attention-only layers with linear maps are "
    "universal approximators), the result the seed attributes to an 'Arqand et al. 2025' that "
    "could not be found.": (
        "种子说对的部分：没有注意力就没有上下文（仅 FFN 恰好停在上限）；没有 FFN 的一层注意力达不到"
        "（一个可能的原因，此处未证明：对固定的自身 token，随 k 变化，一个头的输出沿 value 均值之间"
        "的一条线段移动，所以对它的线性读出关于 k 单调，两个头也帮助不大）。说错的部分：'两者缺一不"
        "可'：两个没有任何归一化、唯一非线性是 softmax 的仅注意力层就能拟合该任务，这与习题 "
        "8.3.4-3 以及 Hu, Liu, Chen, Wu & Liu 2025（arXiv 2504.15956：两个带线性映射的仅注意力层是"
        "万能逼近器）一致，种子把这一结果归于一篇找不到的 'Arqand et al. 2025'。"
    ),
    "version 2 (issue 14): three seeds, worst seed decides; the structural margin 'layers checked "
    ">= 2' is gone; falsifier = planted bug attention.causal-blocks-previous in "
    "functional/masks.py (no layer can attend to the previous token): it used to be the 1-layer "
    "control read as the "
    "2-layer model": (
        "版本 2（issue 14）：三个种子，由最差的种子决定；结构性间隔 '检查的层数 >= 2' 已去掉；证伪"
        "器 = functional/masks.py 中植入的 bug attention.causal-blocks-previous（任何层都不能注意到"
        "前一个 token）：原先是把 1 层对照模型当作 2 层模型来读"
    ),
    "version 3 (issue 19): the default trains 1200 steps (was 2000). The learning rate is "
    "constant after the warm-up, so the run is the first 1200 steps of the old one; the phase "
    "change is at steps 600-650 on seeds 0-4. Seeds 0-4 at 1200 steps: induction 0.764, 0.726, "
    "0.722, 0.755, 0.755; previous-token 0.497, 0.438, 0.469, 0.432, 0.456; timing gap / window "
    "0.42, 0.42, 0.42, 0, 0 (window 60 steps, was 100); control 0.029. Thresholds unchanged; "
    "the previous-token slack is smaller than at 2000 steps (worst 0.432 of 5 seeds against "
    "0.450 of 3).": (
        "版本 3（issue 19）：默认训练 1200 步（原为 2000 步）。预热后学习率为常数，所以这次运行就"
        "是旧运行的"
        "前 1200 步；种子 0-4 的相变出现在第 600-650 步。种子 0-4 在 1200 步时：归纳分数 0.764, 0"
        ".726, "
        "0.722, 0.755, 0.755；前一 token 分数 0.497, 0.438, 0.469, 0.432, 0.456；时间差 / 窗口 "
        "0.42, 0.42, 0.42, 0, 0（窗口 60 步，原为 100）；对照 0.029。阈值不变；前一 token 分数的"
        "余量"
        "比 2000 步时小（5 个种子中最差 0.432，对比 3 个种子中的 0.450）。"
    ),
    "Issue 19 (version 3): at --size default (k up to 32) error rose from k = 16 to k"
    " = 32 on every seed (error(32) / error(16) = 1.73-1.97, seeds 0-2; seed 0: 0.063"
    "1, 0.0514, 0.0365, 0.0264, 0.0201, 0.0349 at k = 1..32), failing 'falls at every"
    " step of k'. Cause: the observation holds the reference only L = 24 steps ahead "
    "(13 waypoints, stride 2); a 32-chunk's last 7 actions track a reference the poli"
    "cy never sees. Not a training, capacity or executor bug (seed 0, k = 16, 24, 32:"
    " 0.0201, 0.0195, 0.0349; 4000 steps 0.0204, 0.0213, 0.0367; hidden 128 0.0207, 0"
    ".0191, 0.0348); the break follows L: stride 3 (L = 36) 0.0262, 0.0218, 0.0207 (f"
    "alls through 32), stride 1 (L = 12) 0.0279, 0.0345, 0.0606 (rises from k = 16 on"
    "). The fall is now decided for k - 1 <= L, where T^2 eps / k's constant per-chun"
    "k eps can hold (thresholds unchanged); the ratios beyond L are reported in measu"
    "red. The seed's unconditional 'error falls with k' is refuted on this task for c"
    "hunks longer than the look-ahead.": (
        "Issue 19（版本 3）：在 --size default（k 最大 32）下，每个"
        "种子上误差都从 k = 16 升到 k = 32（error(32) / error(1"
        "6) = 1.73-1.97，种子 0-2；种子 0 在 k = 1..32 时为 0."
        "0631, 0.0514, 0.0365, 0.0264, 0.0201, 0.0349"
        "），不满足'k 每增大一步误差都下降'。原因：观测只包含前方 L = 24 步的参考轨迹"
        "（13 个路点，步长 2）；长度 32 的动作块的最后 7 个动作跟踪的是策略从未看到的"
        "参考。这不是训练、容量或执行器的 bug（种子 0，k = 16, 24, 32：0.0"
        "201, 0.0195, 0.0349；4000 步 0.0204, 0.0213, 0"
        ".0367；hidden 128 为 0.0207, 0.0191, 0.0348）；拐"
        "点随 L 移动：步长 3（L = 36）0.0262, 0.0218, 0.0207（一"
        "直降到 32），步长 1（L = 12）0.0279, 0.0345, 0.0606（从"
        " k = 16 起上升）。现在只在 k - 1 <= L 的范围内判定下降，在那里 T^"
        "2 eps / k 假设的每块误差 eps 不变才可能成立（阈值不变）；L 之外的比值记"
        "录在 measured 中。种子文本无条件的'误差随 k 下降'在这个任务上对长于前视窗"
        "口的动作块被驳倒。"
    ),
    "Raventos et al.'s M* = 2^11..2^14 needs ~500k steps; short training moves M* down": (
        "Raventos et al. 的 M* = 2^11..2^14 需要约 500k 步；训练较短会使 M* 下移"
    ),
    "000:301 and 000:406 (too many heads degrade) agree with the one-relation row: the error grows "
    "as the head size d/H shrinks. What the seed gets wrong (000:311, 000:1393) is the ranking: at "
    "fixed d many small heads do not dominate one big head.": (
        "000:301 和 000:406（头太多会变差）与一种关系的那一行一致：误差随头大小 d/H 缩小而增大。种"
        "子说错的（000:311, 000:1393）是排序：在固定 d 下，许多小头并不优于一个大头。"
    ),
    "no fine-tuning after scaling (PI is known to need fine-tuning)": (
        "缩放后不做微调（已知 PI 需要微调）"
    ),
})

_NOTE_PATTERNS += [
    _pat("Heads sweep H = {s} at d = {}, n = {}, {} sequences, {} Adam steps (lr {}) per student; "
         "measured values are relative squared errors in the order of the sweep.",
         "头数扫描 H = {1}，d = {2}, n = {3}，{4} 个序列，每个学生模型 {5} 步 Adam（lr {6}）；实测"
         "值是按扫描顺序排列的相对平方误差。"),
    _pat("Time exponents (information, not the verdict; minimum over repeats, one thread): full "
         "(thread) {}, full (wall) {}, linear (thread) {}, linear (wall) {}. Wall-clock exponents "
         "are also benchmarks: tmath bench -k time-exponent.",
         "时间指数（仅供参考，不参与判定；多次重复取最小，单线程）：完整（线程）{1}，完整（墙钟）"
         "{2}，线性（线程）{3}，线性（墙钟）{4}。墙钟指数也是基准测试：tmath bench -k "
         "time-exponent。"),
    _pat("causal Transformer (experiments.presets), {} layers, d = {}, {} heads, learned relative "
         "position bias; direct arm: unrestricted attention, scratchpad arm: sliding window of {} "
         "tokens; {} steps x batch {}, lengths uniform in 1..{}; {} fresh strings per test length "
         "(antithetic pairs: x and x with one random bit flipped), greedy autoregressive decoding "
         "(every scratchpad token is the model's own).",
         "因果 Transformer（experiments.presets），{1} 层，d = {2}，{3} 个头，可学习的相对位置偏"
         "置；直接组：不受限的注意力，草稿组：{4} 个 token 的滑动窗口；{5} 步 x 批大小 {6}，长度在 "
         "1..{7} 上均匀；每个测试长度 {8} 个新串（对偶对：x 以及翻转一个随机比特的 x），贪心自回归"
         "解码（草稿中的每个 token 都由模型自己生成）。"),
    _pat("Issue 12 (tiny size): L = {} with {} steps x batch {} and {} test strings never learnt "
         "the scratchpad (min accuracy {s} over seeds {s}, all failed); now L = {}, {} steps x "
         "batch {} at lr {}, {} test strings in antithetic pairs, tested at L, 4L and 8L. At this "
         "size the direct arm is not yet at chance at 2L for every seed (seeds {s}: {s}), so 2L is "
         "not among the tiny test lengths.",
         "Issue 12（tiny 规模）：L = {1}、{2} 步 x 批大小 {3}、{4} 个测试串时从未学会草稿（种子 "
         "{6} 上最低准确率 {5}，全部失败）；现在 L = {7}，{8} 步 x 批大小 {9}，lr {10}，{11} 个对偶"
         "对测试串，在 L、4L 和 8L 处测试。在这个规模下，直接组并非对每个种子都在 2L 处降到随机水平"
         "（种子 {12}：{13}），所以 2L 不在 tiny 的测试长度之中。"),
    _pat("Earlier default runs (seed {}) with the running-parity arm on unrestricted relative "
         "attention: {s} (attention to the previous token diluted by far keys); with a window "
         "covering the training sequences: {s} (probably BOS, a likely attention sink, leaving the "
         "window; not verified). See experiments/parity_scratchpad.py.",
         "早先 default 规模的运行（种子 {1}），逐步奇偶性草稿组使用不受限的相对注意力：{2}（对前一"
         "个 token 的注意力被远处的 key 稀释）；用覆盖训练序列的窗口时：{3}（可能是 BOS——一个可能的"
         "注意力汇——离开了窗口；未验证）。见 experiments/parity_scratchpad.py。"),
    _pat("version 2 (issue 14): three seeds, worst seed decides; falsifier = planted bug "
         "icl.ahn-gamma-is-sigma in theory/icl_construction.py (it was a swap of the prediction); "
         "threshold {} unchanged",
         "版本 2（issue 14）：三个种子，由最差的种子决定；证伪器 = theory/icl_construction.py 中植"
         "入的 bug icl.ahn-gamma-is-sigma（原先是替换预测）；阈值 {1} 不变"),
    _pat("version 2 (issue 14), NARROWED: Raventos et al.'s 'closest to ridge for large M' is not "
         "reproduced at tiny. At D = 1 the dMMSE of M = {} pool tasks nearly coincides with ridge "
         "(fresh-task MSE {} vs {} at seed {}), so which one the model is closer to is noise "
         "(seeds 1-2 failed that ordering before); where the two baselines do differ (seed {}, M = "
         "{s}, {} steps) the trained model stays closer to dMMSE (d_dmmse {s} vs d_ridge {s}): "
         "within this budget M* lies above {}, where dMMSE and ridge are no longer distinguishable "
         "in D = 1. Larger D needs more steps than the tiny tier allows (issue 12: D = 2, M = 32 "
         "did not learn in 1000 steps at d_model 16). What is decided: memorisation at the "
         "smallest M and in-context regression on fresh tasks at the largest (the seed's 'task "
         "memory' vs 'true ICL', 000:999), on every seed; the ridge-vs-dMMSE ordering at the "
         "largest M is reported per seed.",
         "版本 2（issue 14），已收窄：Raventos et al. 的 '对大 M 最接近岭回归' 在 tiny 规模下没有复"
         "现。D = 1 时 M = {1} 个任务池的 dMMSE 几乎与岭回归重合（种子 {4} 上新任务 MSE 为 {2} 对 "
         "{3}），所以模型更接近哪一个只是噪声（种子 1-2 此前在这一排序上失败）；在两个基线确实不同"
         "之处（种子 {5}，M = {6}，{7} 步），训练后的模型更接近 dMMSE（d_dmmse {8} 对 d_ridge "
         "{9}）：在这一预算下 M* 高于 {10}，而在那里 D = 1 时 dMMSE 与岭回归已无法区分。更大的 D 需"
         "要比 tiny 层允许的更多步数（issue 12：D = 2, M = 32 在 d_model 16 下 1000 步没有学会）。"
         "判定的内容是：在最小的 M 上是记忆，在最大的 M 上对新任务做上下文回归（种子的 '任务记忆' "
         "对 '真正的 ICL'，000:999），每个种子都如此；最大 M 处岭回归与 dMMSE 的排序按种子报告。"),
    _pat("ridge side at M = {} (reported): contrast (d_dmmse - d_ridge) / sum per seed {s}",
         "M = {1} 处的岭回归一侧（仅报告）：各种子的对比度 (d_dmmse - d_ridge) / sum 为 {2}"),
    _pat("version 2 (issue 14): the cosine of sensitivities does not depend on eta, so the "
         "eta-sensitive relative RMS against GD(f eta*) (f = 0.8, 1, 1.25) was added; three seeds, "
         "decided on the worst; falsifier = planted bug icl.line-search-eta-per-pair in "
         "theory/icl_baselines.py (the line search's eta n times too small); it was the untrained "
         "model. Threshold {} set from seeds 0-4 at tiny (see the report of issue 14).",
         "版本 2（issue 14）：敏感度的余弦不依赖于 eta，因此新增了对 eta 敏感的、相对 GD(f eta*)"
         "（f = 0.8, 1, 1.25）的相对 RMS；三个种子，按最差者判定；证伪器 = theory/icl_baselines.py "
         "中植入的 bug icl.line-search-eta-per-pair（线搜索的 eta 小了 n 倍）；原先是未训练的模型。"
         "阈值 {1} 由 tiny 规模下的种子 0-4 确定（见 issue 14 的报告）。"),
    _pat("Required gap {} (set from a 5-seed sweep at size tiny, version 2): the held-out accuracy "
         "has standard error <= 0.5/sqrt({}) = {}.",
         "要求的差距 {1}（由 tiny 规模下 5 个种子的扫描确定，版本 2）：留出准确率的标准误 <= "
         "0.5/sqrt({2}) = {3}。"),
    _pat("The seed's 1600 vs ~18 is T^2 eps vs T^2 eps / k; its derivation ('substitute "
         "T -> T/k') literally gives (T/k)^2 eps = {}. T^2 eps / k holds when each chunk errs with "
         "probability eps and cost is counted per step; with eps per executed step the worst case "
         "gives no gain (theory/compounding_error.py).",
         "种子的 1600 对 ~18 是 T^2 eps 对 T^2 eps / k；其推导（'代入 T -> T/k'）按字面给出 "
         "(T/k)^2 eps = {1}。当每个动作块以概率 eps 出错且代价按步计数时 T^2 eps / k 成立；若 eps "
         "针对每个执行步，最坏情况下没有任何收益（theory/compounding_error.py）。"),
    _pat("Issue 12: tiny trains {} steps on {} demos, horizon {}, k in {s}. Issue 14 (version 2): "
         "on the worst of the seeds; 'error(second k) <= error(1)' and 'min_k error(k) <= 0.9 "
         "error(1)' became 'error falls at every step of k' and 'error(k_max) <= 0.9 error(1)' "
         "(what the statement says; the old pair let a queue that holds the first action of every "
         "chunk pass: its k = 4 still beat k = 1 by 10-15 %, while its k = 16 was 1.4 x worse than "
         "k = 1).",
         "Issue 12：tiny 在 {2} 条演示上训练 {1} 步，时域 {3}，k 取 {4}。Issue 14（版本 2）：取各种"
         "子中最差的；'error(second k) <= error(1)' 和 'min_k error(k) <= 0.9 error(1)' 改为 '误差"
         "随 k 的每一步下降' 和 'error(k_max) <= 0.9 error(1)'（这正是陈述所说的；旧的一对条件会放"
         "过一个保留每个动作块第一个动作的队列：它的 k = 4 仍比 k = 1 好 10-15 %，而它的 k = 16 比 "
         "k = 1 差 1.4 倍）。"),
]

# --- labels and notes of the claims added late in issue 18 -------------------------------------
_LABELS.update({
})

_LABEL_PATTERNS += [
]

_NOTES.update({
    "not refuted: O(log(1/eps)) layers at FIXED kappa (000:973's big-O for a strongly convex loss) "
    "- the ratio layers(1e-6) / layers(1e-3) ~ 2 is a pass condition; the seed's "
    "'depth = log(1/eps)' drops the factor kappa": (
        "未被驳斥：在固定 kappa 下需要 O(log(1/eps)) 层（000:973 对强凸损失的大 O）——比值 "
        "layers(1e-6) / layers(1e-3) ~ 2 是一个通过条件；种子的 'depth = log(1/eps)' 丢掉了因子 "
        "kappa"
    ),
    "Efficiency, not ability: the power-sum phi needs a latent width n (Wagstaff et al. 2019: a "
    "continuous sum-decomposition of functions of n reals needs width >= n); a Set Transformer "
    "sees pairs directly at O(n^2) (SAB) or O(n m) (ISAB).": (
        "是效率问题，而非能力问题：幂和 phi 需要隐宽度 n（Wagstaff et al. 2019：n 个实数的函数的连"
        "续求和分解需要宽度 >= n）；Set Transformer 以 O(n^2)（SAB）或 O(n m)（ISAB）直接看到点对。"
    ),
})

_NOTE_PATTERNS += [
    _pat("004:162-167 (version 2, issue 18): the seed's masked_fill(mask == 0, -1e9) on the same "
         "scores agrees with the project on rows with an allowed key (max difference {}) and gives "
         "fully masked rows weights {} (= 1/{}); on float16 scores: {s}",
         "004:162-167（版本 2，issue 18）：种子在同样分数上的 masked_fill(mask == 0, -1e9) 在含有允"
         "许 key 的行上与本项目一致（最大差 {1}），而给完全被掩码的行权重 {2}（= 1/{3}）；在 "
         "float16 分数上：{4}"),
    _pat("Attention weights computed per set at n = {s}: SAB {s}, ISAB {s} (the tensors at the "
         "attention layers' hook_pattern, all heads).",
         "n = {1} 时每个集合计算的注意力权重数：SAB {2}，ISAB {3}（注意力层 hook_pattern 处的张量，"
         "全部头）。"),
]

# --- notes: citation corrections of robotics.paper-reports -------------------------------------
_ACT_SRC_EN = (
    "(Zhao, Kumar, Levine & Finn, 'Learning Fine-Grained Bimanual Manipulation with Low-Cost "
    "Hardware', RSS 2023 (arXiv 2304.13705), §VI-A and Fig. 9a (chunk-size ablation, no temporal "
    "ensembling, averaged over the simulated Transfer Cube and Bimanual Insertion tasks with "
    "scripted and human data); abstract (80-90 % on real tasks))"
)
_ACT_SRC_ZH = (
    "（Zhao, Kumar, Levine & Finn，'Learning Fine-Grained Bimanual Manipulation with Low-Cost "
    "Hardware'，RSS 2023（arXiv 2304.13705），§VI-A 和 Fig. 9a（动作块大小消融，无时间集成，在仿真"
    "的 Transfer Cube 和 Bimanual Insertion 任务上对脚本数据和人类数据取平均）；摘要（真实任务上 "
    "80-90 %））"
)
_NOTES.update({
    "000:903: neither paper claims adaptation from in-context demonstrations: RT-2 reports "
    "zero-shot generalisation to novel objects and instructions and emergent semantic reasoning of "
    "a co-fine-tuned VLM; pi0 learns new tasks by fine-tuning (post-training) the pre-trained "
    "model on task data (Brohan et al., 'RT-2: Vision-Language-Action Models Transfer Web "
    "Knowledge to Robotic Control', 2023 (arXiv 2307.15818), abstract and evaluation; Black et "
    "al., 'pi0: A Vision-Language-Action Flow Model for General Robot Control', 2024 (arXiv "
    "2410.24164), pre-training / post-training recipe)": (
        "000:903：两篇论文都没有声称能从上下文中的演示进行适应：RT-2 报告的是对新物体和新指令的零样"
        "本泛化，以及协同微调的 VLM 涌现出的语义推理；pi0 通过在任务数据上微调（后训练）预训练模型"
        "来学习新任务（Brohan et al.，'RT-2: Vision-Language-Action Models Transfer Web Knowledge "
        "to Robotic Control'，2023（arXiv 2307.15818），摘要与评估；Black et al.，'pi0: A "
        "Vision-Language-Action Flow Model for General Robot Control'，2024（arXiv 2410.24164），预"
        "训练 / 后训练流程）"
    ),
    "000:1300: the VLAs the chapter names (RT-2, Octo, pi0) adapt to new tasks or robots by "
    "fine-tuning, not from demonstrations in the context; the ICL constructions of §8.3.6 (linear "
    "regression in context) are not what these models are shown to do (RT-2 (arXiv 2307.15818); "
    "Octo Model Team, 'Octo: An Open-Source Generalist Robot Policy', RSS 2024 (arXiv "
    "2405.12213): finetuning to new domains; pi0 (arXiv 2410.24164))": (
        "000:1300：本章提到的 VLA（RT-2、Octo、pi0）是通过微调来适应新任务或新机器人的，而不是通过"
        "上下文中的演示；§8.3.6 的 ICL 构造（上下文中的线性回归）并不是这些模型被证明所做的事（RT-2"
        "（arXiv 2307.15818）；Octo Model Team，'Octo: An Open-Source Generalist Robot Policy'，"
        "RSS 2024（arXiv 2405.12213）：微调到新领域；pi0（arXiv 2410.24164））"
    ),
    "000:1318: the VLAs named (RT-2, Octo, pi0) are not shown to adapt from in-context "
    "demonstrations; new tasks are handled zero-shot or by fine-tuning (RT-2 (arXiv 2307.15818); "
    "Octo (arXiv 2405.12213); pi0 (arXiv 2410.24164))": (
        "000:1318：所提到的 VLA（RT-2、Octo、pi0）并没有被证明能从上下文中的演示进行适应；新任务靠"
        "零样本或微调来处理（RT-2（arXiv 2307.15818）；Octo（arXiv 2405.12213）；pi0（arXiv "
        "2410.24164））"
    ),
    "000:1180: Octo reports zero-shot success similar to RT-2-X (55B) on the WidowX and RT-1 robot "
    "tasks, and better than RT-1-X; it does not surpass RT-2-X, and the comparison is on tasks "
    "from the pretraining mixture of both (Open X-Embodiment), not a small data set (Octo Model "
    "Team (Ghosh, Walke, Pertsch, Black, Mees et al.), RSS 2024 (arXiv 2405.12213), zero-shot "
    "multi-robot evaluation: 'performs similarly to RT-2-X' (RT-2-X numbers from the Open "
    "X-Embodiment paper))": (
        "000:1180：Octo 报告在 WidowX 和 RT-1 机器人任务上的零样本成功率与 RT-2-X（55B）相近，且优"
        "于 RT-1-X；它并没有超过 RT-2-X，而且比较所用的任务来自两者共同的预训练混合数据（Open "
        "X-Embodiment），而不是一个小数据集（Octo Model Team（Ghosh, Walke, Pertsch, Black, Mees "
        "et al.），RSS 2024（arXiv 2405.12213），零样本多机器人评估：'performs similarly to RT-2-X'"
        "（RT-2-X 的数字来自 Open X-Embodiment 论文））"
    ),
    "000:1251: ACT's chunk size is k = 100 (2 s at 50 Hz) (Zhao, Kumar, Levine & Finn, 'Learning "
    "Fine-Grained Bimanual Manipulation with Low-Cost Hardware', RSS 2023 (arXiv 2304.13705), §IV "
    "(implementation) and §VI-A)": (
        "000:1251：ACT 的动作块大小为 k = 100（50 Hz 下 2 s）（Zhao, Kumar, Levine & Finn，"
        "'Learning Fine-Grained Bimanual Manipulation with Low-Cost Hardware'，RSS 2023（arXiv "
        "2304.13705），§IV（实现）和 §VI-A）"
    ),
    "000:1261: ACT's chunk-size ablation goes from 1 % at k = 1 and 44 % at k = 100, tapering for "
    "larger k; 80-90 % are the headline success rates on real-robot tasks with k = 100, a "
    "different experiment " + _ACT_SRC_EN: (
        "000:1261：ACT 的动作块大小消融从 k = 1 时的 1 % 到 k = 100 时的 44 %，k 更大时逐渐回落；"
        "80-90 % "
        "是 k = 100 时真实机器人任务上的主要成功率，属于另一个实验" + _ACT_SRC_ZH
    ),
    "000:1263: the ablation's numbers are 1 % at k = 1 and 44 % at k = 100, tapering for larger k "
    "(simulated tasks, no ensembling); no experiment of ACT reports 80-90 % at k = 90 "
    + _ACT_SRC_EN: (
        "000:1263：消融的数字是 k = 1 时 1 %、k = 100 时 44 %，k 更大时逐渐回落（仿真任务，无集成）"
        "；ACT "
        "没有任何实验报告 k = 90 时的 80-90 %" + _ACT_SRC_ZH
    ),
    "000:1265: ACT uses k = 100 (2 s at 50 Hz); its ablation's best chunk size on the simulated "
    "tasks was k = 100, with a slight decline above " + _ACT_SRC_EN: (
        "000:1265：ACT 使用 k = 100（50 Hz 下 2 s）；其消融中仿真任务上最好的动作块大小是 k = 100，"
        "更大时略有下降" + _ACT_SRC_ZH
    ),
    "000:1324: the ablation reports 1 % at k = 1 and 44 % at k = 100, tapering for larger k; 90 % "
    "is not an ablation number " + _ACT_SRC_EN: (
        "000:1324：消融报告 k = 1 时 1 %、k = 100 时 44 %，k 更大时逐渐回落；90 % 不是消融中的数字"
        + _ACT_SRC_ZH
    ),
})

# --- catalog -----------------------------------------------------------------------------------
ZH_TEXT: dict[str, str] = {**_LABELS, **_NOTES}

ZH_PATTERNS: list[tuple[str, str]] = _LABEL_PATTERNS + _NOTE_PATTERNS
