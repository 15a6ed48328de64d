"""Paper on Fidelity's market: from a real quote's arrival to a resting paper limit's fill event, in one run.

Two processes, as in real use: this one runs the fake upstreams (``tests/fakes``: Fidelity's HTTP hosts and
MDDS) and the clients; ftdesk runs in its own process (``ServiceRuntime`` with ``FTSERVICE_BROKER=paper``
and ``FTSERVICE_PAPER_MARKET=fidelity``, routed to the fakes, on a clock anchored at a Monday 10:00 New York
so the session is open whatever day the bench runs). After a Fidelity login through the API, 200 resting
limit buys are placed over 50 symbols (4 each, below the fake's ask, 5 shares each). Then, one symbol at a
time, the fake MDDS publishes an ask under the limits showing 1 share: the paper engine fills 1 share of
the symbol's first order (partial fills, so the 200 orders keep resting for the whole run).

Measured on this process's clock from the moment the MDDS frame is sent:

* ``fill``: until the ORDER_PARTIAL_FILL / ORDER_FILL event of that order arrives on ``/streaming/events``
  (SSE): the upstream socket, MDDS parsing, the quote hub, the paper engine (the resting orders of that
  symbol worked at once), the paper ledger, the account-event hub and the SSE edge;
* ``quote`` (the bare baseline): until the same quote's frame arrives on ``/streaming/quotes`` (SSE) for
  a client holding all 50 symbols: the same path without the engine and the ledger.

Prints p50, p99 and max of each and their ratio, and checks the goal (fill p99 < 20 ms); nothing asserts.

    .venv/bin/python bench/paper_on_fidelity.py [--trials 400] [--symbols 50] [--orders 200] [--gap 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.fidelity_server import FakeFidelity  # noqa: E402
from tests.fakes.mdds_server import FakeMdds, snapshot_fields  # noqa: E402

API_KEY = "p" * 32
GOAL_P99_MS = 20.0

SERVICE = r"""
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from ftdesk.app import ServiceRuntime, freeze_imported_objects
from ftdesk.config import load_settings
from ftdesk.logs import SecretRedactor
from tests.fakes.clock import AnchoredClock
from tests.fakes.keyring import InMemoryKeyring

async def main():
    runtime = ServiceRuntime(
        load_settings(), clock=AnchoredClock(), keyring_backend=InMemoryKeyring(), redactor=SecretRedactor()
    )
    await runtime.start()
    print(runtime.url, flush=True)
    await asyncio.Event().wait()

