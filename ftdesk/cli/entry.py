"""The ``ftdesk`` console script: a subcommand talks to the running service; anything else starts the app.

Deciding which costs nothing: the first argument is looked up before any of ftdesk is imported, so a
subcommand never loads the app's server, brokers or Qt (and starts in a fraction of the app's import time).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ftdesk.cli.dispatch import SUBCOMMANDS, run_subcommand


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand (``ftdesk quote AAPL``) or start the app (``ftdesk --headless``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return run_subcommand(args)
    from ftdesk.app import main as app_main

    return app_main(args)


if __name__ == "__main__":
    sys.exit(main())
