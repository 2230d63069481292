"""Chinese statements of the claims, by claim id (claims written later carry ``statement_zh``
themselves). A translation states the same claim as the English ``statement``: no more, no less.

Terminology follows the main seed (``000``): 自注意力, 缩放点积, 位置编码, 旋转位置编码 (RoPE),
上下文学习 (ICL), 归纳头, 前移头 (previous-token head), 残差, 缩放律, 动作分块, 时间集成,
剩余回报 (return-to-go), 置换等变, 行随机, 凸包, 核回归; formulas, identifiers and symbols are
kept exactly as in the English statement.
"""

from __future__ import annotations

ZH_STATEMENTS: dict[str, str] = {
    # --- architecture -------------------------------------------------------------------------
    "architecture.flash-io": (
        "本项目分块（tiled）注意力的慢速内存访问次数（运行时计数）随片上存储大小 M 按 Theta(N^2 "
        "d^2 / M) 变化，一旦 M 超过约 d^2，便优于标准注意力的 Theta(N d + N^2)。"
    ),
    "architecture.layernorm-geometry": (
        "LayerNorm 的输出均值为 0、范数为 sqrt(d)，且对 x -> a x + b 不变；RMSNorm 的输出范数为 "
        "sqrt(d)，对 x -> a x 不变，但对平移 x -> x + b 不是不变的。"
    ),
    "architecture.pre-vs-post-norm": (
        "初始化时，最后一层 FFN 权重的梯度 |dL/dW2_L|_F 对 Post-LN 为 O(d sqrt(ln d))，与深度 L 无"
        "关，对 Pre-LN 为 O(d sqrt(ln d / L))（Xiong et al. 2020, Theorem 1）：在本项目的 "
        "Transformer 上，它对 L 的双对数斜率，Post-LN 更接近 0 而非 -1/2，Pre-LN 更接近 -1/2 而非 "
        "0，每个种子都如此。"
    ),
    "architecture.residual-euler": (
        "L 个残差块的堆叠 x_{l+1} = x_l + (T/L) f(x_l)（本项目的 TransformerBlock，f = FFN(LN x)）"
        "就是 dx/dt = f(x) 的前向欧拉法：其输出收敛到 ODE 的解 x(T)，误差为 O(1/L)（双对数斜率 "
        "-1）。"
    ),
    # --- attention ----------------------------------------------------------------------------
    "attention.asymmetry": (
        "注意力矩阵一般不对称，即使 W_Q = W_K：此时 S = Q K^T 对称，但每一行除以它自己的归一化常数 "
        "Z_i，所以 A_ij / A_ji = Z_j / Z_i。"
    ),
    "attention.causal-mask": (
        "在 softmax 之前对对角线以上加 -inf，得到的权重在对角线以上恰为零，各行之和仍为 1，且位置 "
        "t 的输出在 t 之后的 token 改变时不变。"
    ),
    "attention.gqa-grouping": (
        "有 H 个 query 头和 H_kv 个 key/value 头的分组查询注意力（GQA）是这样一种多头注意力：query "
        "头 h 使用 key/value 头 h // (H / H_kv)；它等于一个普通多头注意力，其 key/value 投影把每个 "
        "key/value 头为它那一组 H / H_kv 个连续的 query 头重复一遍（Hugging Face 的 repeat_kv 以及"
        "预训练 GQA 检查点的布局）。"
    ),
    "attention.hand-example": (
        "对 q1 = (1, 0)，keys (1, 0)、(0, 1)、(1, 1)，values (10, 0)、(0, 10)、(5, 5)，d_k = 2，权"
        "重为 (0.401, 0.198, 0.401)，输出为 (6.01, 3.98)。"
    ),
    "attention.kv-cache-causal-alignment": (
        "使用 KV 缓存时，在 p 个已缓存 token 之后的 c 个新 token 组成的块位于位置 p, ..., p + c - "
        "1：因果注意力让块内第 i 个 query 看到 key j <= p + i（掩码右下对齐），因此逐块解码一个序列"
        "（一次预填充、一段多个 token，然后每次一个 token）与对整个序列做一次因果前向的输出完全相"
        "同。"
    ),
    "attention.low-rank-bottleneck": (
        "每个头的 S = Q K^T = X W_Q W_K^T X^T 的秩至多为 d_k = d / H（数值秩，n > d_k），且每个头把"
        "其 logits 缩放 1/sqrt(d_k) = 1/sqrt(d/H)，而不是 1/sqrt(d)。"
    ),
    "attention.multihead-param-count": (
        "第三份种子的表格对 d_model = 512, h = 8, d_k = d_v = 64 给出 W_Q, W_K, W_V = 3 x 512 x 64 "
        "= 98,304，总计约 360K。被驳斥：无论 h 为多少，多头注意力都有 4 d^2 = 1,048,576 个权重"
        "（W_Q, W_K, W_V 中 786,432 个），含偏置为 4 d^2 + 4 d = 1,050,624 个参数；使用 H_kv 个分"
        "组 key/value 头时为 (H + 2 H_kv) d_k (d + 1) + d^2 + d。"
    ),
    "attention.permutation-equivariance": (
        "没有位置信息时，自注意力是置换等变的：对每个置换矩阵 P，Attn(P X) = P Attn(X)。加上各行互"
        "不相同的位置编码（X + PE）会打破这一性质。"
    ),
    "attention.quadratic-cost": (
        "在固定头宽 d 下，完整 softmax 注意力的计算量随序列长度按 n^2 增长，而线性注意力 phi(Q) "
        "(phi(K)^T V) 按 n 增长。"
    ),
    "attention.softmax-saturation": (
        "当 d_k = 512 时，未缩放的 logits q.k（标准差 sqrt(512) ~ 22.6）使 softmax 的行近乎 "
        "one-hot，softmax 雅可比 diag(p) - p p^T 坍缩到接近 0；按 1/sqrt(d_k) 缩放的 logits 给出平"
        "缓的行和 O(1) 的雅可比。"
    ),
    "attention.sqrt-dk-variance": (
        "对分量独立服从 N(0, 1) 的 q、k，当 d_k 取 {16, 64, 512} 时，Var(q.k) = d_k，Var(q.k / "
        "sqrt(d_k)) = 1。一般地 Var(q.k) = d_k sigma_q^2 sigma_k^2，所以使方差归一的因子是 sigma_q "
        "sigma_k sqrt(d_k)：当 sigma_q = 2, sigma_k = 0.5 时，普通的 sqrt(d_k) 仍然正确；当 W_Q 以 "
        "W_K 两倍的方差初始化时则不然。"
    ),
    "attention.stable-softmax": (
        "对大小为 1e4 的 logits，朴素的 exp(x_i) / sum_j exp(x_j) 上溢为 inf/NaN（对接近 -1e4 的 "
        "logits 下溢为 0/0），而减去最大值的 softmax 是有限的，并在 float32 和 float64 下与 "
        "torch.softmax 一致。"
    ),
    # --- computation --------------------------------------------------------------------------
    "computation.circuit-class-audit": (
        "审查：第三份种子的 'TC^0[log n]' 类和 O(L H d^2 d_k log n) 规模公式不是论文中的结论（论文"
        "是 DLOGTIME 一致的 TC^0，多项式规模）；主种子的 'PARITY 不在 TC^0 中' 是错的：一个有 n+1 "
        "个门的深度 2 阈值电路就能计算 PARITY。"
    ),
    "computation.precision-claims": (
        "Transformer 只有在任意精度和硬注意力下才是图灵完备的；对数精度 Transformer 属于一致 TC^0；"
        "具有 poly(n) 精度、O(1) 层且 d <= O(n) 的 RoPE Transformer 属于 DLOGTIME 一致 TC^0。"
    ),
    # --- expressivity -------------------------------------------------------------------------
    "expressivity.no-position-equivariant": (
        "没有位置编码时，每个 Transformer 都是置换等变的：相同的 token 无论位于何处都得到相同的输"
        "出，因此像反转或复制第一个这样的目标最多只能达到等变贝叶斯上限；位置编码打破了这种对称性。"
    ),
    "expressivity.no-position-fit": (
        "在一个非等变目标（反转）上训练时，没有位置信息的模型停留在精确的等变贝叶斯上限或其以下，而"
        "同一模型加上可学习位置就能拟合它（每个种子）。"
    ),
    # --- icl ----------------------------------------------------------------------------------
    "icl.bayes-posterior": (
        "在 M 个任务上的离散先验下，随着示例增多，后验集中到真实任务上；在高斯先验 w ~ N(0, tau^2 "
        "I) 下，lambda = sigma^2/tau^2 的岭回归风险最低，等于贝叶斯风险 sigma^2 + E tr((X^T X / "
        "sigma^2 + I / tau^2)^{-1})。"
    ),
    "icl.induction-circuit": (
        "手工写入本项目 2 层仅注意力 Transformer 的归纳电路（不训练：第 0 层的前移头，其输出是第 1 "
        "层归纳头的 key），在一个由 L 个不同 token 重复两次组成的序列上，第 0 层从 t 注意到 t - 1，"
        "第 1 层从 t 注意到 t - L + 1，并预测出第二遍中第一个 token 之后的每个 token。"
    ),
    "icl.neumann-ols": (
        "L 个堆叠的构造层执行 L 步 GD：w_L = eta sum_{j<L} (I - eta H)^j b，当 0 < eta < "
        "2/lambda_max(H) 时它收敛到 OLS 解，误差 <= |I - eta H|^L |w*|；标量例子 H = 1, b = 2, eta "
        "= 0.5 给出 0, 1, 1.5, 1.75, 1.875。"
    ),
    "icl.one-step-gd": (
        "一个线性自注意力层，W_K = W_Q = [[I,0],[0,0]]、W_V = [[0,0],[0,-1]]、P = (eta/N) e e^T，输"
        "出 -h[-1,-1] = eta/N x_q^T X^T y，即在 L(w) = 1/(2N) sum (w^T x_i - y_i)^2 上从 w_0 = 0 走"
        "一步 GD 的预测（float64 误差 < 1e-10）。"
    ),
    "icl.regression-prompt-causal": (
        "在交错提示 x_1, y_1, ..., x_K, y_K 中，在因果掩码下于 x_i token 处读出"
        "（icl.task-diversity-transition 的设定），对 y_i 的预测依赖于 i 之前的数据对，而不依赖于 "
        "y_i 或其后的任何内容：改变 y_j 使 i <= j 处的预测保持不变（在 float64 舍入范围内），并改"
        "变 i > j 处的预测。"
    ),
    # --- kernel -------------------------------------------------------------------------------
    "kernel.gaussian-equivalence": (
        "softmax(q.k / s^2) 的行等于 exp(-|q - k|^2 / 2 s^2) exp(|k|^2 / 2 s^2) 归一化后的行："
        "query 因子 exp(-|q|^2/2s^2) 在行归一化中消去，而 key 因子 exp(-|k|^2/2s^2) 只有在所有 key "
        "范数相同时才消去（此时 softmax 的行就是归一化的高斯核行）。种子说两个因子都会消去。"
    ),
    "kernel.linear-attention-rnn": (
        "因果线性注意力的并行形式（显式带掩码的核矩阵）等于其循环形式（S += phi(k) v^T，z += "
        "phi(k)，out = phi(q)^T S / phi(q)^T z）以及分块的 O(n) 内存形式，对 elu+1、relu 和正随机特"
        "征都成立。"
    ),
    "kernel.random-features": (
        "正随机特征 phi(x) = exp(w^T x - |x|^2/2)/sqrt(m) 无偏地估计 softmax 核 exp(q.k)，相对 RMS "
        "误差为 sqrt((exp|q+k|^2 - 1)/m) ~ m^(-1/2)；更尖锐（温度更低）的核需要更多特征。"
    ),
    "kernel.set-invariance": (
        "Deep Sets（sum、mean、max 池化）和 Set Transformer（SAB + PMA）是置换不变的，SAB 是置换等"
        "变的（每个集合各自置换）；给元素加上位置编码会同时打破这两种性质。"
    ),
    # --- longcontext / memory -----------------------------------------------------------------
    "longcontext.critical-scaling": (
        "对两两余弦为 rho 的归一化 token 和 logits gamma log(n) <y_i, y_j>，当 gamma < gamma_c = "
        "1/(1-rho) 时自权重随 n 增长而消失（坍缩），当 gamma > gamma_c 时趋于 1（恒等）；转变位于 "
        "gamma_c。第三份种子的 f(T) = 1 + c loglog T / 1 + c (log T)^1.5 除数没有转变（对每个 c 都"
        "坍缩），其 Llama-2 困惑度表格也不出自该论文：被驳斥 / 无依据。"
    ),
    # --- position -----------------------------------------------------------------------------
    "position.alibi": (
        "当 H 为 2 的幂时 ALiBi 斜率为 2^(-8h/H)，否则遵循 Press et al. 的交错规则；偏置随距离线性"
        "变化，通过 query/key 投影为零的 MultiHeadAttention 的注意力权重测量。"
    ),
    "position.kv-cache-compatibility": (
        "使用 KV 缓存的增量解码等于完整重算，对加性正弦编码（在其绝对位置加到 token 嵌入上）和 "
        "RoPE 都成立；第三份种子的 '正弦编码需要重算' 对标准解码被驳斥。"
    ),
    "position.rope-precision": (
        "对 bf16 模型，以 float32 计算角度可使位置 4096 处的相位误差低于 1e-2 rad；以 bf16 计算则误"
        "差接近 π。"
    ),
    "position.rope-relative": (
        "<R_m q, R_n k> 只依赖于 n - m（随机的 m、n，最大到 1e4）；θ = π/2 的算例对位置 (1, 3) 和 "
        "(5, 7) 都给出 -1。"
    ),
    # --- robotics -----------------------------------------------------------------------------
    "robotics.chunking-tradeoff": (
        "存在扰动时，长的开环动作块无法作出反应（成功率随 k 增大而下降）；每步重新规划（MPC 控制时"
        "域 T_a = 1 < k）保持反应能力；ACT 的时间集成（最旧优先 exp(-0.01 i)）降低高频动作功率；它"
        "是否恢复反应能力，与最新优先的集成并列测量。每个条件在每个种子上都成立。"
    ),
    "robotics.dt-causal-conditioning": (
        "Decision Transformer 对 a_t 的预测（在状态 token s_t 处读出）只是 R_1..R_t、s_1..s_t 和 "
        "a_1..a_{t-1} 的函数：改变 a_t 或任何更晚的 token 不改变它，改变 R_t 或 s_t 会改变它。"
    ),
    "robotics.dt-return-reachability": (
        "在数据范围内，实际获得的回报跟随目标回报，高于该范围时不再提高（尽管更高的回报在物理上可以"
        "达到），每个种子都如此。种子更强的形式 '以数据中的最佳回报为上限' 也被测量：当 DT 在饱和之"
        "前于每个种子上都外推超过数据最大值（超过数据回报跨度的 15 %）时，该形式被驳斥。"
    ),
    "robotics.dt-stitching": (
        "在一个数据只包含 A->B 和 B->C 两半（以及 A->D）的网格世界上，离线 Q 学习能找到 A->B->C，而"
        "以完整回报（4）为条件的 Decision Transformer 不能，尽管它能复现数据中已有的回报 3"
        "（A->D）；每个种子都如此。"
    ),
    "robotics.multimodal-actions": (
        "在一个向左或向右绕开障碍的任务上，MSE 策略对各模态取平均，在大多数 rollout 中发生碰撞；ACT"
        "（CVAE，每个 episode 采样一次 z，L1 动作块）的碰撞显著更少（两比例 z >= 3），且由其隐变量"
        "选择方向：两次独立抽取的 z 会把一些起点送往不同的方向。每个种子都如此。（issue 14 中收窄："
        "在 tiny 规模下 CVAE 没有复现演示数据的 50/50 划分，见注释。）"
    ),
    # --- spectrum -----------------------------------------------------------------------------
}