freeze_imported_objects()
asyncio.run(main())
"""


def cheap_symbols(count: int) -> list[str]:
    """Return symbols the fake MDDS quotes under $60 (so 200 resting buys fit a paper account's cash)."""
    found = []
    for index in range(100_000):
        symbol = f"B{index:04d}"
        if float(snapshot_fields(symbol)["29"]) < 60:
            found.append(symbol)
            if len(found) == count:
                return found
    raise SystemExit("not enough cheap symbols")


class Sse:
    """An SSE response read frame by frame (data lines as JSON)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def frames(self) -> AsyncIterator[dict[str, Any]]:
        fields: dict[str, str] = {}
        async for raw in self.response.content:
            line = raw.decode().rstrip("\n")
            if not line:
                if "data" in fields:
                    with contextlib.suppress(ValueError):
                        yield json.loads(fields["data"])
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(args: argparse.Namespace) -> None:
    mdds = FakeMdds()
    await mdds.start()
    fidelity = FakeFidelity(mdds=mdds)
    await fidelity.start()
    data_dir = tempfile.mkdtemp(prefix="ftdesk-bench-")
    env = {
        **os.environ,
        "FTSERVICE_DATA_DIR": data_dir,
        "FTSERVICE_PORT": "0",
        "FTSERVICE_API_KEY": API_KEY,
        "FTSERVICE_BROKER": "paper",
        "FTSERVICE_PAPER_MARKET": "fidelity",
        "FTSERVICE_PAPER_SEED": "20261121",
        "FTSERVICE_LIVE_TRADING": "true",
        "FTSERVICE_FIDELITY_UPSTREAM": fidelity.base_url,
        "FTSERVICE_FIDELITY_READ_SHARE": "0",
        "FTSERVICE_LOG_LEVEL": "WARNING",
        "FTSERVICE_MAX_OPEN_ORDERS": "off",
        "FTSERVICE_MAX_ORDERS_PER_MINUTE": "off",
        "FTSERVICE_MAX_PRICE_DISTANCE_PCT": "off",
    }
    service = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVICE, str(ROOT), env=env, stdout=asyncio.subprocess.PIPE
    )
    assert service.stdout is not None
    base = (await service.stdout.readline()).decode().strip()
    auth = {"Authorization": f"Bearer {API_KEY}"}
    symbols = cheap_symbols(args.symbols)
    try:
        async with aiohttp.ClientSession(base_url=base, headers=auth) as http:
            login = await http.post("/api/v1/auth/login", json={"username": "trader", "password": "correct-horse"})
            assert login.status == 200, await login.text()
            acct = await richest_account(http)
            limits = {s: round(float(snapshot_fields(s)["29"]) * 0.95, 2) for s in symbols}
            per_symbol = args.orders // len(symbols)
            for symbol in symbols:
                for _ in range(per_symbol):
                    await place_limit_buy(http, acct, symbol, limits[symbol])
            events = await http.get("/api/v1/streaming/events")
            quotes = await http.get(f"/api/v1/streaming/quotes?symbols={','.join(symbols)}")
            fills: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
            seen_quotes: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
            readers = [
                asyncio.create_task(read_fills(Sse(events), fills)),
                asyncio.create_task(read_quotes(Sse(quotes), seen_quotes)),
            ]
            await carried(mdds, symbols)
            fill_ms, quote_ms = [], []
            for trial in range(args.trials):
                symbol = symbols[trial % len(symbols)]
                ask = limits[symbol] - 0.01 - (trial % 7) * 0.01  # a new price each time: a new quote
                for queue in (fills, seen_quotes):
                    while not queue.empty():
                        queue.get_nowait()
                sent = time.perf_counter()
                await mdds.publish(symbol, {"18": f"{ask:.2f}", "19": "1"})
                fill_ms.append((await wait_for(fills, symbol) - sent) * 1000)
                quote_ms.append((await wait_for(seen_quotes, symbol) - sent) * 1000)
                await asyncio.sleep(args.gap)  # one crossing quote at a time: latency, not throughput
            for reader in readers:
                reader.cancel()
            events.close()
            quotes.close()
    finally:
        service.terminate()
        await service.wait()
        await fidelity.close()
        await mdds.close()
    report(args, fill_ms, quote_ms)


async def carried(mdds: FakeMdds, symbols: list[str]) -> None:
    """Return once the service's MDDS connection carries every symbol (the paper market held them)."""
    async with asyncio.timeout(30):
        while mdds.current is None or not set(symbols) <= mdds.current.subscribed:
            await mdds.commanded(
                "subscribe", count=1 + len(mdds.current.commands_named("subscribe")) if mdds.current else 1
            )


async def richest_account(http: aiohttp.ClientSession) -> str:
    accounts = (await (await http.get("/api/v1/accounts")).json())["data"]
    best, best_cash = "", -1.0
    for account in accounts:
        balances = await (await http.get(f"/api/v1/accounts/{account['acct_num']}/balances")).json()
        power = (
            (balances["data"].get("margin_buying_power") or balances["data"]["cash_buying_power"])
            if balances["ok"]
            else 0
        )
        if power > best_cash:
            best, best_cash = account["acct_num"], power
    return best


async def place_limit_buy(http: aiohttp.ClientSession, acct: str, symbol: str, limit: float) -> None:
    order = {"acctNum": acct, "symbol": symbol, "orderActionCode": "B", "qty": 5, "priceTypeCode": "L",
             "limitPrice": limit, "tifCode": "G"}  # fmt: skip
    preview = await (await http.post("/api/v1/orders/equity/preview", json=order)).json()
    assert preview["ok"], preview
    placed = await (
        await http.post("/api/v1/orders/equity/place", json={**order, "confNum": preview["data"]["conf_num"]})
    ).json()
    assert placed["ok"] and placed["data"]["status"] == "OPEN", placed


async def read_fills(sse: Sse, out: asyncio.Queue[tuple[str, float]]) -> None:
    async for data in sse.frames():
        if data.get("event_type") in ("ORDER_PARTIAL_FILL", "ORDER_FILL"):
            out.put_nowait((str(data.get("desc", {}).get("symbol")), time.perf_counter()))


async def read_quotes(sse: Sse, out: asyncio.Queue[tuple[str, float]]) -> None:
    async for data in sse.frames():
        if "ask" in data and "symbol" in data:
            out.put_nowait((str(data["symbol"]), time.perf_counter()))


async def wait_for(queue: asyncio.Queue[tuple[str, float]], symbol: str) -> float:
    async with asyncio.timeout(5):
        while True:
            got, at = await queue.get()
            if got == symbol:
                return at


def report(args: argparse.Namespace, fill_ms: list[float], quote_ms: list[float]) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
          f" load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    print(f"{args.orders} resting paper limits over {args.symbols} symbols, {len(fill_ms)} quotes that cross one")
    print(f"{'path':<42}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    rows = (
        ("quote -> quote frame (bare streaming path)", quote_ms),
        ("quote -> fill event on /streaming/events", fill_ms),
    )
    for name, values in rows:
        print(f"{name:<42}{statistics.median(values):>9.2f}{percentile(values, 0.99):>9.2f}{max(values):>9.2f}")
    ratio_p50 = statistics.median(fill_ms) / statistics.median(quote_ms)
    ratio_p99 = percentile(fill_ms, 0.99) / percentile(quote_ms, 0.99)
    print(f"fill / quote: p50 {ratio_p50:.2f}x, p99 {ratio_p99:.2f}x")
    met = percentile(fill_ms, 0.99) < GOAL_P99_MS
    print(f"goal fill p99 < {GOAL_P99_MS:g} ms: {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--symbols", type=int, default=50)
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two crossing quotes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
