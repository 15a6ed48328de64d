"""Print every account's positions and balances: a first script with ftdesk.client.

    python examples/positions_report.py [--base-url URL] [--api-key KEY] [--username U --password P]

Without --base-url and --api-key it finds the local service the way the tray keeps them (FTSERVICE_PORT,
FTSERVICE_API_KEY, the OS keychain or the data dir's api-key file). It logs in only when no session exists:
with --username/--password, or on the paper broker with its demo login.
"""

from __future__ import annotations

import argparse
import sys

from ftdesk.client import Client, FtdeskApiError, FtdeskClientError
from ftdesk.domain.session import SessionState


def ensure_session(api: Client, username: str | None, password: str | None) -> None:
    """Log in unless a session exists (the paper broker takes any non-empty password by default)."""
    if api.get_auth_status().state is SessionState.LOGGED_IN:
        return
    if username and password:
        api.login(username, password)
    elif api.get_health().broker == "paper":
        api.login("trader", "paper-pass")
    else:
        raise SystemExit("Not logged in: log in from the tray, or pass --username and --password")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the service, e.g. http://127.0.0.1:8787 (default: the local one)")
    parser.add_argument("--api-key", help="the API key (default: found where the service keeps it)")
    parser.add_argument("--username")
    parser.add_argument("--password")
    args = parser.parse_args(argv)
    try:
        with Client(args.base_url, args.api_key) as api:
            ensure_session(api, args.username, args.password)
            for account in api.list_accounts():
                balance = api.get_balances(account.acct_num)
                print(f"{account.acct_num}  {account.acct_type.value}  {account.name}")
                print(f"  {'symbol':<24}{'quantity':>12}{'last':>12}{'market value':>16}")
                for position in api.get_positions(account.acct_num):
                    print(
                        f"  {position.symbol:<24}{position.quantity:>12,g}{position.last_price:>12,.2f}"
                        f"{position.market_value:>16,.2f}"
                    )
                print(f"  cash {balance.cash:,.2f}  net worth {balance.net_worth:,.2f}")
    except (FtdeskApiError, FtdeskClientError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
