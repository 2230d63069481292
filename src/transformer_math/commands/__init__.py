"""Extra ``tmath`` subcommands (calculators), discovered by where they live.

Every module of this package whose name does not start with ``_`` is imported by
``transformer_math.cli`` when the command line is built; if it defines

    def register(app: typer.Typer) -> None

that function is called with the ``tmath`` application and adds its command(s), typically with
``@app.command("name")``. Nothing is listed by hand: adding ``commands/<name>.py`` adds the
command. A module without ``register`` is ignored (it may hold helpers).

Rules for a command module, so that ``tmath --help`` stays fast and the conventions hold:

- import only ``typer`` (and the standard library) at module level; import torch, claims,
  theory, ... inside the command function;
- give the command a docstring (its ``--help`` text) and help texts for its options;
- on a user mistake raise ``typer.BadParameter("...")`` (one-line error, exit 2); exit 1 with
  ``raise typer.Exit(1)`` when what it checks fails; offer ``--json`` for machine-readable output.
"""
