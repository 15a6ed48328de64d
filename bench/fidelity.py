"""Measure ftdesk's Fidelity mode next to a direct aiohttp client of the same fake upstream, in one run.

Three processes, as in real use: the fake Fidelity upstream (``tests/fakes/fidelity_server.py``, with
``latency`` seconds added to every answer, and the fake AppSync behind it, so BEPS configures itself at
login and account events are live, as with the real upstream; ``--no-beps`` leaves it out), ftdesk
(``FTSERVICE_BROKER=fidelity`` routed to the fake, logged in through the API) and a client process that
runs 1, 10 or 50 clients, each calling in a loop for ``--seconds``.
Two workloads: positions alone, and a mix of four reads (positions, balances, option
summary, history) each client walks in turn. Three ways to call (four with ``--bare-proxy``):

* ``ftdesk``: the public API (``GET /api/v1/accounts/{acct}/...``);
* ``direct``: the same upstream requests ftdesk sends (replayed from what the fake recorded), from one
  aiohttp session with keep-alive: the upstream's own speed;
* ``direct, 1 conn/call``: the same, with a new connection for every call (what a service that opens one
  upstream connection per call, without sharing, gets);
* ``bare proxy`` (``--bare-proxy``): an aiohttp handler in ftdesk's process that forwards each call to the
  fake over one keep-alive session and returns the bytes: the least any service in this stack can cost.

For each: calls/s, p50 and p99 latency, and upstream calls per client call (from the fake's counter).
The service's Fidelity goals are checked and printed; nothing asserts (the machine is shared and noisy).

    .venv/bin/python bench/fidelity.py [--seconds 3] [--latencies 0,100] [--clients 1,10,50] [--no-beps]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

API_KEY = "b" * 32
MARGIN = "Z21772945"
READS = {
    "positions": ("/ftgw/dp/position/v2", f"/api/v1/accounts/{MARGIN}/positions"),
    "balances": ("/ftgw/dp/balance/detail/v2", f"/api/v1/accounts/{MARGIN}/balances"),
    "options": (
        "/ftgw/dp/retail-am-optionsummary/v1/accounts/positions/option-summary/get",
        f"/api/v1/accounts/{MARGIN}/options-summary",
    ),
    "history": ("/ftgw/dp/accountmanagement/transaction/history/v2", f"/api/v1/accounts/{MARGIN}/transactions"),
}
WORKLOADS = {"positions": ["positions"], "mixed 4 reads": list(READS)}

FAKE = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from aiohttp import web
from ftdesk.domain.clock import SystemClock
from tests.fakes.appsync_server import FakeAppSync
from tests.fakes.fidelity_server import FakeFidelity

class BenchFake(FakeFidelity):
    async def _dispatch(self, request):
        if request.match_info["host"] == "_bench":  # what the bench reads: calls and the last request per path
            last = {r.path: {"method": r.method, "host": r.host, "body": r.body} for r in self.requests[-200:]}
            hits = dict(self.hits)
            state = {"calls": sum(hits.values()), "hits": hits, "last": last, "atc": self.current_atc()}
            return web.json_response(state)
        return await super()._dispatch(request)

async def main():
    # BEPS behind the fake (its token endpoint issues tokens), kept alive for an hour without "ka" messages.
    # On the system clock, as ftdesk's: a token's expiry is then in the future for ftdesk too.
    live = sys.argv[3] == "1"
    appsync = FakeAppSync(token="bench", connection_timeout_ms=3_600_000, clock=SystemClock()) if live else None
    fake = BenchFake(username="trader", password="correct-horse", appsync=appsync)
    fake.latency = float(sys.argv[2]) / 1000
    if appsync is not None:
        await appsync.start()
    await fake.start()
    print(fake.base_url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the bench closes stdin
    await fake.close()
    if appsync is not None:
        await appsync.close()

asyncio.run(main())
"""

CLIENT = r"""
import asyncio, json, sys, time
import aiohttp

async def main(spec):
    latencies, errors = [], 0
    deadline = time.perf_counter() + spec["seconds"]
    connector = aiohttp.TCPConnector(limit=0, force_close=spec["force_close"])
    async with aiohttp.ClientSession(connector=connector, headers=spec["headers"], cookies=spec["cookies"]) as http:
        async def client(index):
            nonlocal errors
            calls = spec["calls"]
            n = index
            while time.perf_counter() < deadline:
                call = calls[n % len(calls)]
                n += 1
                started = time.perf_counter()
                async with http.request(call["method"], call["url"], json=call["body"]) as response:
                    await response.read()
                    if response.status != 200:
                        errors += 1
                latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(spec["clients"])))
        elapsed = time.perf_counter() - started
    print(json.dumps({"elapsed": elapsed, "latencies": latencies, "errors": errors}))

asyncio.run(main(json.loads(sys.stdin.read())))
"""


