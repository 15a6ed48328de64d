"""``ftdesk <subcommand>``: parse the arguments, run the subcommand against the service, map failures to exit codes.

The exit codes are in ``ftdesk.cli.outcome`` (and docs/cli.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from ftdesk.cli import reads, session, trading
from ftdesk.cli.outcome import BAD_ARGUMENTS, INTERRUPTED, NOT_REACHABLE, REFUSED, UsageError
from ftdesk.cli.render import Output
from ftdesk.client import ApiKeyNotFound, Client, FtdeskApiError, FtdeskClientError, ServiceUnreachable

Handler = Callable[[Client, argparse.Namespace, Output], int]


class _Parser(argparse.ArgumentParser):
    """An argparse parser that raises instead of exiting, so ``run`` owns the exit code."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def _price(text: str) -> float:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a price: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a price is above 0, not {text}")
    return value


def _quantity(text: str) -> float:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a quantity: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a quantity is above 0, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of every subcommand (``ftdesk mcp`` has its own)."""
    common = _Parser(add_help=False)
    common.add_argument("--url", help="the service's URL (default: found from its settings, http://127.0.0.1:8787)")
    json_flag = _Parser(add_help=False)
    json_flag.add_argument("--json", action="store_true", help="print JSON for scripts instead of a table")
    account = _Parser(add_help=False)
    account.add_argument("--account", metavar="A", help="the account number (default: the login's default account)")

    parser = _Parser(
        prog="ftdesk",
        description="Talk to the running ftdesk service from a terminal. Exit codes: 0 done, 1 refused by the "
        "service, 2 bad arguments, 3 service not reachable, 4 declined (nothing done), 130 interrupted.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, handler: Handler, help_text: str, *extra: _Parser) -> argparse.ArgumentParser:
        parents = [common, *extra]
        found = sub.add_parser(name, help=help_text, description=help_text, parents=parents)
        found.set_defaults(handler=handler)
        return found

    quote = command("quote", reads.quote, "print the latest quote of each symbol", json_flag)
    quote.add_argument("symbols", nargs="+", metavar="SYM")
    command("positions", reads.positions, "list the account's positions", json_flag, account)
    command("balances", reads.balances, "print the account's cash, values and buying power", json_flag, account)
    orders = command("orders", reads.orders, "list working and recent orders, newest first", json_flag, account)
    orders.add_argument("--open", action="store_true", help="only orders still working (open or partly filled)")
    chain = command("chain", reads.chain, "print an option chain (the nearest expiration by default)", json_flag)
    chain.add_argument("symbol", metavar="SYM")
    chain.add_argument("--expiry", metavar="YYYY-MM-DD", help="the expiration to print")
    command("status", reads.status, "print the service's health, the session and the safety state", json_flag)
    login = command(
        "login", session.login, "log in to the brokerage (the password is asked, never an argument)", json_flag
    )
    login.add_argument("username", metavar="USER")
    login.add_argument("--code", metavar="123456", help="the 6-digit code of the authenticator app, if asked")
    login.add_argument("--password-stdin", action="store_true", help="read the password as one line from stdin")
    login.add_argument("--remember", action="store_true", help="store the credentials for re-login (encrypted)")
    command("logout", session.logout, "log out of the brokerage", json_flag)

    for side, words in trading.SIDES.items():
        order = command(side, trading.order, f"preview, then place, an order to {words}", json_flag, account)
        order.add_argument("qty", type=_quantity, metavar="QTY", help="shares, or contracts for an option")
        order.add_argument("symbol", metavar="SYM", help="a stock symbol, or an option symbol (AAPL271217C200)")
        price = order.add_mutually_exclusive_group()
        price.add_argument("--limit", type=_price, metavar="P", help="limit price (per share); market if no price")
        price.add_argument("--stop", type=_price, metavar="P", help="stop price (per share)")
        order.add_argument("--stop-limit", type=_price, nargs=2, metavar=("STOP", "LIMIT"), help="stop-limit prices")
        intent = order.add_mutually_exclusive_group()
        intent.add_argument("--to-open", action="store_true", help="an option order that opens a position")
        intent.add_argument("--to-close", action="store_true", help="an option order that closes a position")
        order.add_argument("--gtc", action="store_true", help="good till canceled (default: day)")
        order.add_argument("--yes", action="store_true", help="place after the preview without asking")

    cancel = command("cancel", trading.cancel, "cancel a working order", json_flag)
    cancel.add_argument("conf_num", metavar="CONF")
    halt = command("halt", trading.halt, "halt trading: refuse every order, live off, cancel working orders", json_flag)
    halt.add_argument("--reason", help="why (kept with the halt)")
    resume = command("resume", trading.resume, "lift the halt (asks first; live trading stays off)", json_flag)
    resume.add_argument("--yes", action="store_true", help="resume without asking")
    stream = command("stream", reads.stream, "live quotes: a table on a terminal, JSON lines otherwise")
    stream.add_argument("symbols", nargs="+", metavar="SYM")
    stream.add_argument("--count", type=int, metavar="N", help="stop after N updates")
    return parser


def _refusal(exc: FtdeskApiError) -> str:
    lines = [f"ftdesk: refused by the service: {exc.code}: {exc.message}"]
    details = exc.details if isinstance(exc.details, dict) else {}
    for key in ("reason", "broker_code", "broker_message", "limit", "limit_value", "order_value"):
        if details.get(key) not in (None, ""):
            lines.append(f"  {key}: {details[key]}")
    for field in details.get("fields") or []:
        if isinstance(field, dict):
            lines.append(f"  {field.get('field')}: {field.get('message') or field.get('given')}")
    return "\n".join(lines)


def run(argv: Sequence[str], *, output: Output | None = None) -> int:
    """Run one subcommand (``["quote", "AAPL"]``); return its exit code."""
    out = output or Output()
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as exc:
        out.say(str(exc))
        return BAD_ARGUMENTS
    except SystemExit as exc:  # --help printed its text
        return int(exc.code or 0)
    handler: Handler = args.handler
    client: Client | None = None
    try:
        client = Client(args.url)
        return handler(client, args, out)
    except UsageError as exc:
        out.say(f"ftdesk {args.command}: {exc}")
        return BAD_ARGUMENTS
    except ApiKeyNotFound as exc:
        out.say(f"ftdesk: the service is not reachable: {exc}")
        return NOT_REACHABLE
    except ServiceUnreachable as exc:
        url = client.base_url if client is not None else "the service"
        out.say(
            f"ftdesk: the service is not reachable at {url}: {exc}\n"
            "Start it with `ftdesk` (the tray) or `ftdesk --headless`."
        )
        return NOT_REACHABLE
    except FtdeskApiError as exc:
        out.say(_refusal(exc))
        return REFUSED
    except FtdeskClientError as exc:
        out.say(f"ftdesk: {exc}")
        return REFUSED
    except KeyboardInterrupt:
        out.say("ftdesk: interrupted")
        return INTERRUPTED
    finally:
        if client is not None:
            client.close()
