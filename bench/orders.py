"""The order path's cost: a preview and its place through ftdesk next to a bare aiohttp app calling the same broker.

    .venv/bin/python bench/orders.py [--pairs 150] [--rounds 3]

Both servers run in this process on one asyncio loop, and one aiohttp client in the same loop sends a preview
and then the place of that preview, one pair at a time (orders are sent one by one, not in bursts):

* ``ftdesk``: the real service (``ServiceRuntime``, paper broker, live trading on, risk limits off):
  ``POST /api/v1/orders/equity/preview`` then ``.../place`` with its ``confNum``, through every middleware,
  the order desk (bound preview, live gate, the journal rows in SQLite with ``synchronous=FULL``) and the
  session;
* ``bare``: a plain aiohttp app whose two handlers parse the same JSON and call the same paper broker's
  ``preview_equity_order`` and ``place_equity_order``, nothing else.

Each placed order is canceled straight on the broker afterwards, outside the timing, so every pair meets a
book of the same size.

The rounds alternate the two, so both see the same machine load. Prints, for each, the median wall
milliseconds of a pair and the process CPU milliseconds per pair (every thread: the journal writes run in
threads), their ratios, and ftdesk's extra CPU per pair: what the middleware, the desk and the journal add to
an order. On a loaded machine the wall times swing with the load; the CPU per pair is the steadier figure.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LIMITS_OFF = {
    f"FTSERVICE_{name.upper()}": "off"
    for name in (
        "max_equity_qty",
        "max_equity_notional",
        "max_option_contracts",
        "max_option_notional",
        "max_price_distance_pct",
        "max_orders_per_minute",
        "max_open_orders",
        "daily_loss_limit",
    )
}


async def measure(pairs: int, rounds: int) -> None:
    """Start both servers, run the alternating rounds and print the figures."""
    import aiohttp
    from aiohttp import web
    from pydantic import SecretStr

    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.domain.orders import EquityAction, EquityOrder, PriceType
    from ftdesk.domain.session import Credentials
    from ftdesk.logs import SecretRedactor

    with tempfile.TemporaryDirectory() as data_dir:
        key = "o" * 32
        environ = {
            "FTSERVICE_DATA_DIR": data_dir,
            "FTSERVICE_PORT": "0",
            "FTSERVICE_API_KEY": key,
            "FTSERVICE_PAPER_SEED": "1",
            "FTSERVICE_LIVE_TRADING": "true",
            **LIMITS_OFF,
        }
        settings = load_settings(environ)
        runtime = ServiceRuntime(settings, redactor=SecretRedactor())
        context = await runtime.start()
        await context.session.login(Credentials(username="bench", password=SecretStr("bench")))
        broker = runtime.broker
        acct = (await broker.accounts.get_accounts())[0].acct_num
        # A limit buy well under the market (AAPL near $280 in the seeded world): it rests, so every place is
        # accepted and nothing fills meanwhile.
        body = {
            "acctNum": acct,
            "symbol": "AAPL",
            "orderActionCode": "B",
            "qty": 1,
            "priceTypeCode": "L",
            "limitPrice": 60.0,
            "tifCode": "D",
        }

        def order_of(data: dict[str, Any]) -> EquityOrder:
            return EquityOrder(
                acct_num=data["acctNum"],
                symbol=data["symbol"],
                action=EquityAction(data["orderActionCode"]),
                qty=data["qty"],
                price_type=PriceType(data["priceTypeCode"]),
                limit_price=data["limitPrice"],
            )

        async def bare_preview(request: web.Request) -> web.Response:
            preview = await broker.orders.preview_equity_order(order_of(await request.json()))
            return web.json_response({"ok": True, "data": preview.model_dump(mode="json"), "error": None})

        async def bare_place(request: web.Request) -> web.Response:
            data = await request.json()
            placed = await broker.orders.place_equity_order(order_of(data), data["confNum"])
            return web.json_response({"ok": True, "data": placed.model_dump(mode="json"), "error": None})

        bare_app = web.Application()
        bare_app.router.add_post("/preview", bare_preview)
        bare_app.router.add_post("/place", bare_place)
        bare_runner = web.AppRunner(bare_app, access_log=None)
        await bare_runner.setup()
        site = web.TCPSite(bare_runner, "127.0.0.1", 0)
        await site.start()
        bare_url = f"http://127.0.0.1:{bare_runner.addresses[0][1]}"
        ours = f"{runtime.url}/api/v1/orders/equity"

        async def pair(http: aiohttp.ClientSession, base: str) -> tuple[float, float]:
            """Return the wall and CPU milliseconds of one preview and its place (the order is then canceled)."""
            wall, cpu = time.perf_counter(), time.process_time()
            async with http.post(f"{base}/preview", json=body) as response:
                answer = await response.json()
                assert response.status == 200, answer
                conf = answer["data"]["conf_num"]
            async with http.post(f"{base}/place", json={**body, "confNum": conf}) as response:
                placed = await response.json()
                assert response.status == 200, placed
            spent = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)
            # Untimed: the book stays the same size from pair to pair, so no round works on a longer one.
            await broker.orders.cancel_order(placed["data"]["conf_num"], acct, "B")
            return spent

        figures: dict[str, list[float]] = {"ftdesk": [], "bare": []}
        cpu: dict[str, list[float]] = {"ftdesk": [], "bare": []}
        headers = {"Authorization": f"Bearer {key}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            for _ in range(10):  # warm both paths (imports, first SQLite pages, first quotes)
                await pair(http, ours)
                await pair(http, bare_url)
            for number in range(1, rounds + 1):
                for name, base in (("bare", bare_url), ("ftdesk", ours)):
                    spent = [await pair(http, base) for _ in range(pairs)]
                    median = statistics.median(wall for wall, _ in spent)
                    cpu_ms = sum(used for _, used in spent) / pairs
                    figures[name].append(median)
                    cpu[name].append(cpu_ms)
                    load = os.getloadavg()[0]
                    print(
                        f"round {number} {name:>6}: median {median:7.2f} ms wall, {cpu_ms:6.2f} ms CPU per "
                        f"preview+place (load {load:.2f})"
                    )
        await bare_runner.cleanup()
        await runtime.stop()
    ours_ms, bare_ms = statistics.median(figures["ftdesk"]), statistics.median(figures["bare"])
    ours_cpu, bare_cpu = statistics.median(cpu["ftdesk"]), statistics.median(cpu["bare"])
    print(
        f"wall: ftdesk {ours_ms:.2f} ms, bare {bare_ms:.2f} ms per pair (medians of the rounds), "
        f"ratio {ours_ms / bare_ms:.2f}\n"
        f"CPU:  ftdesk {ours_cpu:.2f} ms, bare {bare_cpu:.2f} ms per pair, ratio {ours_cpu / bare_cpu:.2f}; "
        f"ftdesk adds {ours_cpu - bare_cpu:.2f} ms of CPU per pair"
    )


def main() -> None:
    """Run the bench and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=150, help="preview+place pairs per round and server")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    asyncio.run(measure(args.pairs, args.rounds))


if __name__ == "__main__":
    main()