async def _fake_process(latency_ms: float, beps: bool = True) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FAKE,
        str(ROOT),
        str(latency_ms),
        "1" if beps else "0",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    base_url = (await proc.stdout.readline()).decode().strip()
    return proc, base_url


async def _fake_state(base_url: str) -> dict[str, Any]:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(f"{base_url}/_bench/state") as response:
        state: dict[str, Any] = await response.json()
        return state


async def _run_clients(spec: dict[str, Any]) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate(json.dumps(spec).encode())
    result: dict[str, Any] = json.loads(out)
    return result


def _summary(results: list[dict[str, Any]], upstream_calls: int) -> dict[str, Any]:
    """Pool the latencies of every round; the rate is the median of the rounds' rates."""
    lat = sorted(x for result in results for x in result["latencies"])
    n = len(lat)
    return {
        "rate": statistics.median(len(r["latencies"]) / r["elapsed"] for r in results),
        "p50": statistics.median(lat) * 1000,
        "p99": lat[max(0, int(n * 0.99) - 1)] * 1000,
        "per_call": upstream_calls / n if n else 0.0,
        "errors": sum(r["errors"] for r in results),
        "n": n,
    }


async def _events_live(url: str, auth: dict[str, str]) -> bool:
    """Wait up to 10 s for ftdesk's account-event stream to be live; say whether it is."""
    import aiohttp

    async with aiohttp.ClientSession(headers=auth) as http:
        for _ in range(200):
            async with http.get(url + "/api/v1/streaming/status") as response:
                if (await response.json())["data"]["beps"]["live"]:
                    return True
            await asyncio.sleep(0.05)
    return False


async def _bare_proxy(upstream: dict[str, dict[str, Any]], headers: dict[str, str], atc: str) -> tuple[Any, Any, str]:
    """Start an aiohttp pass-through to the fake in this process; return its session, runner and base URL."""
    import aiohttp
    from aiohttp import web

    session = aiohttp.ClientSession(headers=headers, cookies={"ATC": atc})

    async def forward(request: web.Request) -> web.Response:
        call = upstream[request.match_info["name"]]
        async with session.request(call["method"], call["url"], json=call["body"]) as response:
            body = await response.read()
        return web.Response(body=body, status=response.status, content_type="application/json")

    app = web.Application()
    app.router.add_get("/p/{name}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return session, runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def run(
    seconds: float,
    latencies: list[float],
    clients: list[int],
    rounds: int,
    env: dict[str, str],
    *,
    beps: bool = True,
    bare_proxy: bool = False,
) -> list[dict[str, Any]]:
    """Run every combination; return one row per (latency, workload, clients, mode)."""
    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.logs import SecretRedactor
    from tests.fakes.keyring import InMemoryKeyring

    rows: list[dict[str, Any]] = []
    for latency in latencies:
        fake_proc, base_url = await _fake_process(latency, beps)
        with tempfile.TemporaryDirectory() as data_dir:
            settings = load_settings(
                {
                    "FTSERVICE_DATA_DIR": data_dir,
                    "FTSERVICE_PORT": "0",
                    "FTSERVICE_API_KEY": API_KEY,
                    "FTSERVICE_BROKER": "fidelity",
                    "FTSERVICE_FIDELITY_UPSTREAM": base_url,
                    **env,
                }
            )
            runtime = ServiceRuntime(settings, redactor=SecretRedactor(), keyring_backend=InMemoryKeyring())
            await runtime.start()
            auth = {"Authorization": f"Bearer {API_KEY}"}
            import aiohttp

            async with aiohttp.ClientSession(headers=auth) as http:
                body = {"username": "trader", "password": "correct-horse"}
                async with http.post(runtime.url + "/api/v1/auth/login", json=body) as response:
                    assert response.status == 200, await response.text()
                for _, path in READS.values():  # warm up, and let the fake record each upstream request
                    async with http.get(runtime.url + path) as response:
                        assert response.status == 200, await response.text()
            live = await _events_live(runtime.url, auth)
            print(f"  {latency:g} ms: account events {'live (BEPS)' if live else 'NOT live'}", flush=True)
            state = await _fake_state(base_url)
            upstream = {}
            for name, (upstream_path, _) in READS.items():
                recorded = state["last"][upstream_path]
                url = f"{base_url}/{recorded['host']}{upstream_path}"
                upstream[name] = {"method": recorded["method"], "url": url, "body": recorded["body"]}
            data_headers = {"AppId": "AP149323", "Accept": "application/json"}
            proxy = await _bare_proxy(upstream, data_headers, state["atc"]) if bare_proxy else None
            for workload, names in WORKLOADS.items():
                for count in clients:
                    modes = {
                        "ftdesk": {
                            "calls": [{"method": "GET", "url": runtime.url + READS[n][1], "body": None} for n in names],
                            "headers": auth,
                            "cookies": {},
                            "force_close": False,
                        },
                        "direct": {
                            "calls": [upstream[n] for n in names],
                            "headers": data_headers,
                            "cookies": {"ATC": state["atc"]},
                            "force_close": False,
                        },
                        "direct, 1 conn/call": {
                            "calls": [upstream[n] for n in names],
                            "headers": data_headers,
                            "cookies": {"ATC": state["atc"]},
                            "force_close": True,
                        },
                    }
                    if proxy is not None:
                        modes["bare proxy"] = {
                            "calls": [{"method": "GET", "url": f"{proxy[2]}/p/{n}", "body": None} for n in names],
                            "headers": {},
                            "cookies": {},
                            "force_close": False,
                        }
                    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
                    upstream_calls = dict.fromkeys(modes, 0)
                    for _ in range(rounds):  # interleaved, so a change in the machine's load hits every mode
                        for mode, spec in modes.items():
                            before = (await _fake_state(base_url))["calls"]
                            results[mode].append(await _run_clients({**spec, "clients": count, "seconds": seconds}))
                            upstream_calls[mode] += (await _fake_state(base_url))["calls"] - 1 - before
                    for mode in modes:
                        row = _summary(results[mode], upstream_calls[mode])
                        row.update(latency=latency, workload=workload, clients=count, mode=mode)
                        rows.append(row)
                        _print_row(row)
            if proxy is not None:
                await proxy[0].close()
                await proxy[1].cleanup()
            await runtime.stop()
        assert fake_proc.stdin is not None
        fake_proc.stdin.close()
        await fake_proc.wait()
    return rows


