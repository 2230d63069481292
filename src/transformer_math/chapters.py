"""The chapter structure of the three seed documents, by line, so that claims can be read in the
text's order (the report, ``tmath annotate``, ``tmath list -k 8.3.3``).

The seeds are not shipped with the project; this module holds only their headings' line numbers
and titles and each file's SHA-256 and line count, by which ``tmath annotate`` recognises a
user's own copy. Line numbers are 1-based, inclusive, as in :class:`~transformer_math.claims.
registry.SeedRef`.

- ``000``: the main text, 专题 8.3 (front matter, §8.3.0-§8.3.8, then the summary tables, the
  project section M1-M4 and the troubleshooting manual); headings at the lines marked ``¶``.
- ``004``: "Transformer数学基础": components (attention, heads, positions, efficiency, encoder/
  decoder) and chapters 9-13 on recent papers, then references.
- ``003``: the concept page ``transformer.md``.

Pure data (no project imports): every layer may import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """Lines ``start..end`` of seed ``seed`` form section ``key`` (e.g. ``"8.3.3"``)."""

    seed: str
    key: str
    start: int
    end: int
    title_en: str
    title_zh: str
    #: the section's subsections, each ``(start line, title_zh)``, for a table of contents
    parts: tuple[tuple[int, str], ...] = ()

    def contains(self, line: int) -> bool:
        return self.start <= line <= self.end

    def title(self, lang: str = "en") -> str:
        return self.title_zh if lang == "zh" else self.title_en


#: Every section of the three seeds in reading order: 000 first (the chapter), then 004, then 003.
SECTIONS: tuple[Section, ...] = (
    Section("000", "front", 1, 115, "Front matter: self-test, goals, map",
            "前置自测、本章目标与知识导航"),
    Section("000", "8.3.0", 116, 150, "§8.3.0 Four stages of Transformer theory",
            "§8.3.0 科研发展脉络：Transformer 理论的四个阶段"),
    Section("000", "8.3.1", 151, 407, "§8.3.1 Self-attention: QKV, softmax and scaling",
            "§8.3.1 自注意力机制：QKV、softmax 与缩放",
            ((177, "理论：自注意力的完整数学定义"), (213, "三条关键性质及其推导"),
             (283, "多头注意力"), (315, "因果掩码"), (331, "一个手算的最小例子"),
             (374, "自注意力的 Lipschitz 性质"), (388, "常见陷阱"), (398, "练习"))),
    Section("000", "8.3.2", 408, 537, "§8.3.2 Attention as a kernel method and a set function",
            "§8.3.2 自注意力作为核方法与集合函数",
            ((430, "理论 A：Nadaraya-Watson 核回归"), (464, "理论 A 续：RKHS 视角"),
             (488, "理论 B：集合函数"), (522, "常见陷阱"), (530, "练习"))),
    Section("000", "8.3.3", 538, 689, "§8.3.3 Positional encodings: sinusoids and RoPE",
            "§8.3.3 位置编码理论：正弦编码与 RoPE 群论",
            ((548, "反面：朴素位置编码为什么失败"), (564, "理论 A：正弦位置编码"),
             (586, "理论 B：RoPE 的群论推导"), (649, "理论 C：外推退化的频谱机理"),
             (668, "3D RoPE 与点云"), (672, "常见陷阱"), (680, "练习"))),
    Section("000", "8.3.4", 690, 798, "§8.3.4 Universal approximation",
            "§8.3.4 Transformer 万能逼近定理",
            ((698, "反面：单层、无注意力、无 FFN"), (712, "理论：Yun et al. 主定理"),
             (771, "理论-工程桥接"), (781, "常见陷阱"), (789, "练习"))),
    Section("000", "8.3.5", 799, 894, "§8.3.5 Computational power", "§8.3.5 Transformer 的计算能力",
            ((811, "历史与理论：图灵完备与 TC⁰"), (870, "理论-工程桥接"), (877, "常见陷阱"),
             (883, "练习"))),
    Section("000", "8.3.6", 895, 1077, "§8.3.6 In-context learning as gradient descent",
            "§8.3.6 上下文学习的数学机制：ICL = 隐式梯度下降",
            ((915, "理论：单层线性注意力 = 一步梯度下降"), (977, "ICL 作为隐式贝叶斯推断"),
             (993, "ICL 的相变"), (1007, "归纳头"), (1026, "VLA 的 few-shot 适应"),
             (1056, "常见陷阱"), (1064, "练习"))),
    Section("000", "8.3.7", 1078, 1197,
            "§8.3.7 Architecture: residuals, LayerNorm, scaling laws, FlashAttention",
            "§8.3.7 架构数学：残差连接、LayerNorm 与缩放律",
            ((1088, "理论 A：残差 = 前向 Euler"), (1100, "理论 B：LayerNorm = 球面投影"),
             (1124, "理论 C：缩放律与 Chinchilla"), (1158, "理论 D：FlashAttention 的 IO 复杂度"),
             (1176, "常见陷阱"), (1186, "练习"))),
    Section("000", "8.3.8", 1198, 1361, "§8.3.8 Bridges to VLA and the Decision Transformer",
            "§8.3.8 与 VLA、决策 Transformer 的桥接",
            ((1210, "理论 A：Decision Transformer"), (1245, "理论 B：ACT 与 action chunking"),
             (1288, "理论 C：VLA 的统一视角"), (1320, "常见陷阱"), (1328, "练习"),
             (1340, "工程决策范例：从零设计一个机器人 VLA"))),
    Section("000", "tables", 1362, 1572, "Misconceptions, summary, symbols and summary tables",
            "常见误解汇总、本章小结、符号表、术语表、定理速查表、知识点总表",
            ((1362, "本章常见误解汇总"), (1395, "本章小结"), (1407, "符号表"),
             (1443, "术语表"), (1530, "定理速查表"), (1557, "知识点总表"))),
    Section("000", "project", 1573, 1588, "Project: M1-M4", "累积项目：本章新增模块 M1-M4"),
    Section("000", "reading", 1589, 1659, "Further reading and later chapters",
            "延伸阅读与后续章节"),
    Section("000", "manual", 1660, 1715, "Troubleshooting manual and research practice",
            "故障排查手册与研究实践建议"),
    Section("004", "004.attention", 1, 103, "004 Self-attention: formula, complexity, softmax",
            "004 Self-Attention机制：核心公式、复杂度、数值稳定性"),
    Section("004", "004.heads", 104, 177, "004 Multi-head attention", "004 多头注意力"),
    Section("004", "004.position", 178, 279, "004 Positional encodings and RoPE",
            "004 位置编码与 RoPE"),
    Section("004", "004.efficient", 280, 320, "004 Efficient attention (FlashAttention)",
            "004 高效注意力机制"),
    Section("004", "004.encdec", 321, 384, "004 Encoder and decoder",
            "004 Transformer编码器与解码器"),
    Section("004", "004.ch9", 385, 563, "004 ch. 9 RoPE's high-dimensional blueprint",
            "004 第9章：RoPE 高维数学蓝图"),
    Section("004", "004.ch10", 564, 641, "004 ch. 10 Circuit complexity of RoPE",
            "004 第10章：RoPE 电路复杂度上界"),
    Section("004", "004.ch11", 642, 756, "004 ch. 11 Critical attention scaling",
            "004 第11章：Critical Attention Scaling"),
    Section("004", "004.ch12", 757, 882, "004 ch. 12 QK eigenspectrum localisation",
            "004 第12章：QK 特征谱局部化理论"),
    Section("004", "004.ch13", 883, 1076, "004 ch. 13 High-dimensional single-head attention",
            "004 第13章：单头注意力高维极限理论"),
    Section("004", "004.refs", 1077, 1107, "004 References", "004 参考文献"),
    Section("003", "003", 1, 90, "003 Concept page: Transformer", "003 概念页：Transformer"),
)

#: The seeds by prefix: the SHA-256 and line count of the copies this project's line numbers
#: refer to (``tmath annotate`` compares a user's file with these).
SEED_FILES: dict[str, dict[str, object]] = {
    "000": {"sha256": "3784aa069148eb4de7b278817478d6d47c064ccda75f2413572effe3a7bd69b0",
            "lines": 1715, "name": "000_200434394aa54b56.txt"},
    "003": {"sha256": "4dfe6658eec732ba8babf8e8c6e42078da3a88e5c9227e1abe1bfcf776a699c5",
            "lines": 90, "name": "003_8dcc832520a9e39a.txt"},
    "004": {"sha256": "9f25bb76b77a4e952185a57fc39662a55c7b727ae263bf561f714e1c4ecc79ef",
            "lines": 1107, "name": "004_5911fa9763e349d0.txt"},
}

#: The chapter's project modules (000:1573-1587) and the claims that are their checks.
PROJECT_MODULES: dict[str, str] = {
    "M1": "attention.sqrt-dk-variance",
    "M2": "position.rope-relative",
    "M3": "icl.one-step-gd",
    "M4": "architecture.chinchilla",
}


def section_of(seed: str, line: int) -> Section | None:
    """The section of seed ``seed`` that holds ``line`` (None outside every section)."""
    for s in SECTIONS:
        if s.seed == seed and s.contains(line):
            return s
    return None


def section_index(key: str) -> int:
    """The reading-order position of section ``key`` (for sorting); unknown keys sort last."""
    for i, s in enumerate(SECTIONS):
        if s.key == key:
            return i
    return len(SECTIONS)


def sections(seed: str | None = None) -> tuple[Section, ...]:
    """The sections (of one seed, or all) in reading order."""
    return tuple(s for s in SECTIONS if seed is None or s.seed == seed)
