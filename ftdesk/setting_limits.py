"""The rows of the local risk-limit settings (``ftdesk.config.SETTINGS`` turns each into a setting).

Defaults, and why (docs/safety.md says more): each catches a fat finger or a runaway script without getting in
the way of an ordinary retail order. The daily loss limit is off, because any dollar default would be wrong for
most accounts and a halt nobody configured would surprise; so are the symbol lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftdesk.setting_values import limit_parser, parse_symbols

RISK_LIMIT_ROWS: tuple[tuple[str, Any, Callable[[Any], Any], str, str], ...] = (
    # (name, default, parser, meaning, accepts)
    (
        "max_equity_qty",
        10_000.0,
        limit_parser(1e9, unit="shares"),
        "Most shares in one equity order (each leg of a conditional order).",
        "a number of shares, or 0/off",
    ),
    (
        "max_equity_notional",
        100_000.0,
        limit_parser(1e12, unit="dollars"),
        "Most dollars in one equity order or leg: shares x limit (else stop, else quote) price.",
        "dollars, or 0/off",
    ),
    (
        "max_option_contracts",
        50,
        limit_parser(1_000_000, integer=True),
        "Most contracts in one option order (each leg of a multi-leg order).",
        "an integer, or 0/off",
    ),
    (
        "max_option_notional",
        50_000.0,
        limit_parser(1e12, unit="dollars"),
        "Most dollars in one option order: contracts x 100 x limit (multi-leg: net) price, else the quote.",
        "dollars, or 0/off",
    ),
    (
        "max_price_distance_pct",
        10.0,
        limit_parser(1000, unit="percent"),
        "Furthest a limit or stop price may be from the current quote, in percent of the quote.",
        "percent, or 0/off",
    ),
    (
        "max_orders_per_minute",
        60,
        limit_parser(1_000_000, integer=True),
        "Most places in any 60 seconds, all accounts together.",
        "an integer, or 0/off",
    ),
    (
        "max_open_orders",
        100,
        limit_parser(1_000_000, integer=True),
        "Most working orders (all accounts) before a new one is refused.",
        "an integer, or 0/off",
    ),
    (
        "daily_loss_limit",
        0.0,
        limit_parser(1e12, unit="dollars"),
        "Dollars an account may lose today (by the cockpit's Day P&L rule, sales today included) before trading halts.",
        "dollars, or 0/off",
    ),
    (
        "symbol_allow",
        (),
        parse_symbols,
        "Only these symbols (options: their underlying) may trade; empty: any.",
        "comma-separated symbols",
    ),
    (
        "symbol_deny",
        (),
        parse_symbols,
        "These symbols (options: their underlying) may never trade.",
        "comma-separated symbols",
    ),
)