def _print_row(row: dict[str, Any]) -> None:
    print(
        f"  {row['latency']:>4g} ms  {row['workload']:<14} {row['clients']:>3} clients  {row['mode']:<20}"
        f" {row['rate']:8.1f} calls/s   p50 {row['p50']:7.2f} ms   p99 {row['p99']:7.2f} ms"
        f"   upstream/call {row['per_call']:5.3f}   errors {row['errors']}",
        flush=True,
    )


def _goals(rows: list[dict[str, Any]]) -> None:
    def find(latency: float, workload: str, clients: int, mode: str) -> dict[str, Any] | None:
        for row in rows:
            if (row["latency"], row["workload"], row["clients"], row["mode"]) == (latency, workload, clients, mode):
                return row
        return None

    print("goals:")
    for latency, goal in ((0.0, 0.5), (100.0, 0.9)):
        ours, direct = find(latency, "positions", 1, "ftdesk"), find(latency, "positions", 1, "direct")
        if ours and direct:
            ratio = ours["rate"] / direct["rate"]
            verdict = "met" if ratio >= goal else "MISSED"
            print(f"  one sequential client at {latency:g} ms: {ratio:.2f} of direct (goal >= {goal}) {verdict}")
            bare = find(latency, "positions", 1, "bare proxy")
            if bare:
                floor = bare["rate"] / direct["rate"]
                print(f"    (a bare aiohttp pass-through in the same run: {floor:.2f} of direct)")
    ours, naive = find(100.0, "mixed 4 reads", 10, "ftdesk"), find(100.0, "mixed 4 reads", 10, "direct, 1 conn/call")
    if ours and naive:
        ratio = ours["rate"] / naive["rate"]
        verdict = "met" if ratio >= 2 else "MISSED"
        print(f"  mixed reads, 10 clients, 100 ms: {ratio:.2f}x one connection per call (goal >= 2x) {verdict}")
    for workload in WORKLOADS:
        row = find(100.0, workload, 10, "ftdesk")
        if row:
            verdict = "met" if row["p99"] <= 200 else "MISSED"
            print(f"  p99 of a read ({workload}), 10 clients, 100 ms: {row['p99']:.0f} ms (goal <= 200 ms) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--latencies", default="0,100", help="upstream latencies, ms")
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per mode")
    parser.add_argument(
        "--read-share", help="FTSERVICE_FIDELITY_READ_SHARE for ftdesk (0: share only reads in flight)", default=None
    )
    parser.add_argument(
        "--no-beps", action="store_true", help="no fake AppSync: account events never live (no answer is reused)"
    )
    parser.add_argument("--bare-proxy", action="store_true", help="also measure a bare aiohttp pass-through")
    args = parser.parse_args()
    logging.disable(logging.INFO)  # measure the path, not the terminal
    latencies = [float(x) for x in args.latencies.split(",")]
    clients = [int(x) for x in args.clients.split(",")]
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{args.rounds} x {args.seconds:g} s per mode; fake upstream, ftdesk and the clients in three processes")
    env = {} if args.read_share is None else {"FTSERVICE_FIDELITY_READ_SHARE": args.read_share}
    if env:
        print(f"ftdesk with {env}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = asyncio.run(
        run(args.seconds, latencies, clients, args.rounds, env, beps=not args.no_beps, bare_proxy=args.bare_proxy)
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _goals(rows)


if __name__ == "__main__":
    main()
