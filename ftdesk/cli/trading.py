"""The subcommands that act: buy, sell, short, cover (stocks and options), cancel, halt and resume.

An order is previewed first and printed as the broker understood it; it is placed with that preview's
conf_num only after a yes on the terminal, or ``--yes``. Without a terminal and without ``--yes`` nothing is
placed and the command says so (exit 4).
"""

from __future__ import annotations

import argparse
import re
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ftdesk.cli.outcome import DECLINED, OK, REFUSED, UsageError
from ftdesk.cli.reads import account_of
from ftdesk.cli.render import Output, number
from ftdesk.client import Client

if TYPE_CHECKING:
    from ftdesk.domain.orders import OrderPlacement, OrderPreview

# The order models (and the preview's words) are imported when an order subcommand runs, not when the
# parser that lists every subcommand is built: a read starts without them.

SIDES: Mapping[str, str] = MappingProxyType(
    {"buy": "buy", "sell": "sell", "short": "sell short", "cover": "buy to cover a short sale"}
)
"""Each order subcommand and what it does, in words."""

EQUITY_ACTIONS = MappingProxyType({"buy": "B", "sell": "S", "short": "SS", "cover": "BC"})
# Option actions name the side and the kind of contract: buy call, sell put...
OPTION_ACTIONS = MappingProxyType({("buy", "C"): "BC", ("buy", "P"): "BP", ("sell", "C"): "SC", ("sell", "P"): "SP"})
OPTION_SYMBOL = re.compile(r"^-?[A-Z][A-Z0-9.]{0,5}?\d{6}(?P<kind>[CP])\d+(?:\.\d+)?$")


def _price_fields(args: argparse.Namespace) -> dict[str, Any]:
    if args.stop_limit is not None:
        if args.limit is not None or args.stop is not None:
            raise UsageError("--stop-limit takes both prices; give it without --limit or --stop")
        stop, limit = args.stop_limit
        return {"price_type": "SL", "stop_price": stop, "limit_price": limit}
    if args.limit is not None:
        return {"price_type": "L", "limit_price": args.limit}
    if args.stop is not None:
        return {"price_type": "S", "stop_price": args.stop}
    return {"price_type": "M"}


def order_request(side: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """Return the kind of order ('equity' or 'option') and the client's keyword arguments for it."""
    symbol = args.symbol.upper()
    fields: dict[str, Any] = {"symbol": symbol, "tif": "G" if args.gtc else "D", **_price_fields(args)}
    option = OPTION_SYMBOL.match(symbol)
    if option is None:
        if args.to_open or args.to_close:
            raise UsageError(f"--to-open and --to-close are for option orders; {symbol} is not an option symbol")
        return "equity", {**fields, "action": EQUITY_ACTIONS[side], "qty": args.qty}
    action = OPTION_ACTIONS.get((side, option["kind"]))
    if action is None:
        raise UsageError(f"an option order is a buy or a sell (with --to-open or --to-close), not a {side}")
    if not float(args.qty).is_integer():
        raise UsageError(f"an option order counts whole contracts, not {number(args.qty)}")
    intent = "open" if args.to_open else "close" if args.to_close else None
    return "option", {**fields, "action": action, "qty": int(args.qty), "position_intent": intent}


def _placed_words(placement: OrderPlacement) -> str:
    said = f": {placement.message}" if placement.message else ""
    return f"Placed: conf_num {placement.conf_num}, status {placement.status.value}{said}"


def order(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Preview an order, print it as the broker understood it, then place it after a yes (or ``--yes``)."""
    from ftdesk.client.orders import describe_preview

    kind, fields = order_request(args.command, args)
    acct = account_of(api, args)
    preview: OrderPreview = (
        api.preview_option_order(acct, **fields) if kind == "option" else api.preview_equity_order(acct, **fields)
    )
    describe = out.say if args.json else out.text  # JSON on stdout stays one document
    describe(describe_preview(preview))
    placement: OrderPlacement | None = None
    declined: str | None = None
    if not args.yes:
        if not out.interactive:
            declined = "Nothing was placed: there is no terminal to ask on and --yes was not given."
        elif not out.ask("Place this order?"):
            declined = "Nothing was placed (declined)."
    if declined is None:
        key = str(uuid.uuid4())  # a place cut off mid-way can be asked about, never repeated blindly
        if kind == "option":
            placement = api.place_option_order(acct, **fields, conf_num=preview.conf_num, idempotency_key=key)
        else:
            placement = api.place_equity_order(acct, **fields, conf_num=preview.conf_num, idempotency_key=key)
    if args.json:
        out.json({"preview": preview, "placement": placement})
    if declined is not None:
        out.say(declined)
        return DECLINED
    assert placement is not None
    if not args.json:
        out.text(_placed_words(placement))
    return OK


def cancel(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Cancel a working order (its account and action are read from the order's status)."""
    detail = api.get_order_detail(args.conf_num)
    found = detail.order or (detail.orders[0] if detail.orders else None)
    if found is None:
        raise UsageError(f"no order {args.conf_num}")
    result = api.cancel_order(args.conf_num, found.acct_num, found.order_detail.action)
    if args.json:
        out.json(result)
    else:
        for confirm in result.cancel_confirm_detail:
            out.text(
                f"Cancel of {confirm.conf_num} ({found.order_detail.symbol}) "
                f"{'accepted' if result.is_accepted else 'not accepted'}: {number(confirm.remaining_qty)} of "
                f"{number(confirm.orig_qty)} canceled, {number(confirm.exec_qty)} already filled."
            )
    return OK if result.is_accepted else REFUSED


def halt(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Pull the kill switch and print what it did."""
    outcome = api.halt(args.reason)
    if args.json:
        out.json(outcome)
        return OK
    again = " (it was already halted; the cancels ran again)" if outcome.already_halted else ""
    out.text(f"Trading halted since {outcome.halted_since} by {outcome.source}{again}.")
    if outcome.live_was_on:
        out.text("Live trading was turned off.")
    out.text(f"Canceled {len(outcome.canceled)} working order(s).")
    for canceled in outcome.canceled:
        out.text(f"  canceled {canceled.conf_num} {canceled.symbol} (account {canceled.acct_num})")
    for failure in outcome.failures:
        out.say(f"  could not cancel {failure.conf_num or 'the open orders'}: {failure.error_code}: {failure.message}")
    return OK if not outcome.failures else REFUSED


def resume(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Lift the kill switch after a yes on the terminal (or ``--yes``); live trading stays off."""
    state = api.get_safety().halt
    if not state.halted:
        if args.json:
            out.json(state)
        else:
            out.text("Trading is not halted.")
        return OK
    if not args.yes:
        since = f"Trading is halted since {state.since} by {state.by}" + (f": {state.reason}" if state.reason else "")
        if not out.interactive:
            out.say(f"{since}. Not resumed: there is no terminal to ask on and --yes was not given.")
            return DECLINED
        if not out.ask(f"{since}. Resume trading (live trading stays off)?"):
            out.say("Not resumed.")
            return DECLINED
    resumed = api.resume()
    if args.json:
        out.json(resumed)
    else:
        out.text("Trading resumed; live trading stays off until you turn it on.")
    return OK
