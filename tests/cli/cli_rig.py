"""Running ``ftdesk <subcommand>`` in-process against a service on a real socket, as a terminal or a pipe."""

from __future__ import annotations

import asyncio
import io
import re
from dataclasses import dataclass
from typing import Any

import pytest

from ftdesk.cli.commands import run
from ftdesk.cli.render import Output

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Ran:
    """What one subcommand printed and returned."""

    code: int
    out: str
    err: str


async def ftdesk(
    service: Any, *argv: str, terminal: bool = False, typed: str = "", monkeypatch: pytest.MonkeyPatch
) -> Ran:
    """Run ``ftdesk *argv`` against ``service`` in a worker thread (the service answers on this loop)."""
    monkeypatch.setenv("FTSERVICE_API_KEY", service.api_key)
    stdout, stderr = io.StringIO(), io.StringIO()
    output = Output(stdout, stderr, stdin=io.StringIO(typed), terminal=terminal)
    code = await asyncio.to_thread(run, [*argv, "--url", service.base_url], output=output)
    return Ran(code, stdout.getvalue(), stderr.getvalue())
