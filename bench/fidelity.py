"""Measure ftdesk's Fidelity mode next to a direct aiohttp client of the same fake upstream, in one run.

Three processes, as in real use: the fake Fidelity upstream (``tests/fakes/fidelity_server.py``, with
``latency`` seconds added to every answer), ftdesk (``FTSERVICE_BROKER=fidelity`` routed to the fake,
logged in through the API) and a client process that runs 1, 10 or 50 clients, each calling in a loop
for ``--seconds``. Two workloads: positions alone, and a mix of four reads (positions, balances, option
summary, history) each client walks in turn. Three ways to call:

* ``ftdesk``: the public API (``GET /api/v1/accounts/{acct}/...``);
* ``direct``: the same upstream requests ftdesk sends (replayed from what the fake recorded), from one
  aiohttp session with keep-alive: the upstream's own speed;
* ``direct, 1 conn/call``: the same, with a new connection for every call (what a service that opens one
  upstream connection per call, without sharing, gets).

For each: calls/s, p50 and p99 latency, and upstream calls per client call (from the fake's counter).
The goals of issue 17 are checked and printed; nothing asserts (the machine is shared and noisy).

    .venv/bin/python bench/fidelity.py [--seconds 3] [--latencies 0,100] [--clients 1,10,50]
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
from tests.fakes.fidelity_server import FakeFidelity

class BenchFake(FakeFidelity):
    async def _dispatch(self, request):
        if request.match_info["host"] == "_bench":  # what the bench reads: calls and the last request per path
            last = {r.path: {"method": r.method, "host": r.host, "body": r.body} for r in self.requests[-200:]}
            return web.json_response({"calls": sum(self.hits.values()), "last": last, "atc": self.current_atc()})
        return await super()._dispatch(request)

async def main():
    fake = BenchFake(username="trader", password="correct-horse")
    fake.latency = float(sys.argv[2]) / 1000
    await fake.start()
    print(fake.base_url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the bench closes stdin
    await fake.close()

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


async def _fake_process(latency_ms: float) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FAKE,
        str(ROOT),
        str(latency_ms),
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


async def run(
    seconds: float, latencies: list[float], clients: list[int], rounds: int, env: dict[str, str]
) -> list[dict[str, Any]]:
    """Run every combination; return one row per (latency, workload, clients, mode)."""
    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.logs import SecretRedactor
    from tests.fakes.keyring import InMemoryKeyring

    rows: list[dict[str, Any]] = []
    for latency in latencies:
        fake_proc, base_url = await _fake_process(latency)
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
            state = await _fake_state(base_url)
            upstream = {}
            for name, (upstream_path, _) in READS.items():
                recorded = state["last"][upstream_path]
                url = f"{base_url}/{recorded['host']}{upstream_path}"
                upstream[name] = {"method": recorded["method"], "url": url, "body": recorded["body"]}
            data_headers = {"AppId": "AP149323", "Accept": "application/json"}
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

    print("goals (issue 17):")
    for latency, goal in ((0.0, 0.5), (100.0, 0.9)):
        ours, direct = find(latency, "positions", 1, "ftdesk"), find(latency, "positions", 1, "direct")
        if ours and direct:
            ratio = ours["rate"] / direct["rate"]
            verdict = "met" if ratio >= goal else "MISSED"
            print(f"  one sequential client at {latency:g} ms: {ratio:.2f} of direct (goal >= {goal}) {verdict}")
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
    args = parser.parse_args()
    logging.disable(logging.INFO)  # measure the path, not the terminal
    latencies = [float(x) for x in args.latencies.split(",")]
    clients = [int(x) for x in args.clients.split(",")]
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{args.rounds} x {args.seconds:g} s per mode; fake upstream, ftdesk and the clients in three processes")
    env = {} if args.read_share is None else {"FTSERVICE_FIDELITY_READ_SHARE": args.read_share}
    if env:
        print(f"ftdesk with {env}")
    rows = asyncio.run(run(args.seconds, latencies, clients, args.rounds, env))
    _goals(rows)


if __name__ == "__main__":
    main()
