"""The CSS the project's HTML pages share: the claims report (``report/html.py``, layer 8) and
the doctor's report (``doctor/report.py``, layer 6), which may not import the report package.

Pure data and one string function (no project imports): every layer may import it.

Colours: ``--teal`` marks a ``refuted`` verdict, a finding about the seed text; it is kept apart
from red (a failure of the project) and from purple, which readers took for one (issue 38.3).
:data:`ROOT_COLOURS` is the one definition of the verdict colours; every HTML page (the report,
the doctor's report, ``tmath annotate``'s seed page) starts its CSS with it, so that a verdict
has the same colour everywhere (the terminal uses the nearest of rich's colours:
``report.table.VERDICT_STYLES``, cyan for refuted).

:func:`page_css` gives the common rules (colours, page width, type, cards, badges, field lists,
figures, footer) with a font stack for the page's language; each page appends its own rules.
Chinese pages put CJK fonts first so that Latin text keeps its system font only where the CJK
font has none; every family is a local font (no web fonts, the pages work offline).
"""

from __future__ import annotations

#: Latin text: the operating system's interface font.
LATIN_FONTS = 'system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif'

#: Simplified Chinese: Noto / Source Han (Linux, Android), PingFang (macOS, iOS),
#: Microsoft YaHei (Windows), then the generic family.
CJK_FONTS = ('"Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "PingFang SC", '
             '"Hiragino Sans GB", "Microsoft YaHei", "WenQuanYi Micro Hei", sans-serif')

MONO_FONTS = 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Noto Sans Mono CJK SC", monospace'


#: Each verdict's colour on every HTML page (CSS custom properties of :data:`ROOT_COLOURS`).
VERDICT_COLOURS: dict[str, str] = {
    "verified": "#1a7f37",  # --green
    "refuted": "#0f7b76",  # --teal: a finding about the seed, not a failure of the project
    "failed": "#cf222e",  # --red
    "cited": "#0969da",  # --blue
    "inconclusive": "#9a6700",  # --yellow
}

#: The CSS variables of the verdict colours (and the grey of secondary text), one rule.
ROOT_COLOURS = (
    f":root {{ --green:{VERDICT_COLOURS['verified']}; --red:{VERDICT_COLOURS['failed']}; "
    f"--blue:{VERDICT_COLOURS['cited']}; --grey:#57606a;\n"
    f"         --yellow:{VERDICT_COLOURS['inconclusive']}; "
    f"--teal:{VERDICT_COLOURS['refuted']}; }}\n"
)


def font_stack(lang: str = "en") -> str:
    """The body font stack for a page in ``lang`` (``"zh"``: CJK fonts first)."""
    if lang == "zh":
        return ('system-ui, -apple-system, "Segoe UI", ' + CJK_FONTS)
    return LATIN_FONTS


def page_css(*, lang: str = "en", max_width: str = "1100px") -> str:
    """The rules every page shares, for a page in ``lang`` at most ``max_width`` wide."""
    return "\n" + ROOT_COLOURS + f"""* {{ box-sizing: border-box; }}
body {{ font: 15px/1.55 {font_stack(lang)};
       margin: 0 auto; max-width: {max_width}; padding: 1.5rem; color: #1f2328; background: #fff; }}
h1 {{ font-size: 1.6rem; margin: 0 0 .3rem; }}
code, pre {{ font: 13px/1.4 {MONO_FONTS}; }}
pre {{ background: #f6f8fa; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }}
.meta {{ color: var(--grey); margin: 0 0 1rem; }}
.cards {{ display: flex; flex-wrap: wrap; gap: .6rem; margin: 1rem 0; }}
.card {{ border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; min-width: 7.5rem; }}
.card b {{ display: block; font-size: 1.4rem; }}
.badge {{ display: inline-block; padding: .05rem .55rem; border-radius: 1rem; color: #fff;
         font-size: .8rem; font-weight: 600; vertical-align: middle; }}
.unknown {{ background: var(--grey); }}
dl.fields {{ display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
            margin: .6rem 0; }}
dl.fields dt {{ font-weight: 600; color: var(--grey); }} dl.fields dd {{ margin: 0; }}
.problem {{ color: var(--red); font-weight: 700; }}
figure {{ margin: .8rem 0; }}
figure img {{ max-width: 100%; height: auto; border: 1px solid #eee; }}
figcaption {{ color: var(--grey); font-size: .85rem; }}
.figure-error {{ color: var(--red); }}
footer {{ color: var(--grey); margin-top: 2rem; font-size: .85rem; }}
"""
