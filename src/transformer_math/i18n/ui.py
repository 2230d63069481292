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
    "report.col.refutes": {"en": "seed statements refuted", "zh": "被驳斥的原文陈述"},
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
    "report.col.threshold": {"en": "predicted / threshold", "zh": "预测 / 阈值"},
    "report.col.measured": {"en": "measured", "zh": "测得"},
    "report.col.slack": {"en": "slack", "zh": "余量"},
    "report.col.holds": {"en": "holds", "zh": "成立"},
    "report.holds.yes": {"en": "yes", "zh": "是"},
    "report.holds.no": {"en": "no", "zh": "否"},
    "report.holds.seed_fails": {"en": "no: refutes the seed", "zh": "否：驳斥原文"},
    "report.values": {"en": "Predicted and measured values", "zh": "预测值与测得值"},
    "report.col.predicted": {"en": "predicted", "zh": "预测"},
    "report.col.value": {"en": "value", "zh": "值"},
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
