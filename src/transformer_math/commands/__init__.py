"""Every ``tmath`` subcommand, discovered by where it lives (issue 37, item 2).

``verify``, ``list`` (``list_claims.py``), ``show``, ``margins``, ``report`` and ``bench`` live
here beside the calculators, the doctor and the rest; ``transformer_math.cli`` holds only the
application, ``--version`` and the one error path. Every module of this package whose name
does not start with ``_`` is imported by ``transformer_math.cli`` when the command line is
built; if it defines

    def register(app: typer.Typer) -> None

that function is called with the ``tmath`` application and adds its command(s), typically with
``app.command("name")(function)``. Nothing is listed by hand: adding ``commands/<name>.py`` adds
the command. A module without ``register`` is ignored: ``args.py`` (argument checks),
``options.py`` (the options several commands share: ``--tier``, ``-k``, ``--seed``, ``--lang``,
...) and ``output.py`` (consoles, progress bar, ``--json`` output) hold helpers. An optional
``HELP_ORDER`` (an int, default 100) places the module's commands in ``tmath --help``.

Rules for a command module, so that ``tmath --help`` stays fast and the conventions hold:

- import only ``typer`` (and the standard library) at module level; import torch, claims,
  theory, ... inside the command function;
- give the command a docstring (its ``--help`` text) and help texts for its options;
- check every number (finite, in range) and every output path (its folder exists) before any
  work, with the shared checks of ``commands/args.py`` (``number``, ``integer``,
  ``output_file``); on a user mistake call ``args.fail("...")`` or raise
  ``typer.BadParameter("...")`` (one line ``tmath CMD: error: ...``, exit 2); a result that
  overflows is an error too, never ``inf`` output (``args.json_text`` for ``--json``); exit 1
  with ``raise typer.Exit(1)`` when what it checks fails; offer ``--json`` for machine-readable
  output. A ``ValueError``/``TypeError``/``OSError`` that escapes a command is printed by
  ``tmath`` as one line (exit 2); wrap runs of library code on validated input in
  ``args.internal_work()`` so that such an exception keeps its traceback (it is a bug).
"""
