"""The ``tmath`` command: the application, its root options and the one error path.

Every subcommand lives in ``transformer_math/commands/`` (one module each: ``verify``,
``list_claims`` (``tmath list``), ``show``, ``margins``, ``report``, ``bench``, the calculators,
``doctor``, ...), found by where it lives (:func:`register_extra_commands`); the options several
commands share are in ``commands/options.py``, the consoles and ``--json`` output in
``commands/output.py``, the argument checks in ``commands/args.py``. This module holds the
``typer`` application, ``--version``, and :class:`TmathGroup`, the one place an error becomes
what the user sees.

Every user mistake (unknown tier or id, a ``-k`` pattern matching nothing, an invalid regular
expression, an unreadable results file, an unknown option, a number that is not finite or out of
its range, an output path whose folder is missing) prints one line to stderr,
``tmath CMD: error: ...``, and exits 2; numbers and output paths are checked before any work
(``commands/args.py``), and a result that would overflow is an error, never ``inf`` output.
A ``ValueError``, ``TypeError`` or ``OSError`` a command raises on user input is printed the
same way (see :data:`USER_INPUT_ERRORS`); any other exception is a bug and shows its traceback.
Exit 1 means "ran, but the result is negative" (a claim failed, a bug survived, a benchmark
missed its target). Claims, torch and matplotlib are imported only inside the
commands that need them, so ``tmath --help`` is fast.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

try:  # typer vendors click from 0.2x on
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer depends on click itself
    from click.exceptions import ClickException, UsageError  # type: ignore[no-redef]

from transformer_math.commands.args import error_line, is_internal
from transformer_math.commands.options import LANGS, SIZES, TIERS

__all__ = ["LANGS", "SIZES", "TIERS", "TmathGroup", "app", "main", "register_extra_commands"]


class TmathGroup(TyperGroup):
    """A typer group whose usage errors are one line on stderr (``tmath CMD: error: ...``)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `tmath`: the help text
                exc.show()
            else:
                _print_error(exc, prog_name or "tmath")
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("tmath: aborted", err=True)
            sys.exit(1)
        except USER_INPUT_ERRORS as exc:
            if is_internal(exc) or os.environ.get("TMATH_TRACEBACK"):
                raise
            where = " ".join([prog_name or "tmath", *self._command_name(args)])
            typer.echo(error_line(where, _one_line(exc), hint=False), err=True)
            sys.exit(2)
        sys.exit(rv if isinstance(rv, int) else 0)

    def _command_name(self, args: Sequence[str] | None) -> list[str]:
        """The subcommand named on the command line (``[]`` when there is none)."""
        words = list(sys.argv[1:] if args is None else args)
        name = next((w for w in words if w in self.commands), None)
        return [] if name is None else [name]


USER_INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, OSError)
"""Exceptions that a command raises for a user's input and that ``tmath`` prints as one line
with exit 2: ``ValueError``/``TypeError`` are how the library refuses an argument (by the
project's convention they name it), ``OSError`` (``FileNotFoundError``, ``PermissionError``,
...) is the file system refusing a path the user gave. They count only outside
``commands.args.internal_work`` (claims, benchmarks and the bug zoo run inside it): there they
are bugs of ours. Every other exception (``RuntimeError``, ``AssertionError``, ``KeyError``,
``IndexError``, ``ZeroDivisionError``, ``RecursionError``, ``MemoryError``, ...) is a bug and
keeps its traceback; set ``TMATH_TRACEBACK=1`` to see the traceback of a refused input too."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {str(exc.filename)!r}" if exc.filename is not None else "")
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _print_error(exc: ClickException, prog_name: str) -> None:
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else prog_name
    typer.echo(error_line(where, exc.format_message(), hint=isinstance(exc, UsageError)),
               err=True)


app = typer.Typer(
    name="tmath",
    cls=TmathGroup,
    help="The mathematics of Transformers, checked by running code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        from transformer_math import __version__

        typer.echo(f"transformer-math {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """The mathematics of Transformers, checked by running code.

    `tmath verify` runs the claim registry; `tmath list` shows what it holds.
    """


# --- subcommands (transformer_math/commands/) -------------------------------------


DEFAULT_HELP_ORDER = 100
"""``HELP_ORDER`` of a command module that sets none (``verify`` .. ``bench`` set 0..5, so that
``tmath --help`` lists the claim commands first)."""


def register_extra_commands(
    target: typer.Typer, package: str = "transformer_math.commands"
) -> list[str]:
    """Import every module of ``package`` and call its ``register(target)`` when it has one.

    Returns the names of the modules that registered something, in the order they did: by
    their ``HELP_ORDER`` (default :data:`DEFAULT_HELP_ORDER`; the order of ``tmath --help``),
    then by name. Modules whose name starts with ``_`` are skipped; see
    ``transformer_math/commands/__init__.py`` for the rules.
    """
    pkg = importlib.import_module(package)
    modules = [importlib.import_module(f"{package}.{info.name}")
               for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name)
               if not info.name.startswith("_")]
    registered: list[str] = []
    for module in sorted(modules, key=lambda m: getattr(m, "HELP_ORDER", DEFAULT_HELP_ORDER)):
        register = getattr(module, "register", None)
        if callable(register):
            register(target)
            registered.append(module.__name__.rpartition(".")[2])
    return registered


register_extra_commands(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``tmath`` (``argv`` defaults to ``sys.argv[1:]``); exits the process."""
    app(args=list(argv) if argv is not None else None, prog_name="tmath")


if __name__ == "__main__":
    main()
