"""The subcommands of the brokerage session: ``ftdesk login`` and ``ftdesk logout``.

The password is never an argument (it would stay in the shell's history and the process list): it is asked on
the terminal without echo, or read as one line from stdin with ``--password-stdin`` for scripts.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING

from ftdesk.cli.outcome import OK, UsageError
from ftdesk.cli.render import Output
from ftdesk.client import Client

if TYPE_CHECKING:
    from ftdesk.client.models import SessionStatus


def _password(args: argparse.Namespace, out: Output) -> str:
    if args.password_stdin:
        password = out.stdin.readline().rstrip("\r\n")
    elif not out.interactive:
        raise UsageError("no terminal to ask the password on: pipe it in with --password-stdin")
    elif out.stdin is sys.stdin:
        password = getpass.getpass(f"Password for {args.username}: ", stream=out.stderr)
    else:  # a test's pseudo-terminal types into its own stdin
        out.say(f"Password for {args.username}: ")
        password = out.stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("the password is empty; nothing was sent")
    return password


def login(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Log in to the brokerage with a password asked on the terminal or read from stdin."""
    code = args.code.strip() if args.code else None
    if code is not None and not (code.isdigit() and len(code) == 6):
        raise UsageError(f"--code takes the 6 digits of the authenticator app, not {code!r}")
    password = _password(args, out)
    status = api.login(args.username, password, totp_code=code, remember=args.remember)
    return _print_session(status, args, out)


def logout(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Log out of the brokerage."""
    return _print_session(api.logout(), args, out)


def _print_session(status: SessionStatus, args: argparse.Namespace, out: Output) -> int:
    if args.json:
        out.json(status)
        return OK
    who = f" as {status.username}" if status.username else ""
    stored = " (credentials stored for re-login)" if status.credentials_stored else ""
    out.text(f"Session: {status.state.value}{who} on {status.broker}{stored}")
    return OK
