"""Preview an equity order, show what the broker understood, and place it only if you confirm.

    python examples/preview_and_place.py --symbol AAPL --side B --qty 1 [--limit 180] [--yes]

Live trading is off by default (dry-run): then the place is refused with LIVE_TRADING_DISABLED, which this
script reports and counts as success (exit 0): nothing was sent to the broker. Every other refusal (a local
risk limit, such as a limit price too far from the market; the kill switch; the broker's own) is printed in
the service's words and exits 1. Without --yes it asks on the terminal; without a terminal it does not place.
"""

from __future__ import annotations

import argparse
import sys

from ftdesk.client import Client, FtdeskApiError, FtdeskClientError, RiskLimitError, TradingDisabledError
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.orders import OrderPreview
from ftdesk.domain.session import SessionState


def ask(preview: OrderPreview) -> bool:
    """Ask on the terminal; anything but y/yes (or no terminal) declines."""
    if not sys.stdin.isatty():
        print("No terminal to confirm on (pass --yes to place without asking): not placed")
        return False
    return input(f"Place {preview.conf_num}? [y/N] ").strip().lower() in ("y", "yes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the service, e.g. http://127.0.0.1:8787 (default: the local one)")
    parser.add_argument("--api-key", help="the API key (default: found where the service keeps it)")
    parser.add_argument("--account", help="account number (default: the first individual account)")
    parser.add_argument("--symbol", default="AAPL")
    parser.add_argument("--side", default="B", choices=("B", "S", "SS", "BC"), help="buy, sell, sell short, cover")
    parser.add_argument("--qty", type=float, default=1)
    parser.add_argument("--limit", type=float, help="a limit price (default: a market order)")
    parser.add_argument("--yes", action="store_true", help="place without asking")
    args = parser.parse_args(argv)
    try:
        with Client(args.base_url, args.api_key) as api:
            if api.get_auth_status().state is not SessionState.LOGGED_IN:
                if api.get_health().broker != "paper":
                    raise SystemExit("Not logged in: log in from the tray first")
                api.login("trader", "paper-pass")
            acct = args.account or next(
                a.acct_num for a in api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL
            )
            price_type, limit = ("L", args.limit) if args.limit else ("M", None)
            placed = api.preview_and_place(
                acct,
                args.symbol,
                args.side,
                args.qty,
                price_type,
                limit_price=limit,
                confirm=(lambda preview: True) if args.yes else ask,
            )
            if placed is None:
                print("Not placed: declined")
            else:
                print(f"Placed {placed.conf_num}: {placed.status.value} {placed.message}".rstrip())
    except TradingDisabledError as exc:
        if exc.code != "LIVE_TRADING_DISABLED":  # the kill switch: trading is halted, not dry-run
            print(f"Refused: {exc.message} ({exc.code}); nothing was sent to the broker", file=sys.stderr)
            return 1
        print(f"Dry-run: the service refused the place ({exc.code}); nothing was sent to the broker")
    except RiskLimitError as exc:
        print(f"Refused by a risk limit: {exc.message} ({exc.code}); nothing was sent to the broker", file=sys.stderr)
        return 1
    except (FtdeskApiError, FtdeskClientError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
