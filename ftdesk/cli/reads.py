"""The read subcommands: quote, positions, balances, orders, chain, status and stream."""

from __future__ import annotations

import argparse
from datetime import date

from rich.table import Table

from ftdesk.cli.outcome import OK, REFUSED, UsageError
from ftdesk.cli.render import Output, money, number, percent, signed
from ftdesk.client import Client
from ftdesk.domain.market import ChainExpiration, OptionQuote, OrderBook, Quote


def account_of(api: Client, args: argparse.Namespace) -> str:
    """Return the account the subcommand is about: ``--account``, else the login's default account."""
    chosen: str | None = getattr(args, "account", None)
    if chosen:
        return chosen
    return api.list_accounts()[0].acct_num


def quote(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Print the latest quote of each symbol; exit 1 naming any the broker does not quote."""
    answer = api.get_quotes([symbol.upper() for symbol in args.symbols])
    if args.json:
        out.json(answer)
    else:
        out.table(
            ["Symbol", "Last ", "Change ", "Change % ", "Bid ", "Ask ", "Volume "],
            (
                [
                    q.symbol,
                    money(q.last),
                    signed(f"{q.change:+,.2f}" if q.change is not None else "", q.change),
                    signed(percent(q.change_pct), q.change_pct),
                    money(q.bid),
                    money(q.ask),
                    number(q.volume),
                ]
                for q in answer.quotes
            ),
        )
    if answer.unknown:
        out.say(f"ftdesk: the broker does not quote {', '.join(answer.unknown)}")
        return REFUSED
    return OK


def positions(api: Client, args: argparse.Namespace, out: Output) -> int:
    """List the account's positions."""
    acct = account_of(api, args)
    held = api.get_positions(acct)
    if args.json:
        out.json(held)
        return OK
    if not held:
        out.text(f"No positions in account {acct}.")
        return OK
    out.table(
        ["Symbol", "Quantity ", "Last ", "Market value ", "Cost basis ", "Today's gain ", "Total gain ", "Total % "],
        (
            [
                p.symbol,
                number(p.quantity),
                money(p.last_price),
                money(p.market_value),
                money(p.cost_basis),
                signed(money(p.todays_gain_loss), p.todays_gain_loss),
                signed(money(p.total_gain_loss), p.total_gain_loss),
                signed(percent(p.total_gain_loss_pct), p.total_gain_loss_pct),
            ]
            for p in held
        ),
        title=f"Positions of account {acct}",
    )
    return OK


def balances(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Print the account's cash, market values and buying power."""
    acct = account_of(api, args)
    found = api.get_balances(acct)
    if args.json:
        out.json(found)
        return OK
    rows = [
        ("Net worth", money(found.net_worth)),
        ("Cash", money(found.cash)),
        ("Settled cash", money(found.settled_cash)),
        ("Long market value", money(found.long_market_value)),
        ("Short market value", money(found.short_market_value)),
        ("Option market value", money(found.option_market_value)),
        ("Cash buying power", money(found.cash_buying_power)),
        ("Margin buying power", money(found.margin_buying_power) if found.margin_buying_power is not None else "-"),
        ("Available to withdraw", money(found.available_to_withdraw)),
        ("Committed to open orders", money(found.cash_committed_to_open_orders)),
    ]
    out.fields(rows, title=f"Balances of account {acct} (as of {found.as_of})", numbers=True)
    return OK


def orders(api: Client, args: argparse.Namespace, out: Output) -> int:
    """List the account's working and recent orders (``--open``: only the working ones)."""
    # Only this read needs the order models; the other reads start without them.
    from ftdesk.domain.orders import OrderStatus

    working = {OrderStatus.OPEN, OrderStatus.PARTIALLY_FILLED, OrderStatus.PENDING_TRIGGER}
    acct = account_of(api, args)
    found = api.get_order_status(acct)
    if args.open:
        found = [order for order in found if order.status_detail.status in working]
    if args.json:
        out.json(found)
        return OK
    if not found:
        out.text(f"No {'working ' if args.open else ''}orders in account {acct}.")
        return OK

    def price(detail_limit: float | None, detail_stop: float | None, kind: str) -> str:
        parts = [
            f"stop {money(detail_stop)}" if detail_stop else "",
            f"limit {money(detail_limit)}" if detail_limit else "",
        ]
        return " ".join(part for part in parts if part) or ("market" if kind == "M" else kind)

    out.table(
        ["Conf", "Symbol", "Action", "Quantity ", "Price", "Filled ", "Status", "Placed"],
        (
            [
                order.id_detail.conf_num,
                order.order_detail.symbol,
                order.order_detail.action_desc,
                number(order.order_detail.qty),
                price(order.order_detail.limit_price, order.order_detail.stop_price, order.order_detail.price_type),
                number(order.status_detail.qty_exec),
                order.status_detail.status_desc,
                order.order_detail.entry_time,
            ]
            for order in found
        ),
        title=f"{'Working orders' if args.open else 'Orders'} of account {acct}",
    )
    return OK


def _side(option: OptionQuote | None) -> list[str]:
    if option is None:
        return ["", "", "", "", ""]
    return [
        money(option.bid),
        money(option.ask),
        money(option.last),
        number(option.volume),
        number(option.open_interest),
    ]


def chain(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Print one expiration of an option chain (``--expiry``, else the nearest)."""
    found = api.get_option_chain(args.symbol.upper())
    expirations: list[ChainExpiration] = found.expirations
    if args.expiry:
        try:
            wanted = date.fromisoformat(args.expiry)
        except ValueError:
            raise UsageError(f"--expiry takes a date as YYYY-MM-DD, not {args.expiry!r}") from None
        expirations = [e for e in expirations if str(e.expiration) == wanted.isoformat()]
        if not expirations:
            listed = ", ".join(str(e.expiration) for e in found.expirations[:8])
            raise UsageError(f"{found.symbol} has no expiration on {wanted}; listed: {listed}")
    else:
        expirations = expirations[:1]
    if args.json:
        out.json(found.model_copy(update={"expirations": expirations}))
        return OK
    for expiration in expirations:
        out.table(
            [
                "Call bid ",
                "Call ask ",
                "Call last ",
                "Call vol ",
                "Call OI ",
                "Strike ",
                "Put bid ",
                "Put ask ",
                "Put last ",
                "Put vol ",
                "Put OI ",
            ],
            ([*_side(s.call), money(s.strike), *_side(s.put)] for s in expiration.strikes),
            title=f"{found.symbol} options expiring {expiration.expiration} ({expiration.days_to_expiration} days); "
            f"underlying {money(found.underlying_price)}",
        )
    return OK


def status(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Print the service's health, the brokerage session and the safety state."""
    health = api.get_health()
    session = api.get_auth_status()
    safety = api.get_safety()
    if args.json:
        out.json({"health": health, "session": session, "safety": safety})
        return OK
    halt = safety.halt
    halted = (
        f"HALTED since {halt.since} by {halt.by}" + (f": {halt.reason}" if halt.reason else "") if halt.halted else "no"
    )
    out.fields(
        [
            ("Service", f"{health.service} {health.version} at {api.base_url} ({health.status})"),
            ("Broker", health.broker),
            ("Live trading", "ON" if health.live_trading else "off (dry-run: places are refused)"),
            ("Session", session.state.value + (f" as {session.username}" if session.username else "")),
            ("Halted", halted),
            ("Uptime", f"{number(round(health.uptime_seconds))} s"),
        ],
    )
    return OK


def _quote_table(latest: dict[str, Quote]) -> Table:
    table = Table(header_style="bold")
    for column in ("Symbol", "Last", "Change", "Bid", "Ask", "Volume", "Time"):
        table.add_column(column, justify="left" if column in ("Symbol", "Time") else "right", no_wrap=True)
    for q in latest.values():
        table.add_row(
            q.symbol,
            money(q.last),
            signed(f"{q.change:+,.2f}" if q.change is not None else "", q.change),
            money(q.bid),
            money(q.ask),
            number(q.volume),
            q.time,
        )
    return table


def stream(api: Client, args: argparse.Namespace, out: Output) -> int:
    """Follow live quotes until Ctrl-C (or ``--count`` updates): a live table on a terminal, JSON lines otherwise."""
    from rich.live import Live

    symbols = [symbol.upper() for symbol in args.symbols]
    seen = 0
    latest: dict[str, Quote] = {}
    with api.stream_quotes(symbols) as updates:
        if not out.console.is_terminal:
            for update in updates:
                if isinstance(update, OrderBook):
                    continue
                out.json_line(update)
                seen += 1
                if args.count is not None and seen >= args.count:
                    break
            return OK
        with Live(_quote_table(latest), console=out.console, auto_refresh=False) as live:
            for update in updates:
                if isinstance(update, OrderBook):
                    continue
                latest[update.symbol] = update
                live.update(_quote_table(latest), refresh=True)
                seen += 1
                if args.count is not None and seen >= args.count:
                    break
    return OK
