"""The ``invarbench`` Typer app and what its commands share: usage errors and bad input as one
``error:`` line (``fail``), the consoles, tables of rows, the common options, dates and the
configuration."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
import typer.core
from rich.console import Console
from rich.table import Table
from rich.text import Text
# typer vendors its own click, and raises its usage errors, not those of the click package.
from typer._click.exceptions import UsageError

from tasks.config import load_config
from tasks.errors import ConfigError, LakeError
from tasks.lake.engine import check_versions
from tasks.suites.base import GeneratorError


class _OneLineErrors:
    """Usage errors (a missing option, a value of the wrong type, an unknown command) as the one
    ``error:`` line every other bad input gets, exit 2, instead of click's usage box; and no
    ``<bool>`` after ``--help``."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc]
        except UsageError as exc:
            fail(f"{exc.format_message().rstrip('.')}; see {ctx.command_path} --help")
        return []

    def get_help_option(self, ctx: typer.Context) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""  # a flag takes no value; typer would print its type, <bool>
        return option


class Command(_OneLineErrors, typer.core.TyperCommand):
    """Every command of the CLI (see :class:`_OneLineErrors`)."""


class Group(_OneLineErrors, typer.core.TyperGroup):
    """The CLI itself (see :class:`_OneLineErrors`)."""

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        """The command ``args`` name; an unknown one is one ``error:`` line, exit 2."""
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            fail(f"{exc.format_message().rstrip('.')}; see {ctx.command_path} --help")
        return None


    def invoke(self, ctx: typer.Context) -> Any:
        """Run the command; a lake it cannot use is a configuration problem: one line, exit 2."""
        try:
            return super().invoke(ctx)
        except LakeError as exc:
            fail(str(exc))
        return None


class App(typer.Typer):
    """A Typer whose commands are :class:`Command`, so a command added later gets the same errors."""

    def command(self, *args: Any, **kwargs: Any) -> Callable:
        """Register a command (typer's ``command``, with ``cls`` defaulting to :class:`Command`)."""
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


# Help in markdown: paragraphs reflow to the terminal's width and ``code`` prints as code.
app = App(help="invarbench: robustness of language models under answer-preserving transformations.",
          no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=Group,
          rich_markup_mode="markdown")
# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default. No markup:
# what is printed holds the user's text (paths, bins such as [lo, hi]), which must print as written.
console = Console(width=None if sys.stdout.isatty() else 160, markup=False)
err = Console(stderr=True, markup=False)

ConfigOpt = typer.Option(None, "--config", "-c", help="configuration file (default: ./invarbench.toml if present)")


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` on stderr and exit with ``code``."""
    err.print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def print_rows(rows: list[dict[str, Any]], title: str | None = None) -> None:
    """Print rows as a table (floats to 3 decimals)."""
    if not rows:
        console.print(f"{title + ': ' if title else ''}(no rows)")
        return
    table = Table(title=title, show_lines=False)
    for col in rows[0]:
        table.add_column(str(col), overflow="fold")
    for r in rows:
        table.add_row(*["" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v)) for v in r.values()])
    console.print(table)


def emit_rows(rows: list[dict[str, Any]], fmt: str, title: str | None = None) -> None:
    """Print rows as ``table`` (for people), ``csv`` or ``json`` (for scripts: nothing folded)."""
    if fmt == "json":
        print(json.dumps(rows, default=str))
    elif fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    else:
        print_rows(rows, title=title)


FormatOpt = typer.Option("table", "--format", help="table, csv or json")


def parse_date(option: str, value: str | None) -> dt.date | None:
    """The date an option gives as YYYY-MM-DD (None when not given); exit 2 naming the option otherwise."""
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value}: expected a date as YYYY-MM-DD")
    return None


def load(config: Optional[Path], overrides: dict[str, Any] | None = None, suites: bool | set[str] = True):
    """The configuration (``tasks.config.load_config``), once the DuckDB versions agree; exit 2 with
    one line otherwise."""
    # suites=False for the commands that only read the warehouse (see load_config)
    try:
        check_versions()
        return load_config(config, overrides, suites=suites)
    except (ConfigError, GeneratorError) as exc:
        fail(str(exc))
