"""Presentation of claim results (ARCHITECTURE.md layer 8): JSON files, terminal tables, HTML.

The single source of truth for every view is the *results document*, the JSON written by
``tmath verify --json FILE``::

    {"schema": "transformer-math/results/1",
     "claims": [ClaimResult.to_json(), ...],          # id, topic, source, statement, tier,
                                                       # verdict, predicted, measured, tolerance,
                                                       # falsifier, seconds, notes, details, ...
     "summary": summarize(...) + {"seed", "tier", "size", "pattern", "version", "torch",
                                  "numpy", "python", "platform", "torch_threads",
                                  "timestamp"}}

- :mod:`~transformer_math.report.results` builds, writes and reads that document;
- :mod:`~transformer_math.report.left_out` says which registered claims a run left out, and why
  (the quick tier skips the training claims; ``-k`` what it does not match);
- :mod:`~transformer_math.report.table` turns it into ``rich`` tables for the terminal;
- :mod:`~transformer_math.report.figures` draws a claim's :class:`Figure` data with matplotlib;
- :mod:`~transformer_math.report.html` writes the self-contained HTML report, in the chapter's
  order, in English or Chinese (:func:`~transformer_math.report.html.render_report`);
- :mod:`~transformer_math.report.browser` opens a page in headless Chromium: its DOM after the
  scripts ran, a screenshot, and which characters no installed font can draw.

Submodules import their heavy dependencies (torch, matplotlib) only when they need them, so that
``tmath --help`` stays fast; import from the submodules directly.
"""
