"""How subcommands print: tables for people (rich), JSON for scripts, messages on stderr.

Colour and styles appear only when stdout is a terminal (rich drops them otherwise, and honours NO_COLOR);
numbers carry thousands separators; a piped table is not wrapped to 80 columns.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

# A table piped to a file or another program is read by a program or a pager: one row per line, not wrapped.
PIPED_WIDTH = 400


def money(value: float | None) -> str:
    """Return dollars with thousands separators and cents: 12,345.60."""
    return "" if value is None else f"{value:,.2f}"


def number(value: float | None) -> str:
    """Return a count (shares, contracts, volume) with thousands separators and no needless decimals."""
    if value is None:
        return ""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def percent(value: float | None) -> str:
    """Return a percentage with two decimals and its sign: +1.25%."""
    return "" if value is None else f"{value:+,.2f}%"


def signed(text: str, value: float | None) -> Text:
    """Return ``text`` green when ``value`` is a gain and red when a loss (styles show on a terminal only)."""
    style = "" if not value else ("green" if value > 0 else "red")
    return Text(text, style=style)


def jsonable(value: Any) -> Any:
    """Return models (and lists or dicts of them) as plain JSON values."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stdin
        return False


class Output:
    """Where a subcommand writes: its tables and JSON to stdout, its messages to stderr."""

    def __init__(
        self,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        *,
        stdin: TextIO | None = None,
        terminal: bool | None = None,
    ) -> None:
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.stdin = stdin or sys.stdin
        # terminal: None finds out (isatty, TERM, NO_COLOR); True or False says so (a test's pseudo-terminal).
        self.console = Console(file=self.stdout, highlight=False, force_terminal=terminal)
        if not self.console.is_terminal:
            self.console = Console(file=self.stdout, highlight=False, width=PIPED_WIDTH, force_terminal=False)
        self._stdin_is_terminal = terminal if terminal is not None else _isatty(self.stdin)

    @property
    def interactive(self) -> bool:
        """Return True when a person can answer a question: stdin and stdout are terminals."""
        return self.console.is_terminal and self._stdin_is_terminal

    def json(self, value: Any) -> None:
        """Print ``value`` as one JSON document."""
        print(json.dumps(jsonable(value), indent=2), file=self.stdout, flush=True)

    def json_line(self, value: Any) -> None:
        """Print ``value`` as one line of JSON (for streams)."""
        print(json.dumps(jsonable(value), separators=(",", ":")), file=self.stdout, flush=True)

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[str | Text]], *, title: str | None = None) -> None:
        """Print a table; columns whose name ends with a space are right-aligned (numbers)."""
        if title:
            self.text(title)
        table = Table(header_style="bold")
        for column in columns:
            table.add_column(column.strip(), justify="right" if column.endswith(" ") else "left", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        self.console.print(table)

    def fields(
        self, pairs: Iterable[tuple[str, str | Text]], *, title: str | None = None, numbers: bool = False
    ) -> None:
        """Print name/value pairs as a two-column table (``numbers``: values right-aligned)."""
        if title:
            self.text(title)
        table = Table(show_header=False)
        table.add_column("field", style="bold", no_wrap=True)
        table.add_column("value", justify="right" if numbers else "left", no_wrap=True)
        for name, value in pairs:
            table.add_row(name, value)
        self.console.print(table)

    def text(self, line: str) -> None:
        """Print a line for people on stdout."""
        print(line, file=self.stdout, flush=True)

    def say(self, line: str) -> None:
        """Print a message on stderr (what happened, why nothing was done)."""
        print(line, file=self.stderr, flush=True)

    def ask(self, question: str) -> bool:
        """Ask a yes/no question on the terminal; only 'y' or 'yes' is a yes."""
        print(f"{question} [y/N] ", end="", file=self.stdout, flush=True)
        try:
            answer = self.stdin.readline()
        except KeyboardInterrupt:
            return False
        return answer.strip().lower() in ("y", "yes")
