"""Interface strings by key, in English and Chinese (headings, column names, labels, buttons).

Each entry is ``{"en": ..., "zh": ...}``; ``{name}`` fields are filled by
:func:`transformer_math.i18n.ui`. Keys are grouped by prefix: ``verdict.`` the four verdicts,
``report.`` the HTML report's words, ``cli.`` the terminal's.
"""

from __future__ import annotations

UI: dict[str, dict[str, str]] = {
    "verdict.verified": {"en": "verified", "zh": "已验证"},
    "verdict.refuted": {"en": "refuted", "zh": "已驳斥"},
    "verdict.failed": {"en": "failed", "zh": "失败"},
    "verdict.cited": {"en": "cited", "zh": "引用"},
    "verdict.inconclusive": {"en": "inconclusive", "zh": "尚无定论"},
    "kind.measurement": {"en": "measurement", "zh": "测量"},
    "kind.construction": {"en": "construction", "zh": "构造"},
    "kind.code-audit": {"en": "code audit", "zh": "原文代码核查"},
    "kind.model": {"en": "analytic model", "zh": "解析模型"},
    "kind.cited": {"en": "cited", "zh": "引用"},
    "kind.unknown": {"en": "unknown kind", "zh": "未知类型"},
    "legend.title": {"en": "How to read a claim", "zh": "如何阅读一条论断"},
    "legend.verdict.verified": {
        "en": "the measurement agrees with the statement, and the seed's own version holds too",
        "zh": "测量结果与论断一致，原文的说法也成立"},
    "legend.verdict.refuted": {
        "en": "the seed (the course text) is wrong here: the correct statement holds on the "
              "same measurement and the seed's version, quoted, does not. It is a finding about "
              "the text, not a failure of the project",
        "zh": "原文（课程文本）在此处有误：同一测量下正确的论断成立，而引用的原文说法不成立。"
              "这是关于原文的发现，不是本项目的失败"},
    "legend.verdict.failed": {
        "en": "the project's code disagrees with the theory: a bug, never hidden",
        "zh": "本项目的代码与理论不符：这是缺陷，绝不隐藏"},
    "legend.verdict.cited": {
        "en": "not checkable on a computer; the primary sources are given",
        "zh": "无法在计算机上检验；给出原始文献"},
    "legend.verdict.inconclusive": {
        "en": "the measurement ran, but at this size (or number of RNG seeds) it cannot decide "
              "the statement; the notes say what would",
        "zh": "测量已运行，但在此规模（或随机种子数）下无法判定该论断；备注说明需要什么条件"},
    "legend.kind.measurement": {
        "en": "an independently derived prediction compared with a value measured on library "
              "code a user runs; its falsifier is a bug planted in that code",
        "zh": "把独立推导的预测与在用户实际运行的库代码上测得的数值比较；证伪器是植入该代码的缺陷"},
    "legend.kind.construction": {
        "en": "a hand-built network or circuit shows that something is possible",
        "zh": "手工构造的网络或电路说明某件事是可能的"},
    "legend.kind.code-audit": {
        "en": "the seed's own code or arithmetic, run or recomputed",
        "zh": "运行或重算原文自己的代码或算术"},
    "legend.kind.model": {
        "en": "a conclusion of an analytic model (a roofline, a scaling law): the model's "
              "verdict, not a measurement's",
        "zh": "解析模型（roofline、缩放律）的结论：是模型的判断，不是测量的判断"},
    "legend.kind.cited": {"en": "primary sources only", "zh": "仅引用原始文献"},
    "legend.falsifier.term": {"en": "falsifier", "zh": "证伪器"},
    "legend.falsifier": {
        "en": "a real bug planted in the code the claim measures; the same check is run with it "
              "and must fail, or the claim proves nothing",
        "zh": "植入论断所测代码中的真实缺陷；用它重跑同一检验必须失败，否则该论断什么也证明不了"},
    "legend.seed.term": {"en": "seed", "zh": "种子 / 原文"},
    "legend.seed": {
        "en": "two meanings: the seed documents (the course text, files 000, 003, 004) and the "
              "random-number seed of a run (seed 0, 1, 2, ...)",
        "zh": "两种含义：原文文档（课程文本 000、003、004）和一次运行的随机数种子（0、1、2……）"},
    "report.distinct_errors": {"en": "distinct seed errors shown by running code",
                               "zh": "由运行代码证实的原文错误（去重）"},
    "report.modelled_errors": {"en": "seed errors by an analytic model",
                               "zh": "由解析模型得出的原文错误"},
    "report.quote": {"en": "the seed at {where}", "zh": "原文 {where}"},
    "report.reading": {"en": "reading tested", "zh": "所检验的读法"},
    "report.also_at": {"en": "the same error also at", "zh": "同一错误另见"},
    "report.field.kind": {"en": "kind", "zh": "类型"},
    "report.field.audit": {"en": "review notes", "zh": "审查说明"},
    "report.field.review": {"en": "adversarial review", "zh": "对抗式审查"},
    "report.decisive_conditions": {
        "en": "What this run must reach to decide the statement",
        "zh": "本次运行判定该论断所需满足的条件"},
    # --- the HTML report: page ---------------------------------------------------------------
    "report.title": {"en": "transformer-math: the chapter's claims, checked by running code",
                     "zh": "transformer-math：本章论断的代码验证"},
    "report.intro": {
        "en": "Each statement of the text below is checked by code: a prediction is compared "
              "with a value measured on the project's own implementation. Sections follow the "
              "chapter (§8.3.1-§8.3.8), then the companion text 004, then the concept page 003.",
        "zh": "下文正文中的每一条论断都由代码检验：把理论预测与在本项目自身实现上测得的数值比较。"
              "各节顺序与本章一致（§8.3.1-§8.3.8），然后是配套文本 004，最后是概念页 003。"},
    "report.toc": {"en": "Contents", "zh": "目录"},
    "report.summary": {"en": "Summary", "zh": "概要"},
    "report.summary_by_section": {"en": "Counts per section", "zh": "各节统计"},
    "report.claims": {"en": "claims", "zh": "条论断"},
    "report.falsifiers_caught": {"en": "falsifiers caught", "zh": "证伪器已捕获"},
    "report.problems": {"en": "problems", "zh": "问题"},
    "report.seconds": {"en": "seconds", "zh": "秒"},
    "report.col.section": {"en": "section", "zh": "章节"},
    "report.col.checked": {"en": "statements checked", "zh": "已检验论断"},
    "report.col.refutes": {"en": "distinct seed errors", "zh": "原文错误（去重）"},
    "report.col.corrections": {"en": "cited corrections", "zh": "引文更正"},
    "report.total": {"en": "total", "zh": "合计"},
    "report.other_section": {"en": "Other (no seed line)", "zh": "其他（无原文行号）"},
    "report.section_count": {"en": "{n} claims", "zh": "{n} 条论断"},
    "report.back_to_top": {"en": "back to top", "zh": "返回顶部"},
    "report.statements_translated": {
        "en": "statements in Chinese: {n} of {total} (the others are shown in English)",
        "zh": "中文陈述：{n}/{total} 条（其余显示英文原文）"},
    # --- filters -------------------------------------------------------------------------------
    "report.filters": {"en": "Filter", "zh": "筛选"},
    "report.filter.verdict": {"en": "verdict", "zh": "结论"},
    "report.filter.topic": {"en": "topic", "zh": "主题"},
    "report.filter.all_topics": {"en": "all topics", "zh": "全部主题"},
    "report.filter.search": {"en": "search", "zh": "搜索"},
    "report.filter.placeholder": {"en": "words in id, statement, notes ...",
                                  "zh": "编号、陈述、注释中的文字……"},
    "report.filter.shown": {"en": "{shown} of {total} claims shown",
                            "zh": "显示 {shown}/{total} 条论断"},
    "report.filter.noscript": {
        "en": "Filters and search need JavaScript; every claim is shown below.",
        "zh": "筛选与搜索需要 JavaScript；下面显示全部论断。"},
    # --- one claim -------------------------------------------------------------------------------
    "report.field.statement": {"en": "statement", "zh": "陈述"},
    "report.field.source": {"en": "source", "zh": "出处"},
    "report.field.seed_lines": {"en": "seed lines", "zh": "原文行号"},
    "report.field.also_in": {"en": "also read in", "zh": "亦见于"},
    "report.field.module": {"en": "project module", "zh": "项目模块"},
    "report.field.tier": {"en": "tier", "zh": "级别"},
    "report.field.expected": {"en": "expected", "zh": "预期结论"},
    "report.field.version": {"en": "version {v}", "zh": "版本 {v}"},
    "report.field.not_obtained": {"en": "not obtained", "zh": "未得到"},
    "report.field.seconds": {"en": "seconds", "zh": "耗时（秒）"},
    "report.field.tolerance": {"en": "tolerance", "zh": "容差"},
    "report.field.error": {"en": "error", "zh": "错误"},
    "report.conditions": {"en": "Pass conditions (the correct statement)",
                          "zh": "通过条件（正确的陈述）"},
    "report.seed_conditions": {
        "en": "The seed's own version, computed on the same measurement",
        "zh": "原文自身的版本，在同一测量上计算"},
    "report.col.quantity": {"en": "quantity", "zh": "量"},
    "report.col.measured": {"en": "measured", "zh": "测得"},
    "report.col.slack": {"en": "slack", "zh": "余量"},
    "report.col.holds": {"en": "holds", "zh": "成立"},
    "report.holds.yes": {"en": "yes", "zh": "是"},
    "report.holds.no": {"en": "no", "zh": "否"},
    "report.holds.seed_fails": {"en": "no: refutes the seed", "zh": "否：驳斥原文"},
    "report.values": {"en": "Predicted and measured values", "zh": "预测值与测得值"},
    "report.col.predicted": {"en": "predicted", "zh": "预测"},
    "report.col.value": {"en": "value", "zh": "值"},
    "left_out.line": {"en": "This run left out {n} of the registered claims: {parts}.",
                      "zh": "本次运行未包含 {n} 条已登记的论断：{parts}。"},
    "left_out.training": {
        "en": "{n} training claims of tier {tier} (tmath verify --tier {tier} runs them)",
        "zh": "{n} 条需要训练的 {tier} 层级论断（用 tmath verify --tier {tier} 运行）"},
    "left_out.tier": {"en": "{n} claims of tier {tier}", "zh": "{n} 条 {tier} 层级的论断"},
    "left_out.pattern": {"en": "{n} claims not matching -k {pattern}",
                         "zh": "{n} 条不匹配 -k {pattern} 的论断"},
    "report.col.condition": {"en": "condition tested", "zh": "所检验的条件"},
    "report.falsifier.failed_conditions": {
        "en": "The pass conditions that failed with the bug (why it was caught)",
        "zh": "植入缺陷后不成立的通过条件（即捕获的原因）"},
    "report.per_seed": {"en": "Per seed", "zh": "各随机种子"},
    "report.col.seed": {"en": "seed {s}", "zh": "种子 {s}"},
    "report.col.mean": {"en": "mean", "zh": "均值"},
    "report.col.spread": {"en": "spread", "zh": "离散度"},
    "report.details": {"en": "details", "zh": "详细数据"},
    "report.raw_json": {"en": "raw JSON", "zh": "原始 JSON"},
    "report.notes": {"en": "Notes", "zh": "注释"},
    # --- falsifier, refutations, corrections ---------------------------------------------------
    "report.falsifier.caught": {
        "en": "falsifier caught: planted bug {name} made the check fail",
        "zh": "证伪器已捕获：植入的缺陷 {name} 使检查失败"},
    "report.falsifier.missed": {
        "en": "falsifier NOT caught: with planted bug {name} the check still says {verdict}",
        "zh": "证伪器未捕获：植入缺陷 {name} 后检查仍判定为{verdict}"},
    "report.falsifier.not_run": {"en": "falsifier {name} was not run",
                                 "zh": "证伪器 {name} 未运行"},
    "report.falsifier.none": {"en": "no falsifier (a cited claim has nothing to plant)",
                              "zh": "无证伪器（引用类论断无可植入的缺陷）"},
    "report.falsifier.with_bug": {"en": "with the bug", "zh": "植入缺陷后"},
    "report.falsifier.correct_code": {"en": "correct code", "zh": "正确代码"},
    "report.refutes": {"en": "refuted seed statement", "zh": "被驳斥的原文陈述"},
    "report.correction": {"en": "cited correction", "zh": "引文更正"},
    "report.says": {"en": "{where} says", "zh": "{where} 原文"},
    "report.correct": {"en": "correct", "zh": "正确"},
    "report.correction_source": {"en": "source", "zh": "依据"},
    # --- figures ---------------------------------------------------------------------------------
    "report.figure": {"en": "figure {k}", "zh": "图 {k}"},
    "report.figure_error": {"en": "Figure {title} could not be drawn: {error}",
                            "zh": "图 {title} 无法绘制：{error}"},
    "report.figure_no_cjk": {
        "en": "No CJK font was found for matplotlib, so the figures are labelled in English "
              "(install fonts-noto-cjk for Chinese labels).",
        "zh": "matplotlib 未找到中文字体，因此图中标注为英文"
              "（安装 fonts-noto-cjk 可显示中文标注）。"},
    "report.figure_missing_glyphs": {
        "en": "characters without a glyph in the figure fonts: {chars}",
        "zh": "图中字体缺少以下字符：{chars}"},
    "report.footer": {
        "en": "Raw results: {link}. Generated by tmath; each claim's falsifier is its own check "
              "run with a bug planted in the library, and it is caught when that run fails.",
        "zh": "原始结果：{link}。由 tmath 生成；每条论断的证伪器是在库代码中植入缺陷后"
              "重新运行同一检查，该次运行失败即为已捕获。"},
    # --- the terminal ---------------------------------------------------------------------------
    "cli.col.statement": {"en": "statement", "zh": "陈述"},
}
