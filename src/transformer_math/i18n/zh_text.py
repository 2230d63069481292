"""Chinese for the few notes that claims still compose as plain strings (exact matches only).

Notes, figure titles and axis, series and line labels are translated where they are formatted:
a claim writes ``msg("English template {name:.3g}", name=...)`` and the Chinese template lives in
the gettext catalog (``locale/zh/LC_MESSAGES/transformer_math.po``, :mod:`.catalog`); a plain
string equal to an argument-free msgid (a margin name, a table key such as ``measured``) is
translated by the catalog too. What is left here is ``ZH_TEXT``: the whole English note mapped to
its Chinese, for the notes two claims compose from their tables of records at run time,
``computation.circuit-class-audit`` (``"{item}: seed says {seed}; source says {paper} ->
{status}"``) and ``robotics.paper-reports`` (``"000:{line}: {correct} ({source})"``). Their
Chinese reorders and rewords the fields (``种子（004 第 10 章，Theorem 2.3）说 ...``), so one
template with nested messages would not give the same text; making each record's note a message
of its own is the way to empty this table. The regular expressions that matched English output
after the fact, and the exact entries of texts no claim prints any more, are gone (issue 37).
Terminology follows the main seed (``000``), as in :mod:`.zh_statements`.
"""

from __future__ import annotations

# --- notes: the citation audit of computation.circuit-class-audit ------------------------------
# (composed as "{item}: seed says {seed}; source says {paper} -> {status}" from the claim's _AUDIT
# table; the Chinese reorders the fields)
_NOTES: dict[str, str] = {
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
}

# --- notes: citation corrections of robotics.paper-reports -------------------------------------
# (composed as "000:{line}: {correct} ({source})" from the claim's CORRECTIONS records)
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
ZH_TEXT: dict[str, str] = dict(_NOTES)
