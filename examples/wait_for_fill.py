"""Place a marketable order and wait for its fill on the account-event stream.

    python examples/wait_for_fill.py --symbol AAPL --qty 1 [--timeout 60]

A fill needs a placed order, and ftdesk places nothing in dry-run mode (the default). This example therefore
runs against the PAPER broker with live trading on, which is simulated money: start the service with
``FTSERVICE_LIVE_TRADING=true ftdesk --headless`` (paper is the default broker), or turn live trading on in
the tray. The service offers no API to turn live trading on, by design. The script refuses a real brokerage
unless --real-money is given. In dry-run it says so and exits 2 without placing anything.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ftdesk.client import AsyncClient, FtdeskApiError, FtdeskClientError
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.orders import OrderStatus
from ftdesk.domain.session import SessionState

NEEDS_LIVE = 2


async def order_status(api: AsyncClient, conf_num: str, acct: str) -> OrderStatus | None:
    """Return the order's status as the service reads it now."""
    detail = await api.get_order_detail(conf_num, acct)
    return detail.order.status_detail.status if detail.order else None


async def run(args: argparse.Namespace) -> int:
    async with AsyncClient(args.base_url, args.api_key) as api:
        health = await api.get_health()
        if health.broker != "paper" and not args.real_money:
            print(f"The service trades on {health.broker!r}, real money: pass --real-money to place there")
            return NEEDS_LIVE
        if not health.live_trading:
            print(
                "Live trading is off (dry-run): nothing can be placed, so nothing can fill. On the paper broker "
                "(simulated money) start ftdesk with FTSERVICE_LIVE_TRADING=true or turn it on in the tray."
            )
            return NEEDS_LIVE
        if (await api.get_auth_status()).state is not SessionState.LOGGED_IN and health.broker == "paper":
            await api.login("trader", "paper-pass")
        acct = args.account or next(
            a.acct_num for a in await api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL
        )
        placed = await api.preview_and_place(acct, args.symbol, "B", args.qty, confirm=lambda preview: True)
        assert placed is not None
        print(f"Placed {placed.conf_num}: {placed.status.value}")
        # Replay from the start of the service's buffer, so a fill that came before the stream opened is seen too.
        events = api.stream_events(last_event_id=0)
        try:
            async with asyncio.timeout(args.timeout):
                status = await order_status(api, placed.conf_num, acct)
                while status is not OrderStatus.FILLED:
                    frame = await anext(events)
                    if frame.event.desc.get("conf_num") == placed.conf_num:
                        print(f"Event {frame.id}: {frame.event.event_type} {frame.event.desc.get('status', '')}")
                        status = await order_status(api, placed.conf_num, acct)
        except TimeoutError:
            print(f"No fill within {args.timeout:g} s (the market may be closed); the order stays working")
            return 1
        finally:
            await events.aclose()
        detail = await api.get_order_detail(placed.conf_num, acct)
        assert detail.order is not None
        print(f"Filled {placed.conf_num}: {detail.order.status_detail.status_desc}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the service, e.g. http://127.0.0.1:8787 (default: the local one)")
    parser.add_argument("--api-key", help="the API key (default: found where the service keeps it)")
    parser.add_argument("--account", help="account number (default: the first individual account)")
    parser.add_argument("--symbol", default="AAPL")
    parser.add_argument("--qty", type=float, default=1)
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for the fill")
    parser.add_argument("--real-money", action="store_true", help="allow a brokerage other than paper")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(run(args))
    except (FtdeskApiError, FtdeskClientError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
