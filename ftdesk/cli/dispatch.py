"""Which first arguments are subcommands, and running one; imports nothing heavy until a subcommand runs."""

from __future__ import annotations

from collections.abc import Sequence

SUBCOMMANDS = frozenset(
    {
        "quote",
        "positions",
        "balances",
        "orders",
        "chain",
        "status",
        "login",
        "logout",
        "buy",
        "sell",
        "short",
        "cover",
        "cancel",
        "halt",
        "resume",
        "stream",
        "mcp",
    }
)
"""The first arguments that run a subcommand instead of the app."""


def run_subcommand(args: Sequence[str]) -> int:
    """Run ``ftdesk <subcommand> ...`` (``args[0]`` is in ``SUBCOMMANDS``); return the exit code."""
    if args[0] == "mcp":
        from ftdesk.assistant.server import run_mcp

        return run_mcp(args[1:])
    from ftdesk.cli.commands import run

    return run(args)
