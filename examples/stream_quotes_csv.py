"""Write live quotes to CSV until N quotes or T seconds (asyncio, the SSE stream or the WebSocket).

    python examples/stream_quotes_csv.py --symbols AAPL,MSFT --count 20 --seconds 60 [--out quotes.csv] [--ws]

The stream reconnects by itself after a drop. Exits 0 when the count or the time is reached.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import sys
from typing import TextIO

from ftdesk.client import AsyncClient, FtdeskApiError, FtdeskClientError
from ftdesk.domain.market import Quote
from ftdesk.domain.session import SessionState

COLUMNS = ("time", "symbol", "last", "bid", "ask", "bid_size", "ask_size", "volume")


async def stream(args: argparse.Namespace, out: TextIO) -> int:
    """Write quotes as CSV rows; return how many were written."""
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    written = 0
    async with AsyncClient(args.base_url, args.api_key) as api:
        if (await api.get_auth_status()).state is not SessionState.LOGGED_IN and (
            await api.get_health()
        ).broker == "paper":
            await api.login("trader", "paper-pass")
        symbols = [s.strip().upper() for s in args.symbols.split(",") if s.strip()]
        quotes = api.ws_quotes(symbols) if args.ws else api.stream_quotes(symbols)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(args.seconds):
                async for quote in quotes:
                    if isinstance(quote, Quote):
                        writer.writerow([getattr(quote, column) for column in COLUMNS])
                        written += 1
                        if written >= args.count:
                            break
        await quotes.aclose()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the service, e.g. http://127.0.0.1:8787 (default: the local one)")
    parser.add_argument("--api-key", help="the API key (default: found where the service keeps it)")
    parser.add_argument("--symbols", default="AAPL,MSFT")
    parser.add_argument("--count", type=int, default=20, help="stop after this many quotes")
    parser.add_argument("--seconds", type=float, default=60, help="stop after this many seconds")
    parser.add_argument("--out", help="CSV file (default: stdout)")
    parser.add_argument("--ws", action="store_true", help="use the WebSocket instead of server-sent events")
    args = parser.parse_args(argv)
    try:
        with (
            open(args.out, "w", newline="", encoding="utf-8") if args.out else contextlib.nullcontext(sys.stdout) as out
        ):
            written = asyncio.run(stream(args, out))
    except (FtdeskApiError, FtdeskClientError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{written} quotes written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
