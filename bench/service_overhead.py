"""Measure the service stack's cost: GET /api/v1/health through every middleware vs a bare aiohttp handler.

Both servers run in this process on one loop, the client in a second process, in one run, so the ratio
is meaningful on a noisy machine. Prints requests/s and p50/p99 latency of each and their ratio.

    .venv/bin/python bench/service_overhead.py [--requests 20000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLIENT = r"""
import asyncio, json, sys, time
import aiohttp

async def main(url, total, concurrency, headers):
    latencies = []
    async with aiohttp.ClientSession(headers=headers) as http:
        for _ in range(200):  # warm-up
            async with http.get(url) as r:
                await r.read()
        remaining = total
        async def worker():
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                t0 = time.perf_counter()
                async with http.get(url) as r:
                    await r.read()
                    assert r.status == 200, r.status
                latencies.append(time.perf_counter() - t0)
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    print(json.dumps({"elapsed": elapsed, "latencies": latencies}))

url, total, concurrency, headers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
asyncio.run(main(url, total, concurrency, headers))
"""


def summarise(name: str, result: dict) -> dict:
    lat = sorted(result["latencies"])
    return {
        "name": name,
        "rps": len(lat) / result["elapsed"],
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000,
    }


async def run(total: int, concurrency: int) -> None:
    from aiohttp import web

    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.logs import SecretRedactor

    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings({"FTSERVICE_DATA_DIR": data_dir, "FTSERVICE_PORT": "0", "FTSERVICE_API_KEY": "b" * 32})
        runtime = ServiceRuntime(settings, redactor=SecretRedactor())
        await runtime.start()

        async def bare(_request: web.Request) -> web.Response:
            body = {
                "ok": True,
                "data": {
                    "status": "ok",
                    "service": "ftdesk",
                    "version": "0",
                    "broker": "paper",
                    "live_trading": False,
                    "api_key_required": True,
                    "uptime_seconds": 1.0,
                },
                "error": None,
            }
            return web.json_response(body)

        bare_app = web.Application()
        bare_app.router.add_get("/health", bare)
        bare_runner = web.AppRunner(bare_app, access_log=None)
        await bare_runner.setup()
        site = web.TCPSite(bare_runner, "127.0.0.1", 0)
        await site.start()
        bare_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        async def client(url: str, headers: dict[str, str]) -> dict:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                CLIENT,
                url,
                str(total),
                str(concurrency),
                json.dumps(headers),
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await proc.communicate()
            return json.loads(out)

        auth = {"Authorization": "Bearer " + "b" * 32}
        rows = [
            summarise("bare aiohttp handler", await client(f"http://127.0.0.1:{bare_port}/health", {})),
            summarise("ftdesk /api/v1/health (all middleware)", await client(runtime.url + "/api/v1/health", auth)),
        ]
        await runtime.stop()
        await bare_runner.cleanup()

    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{total} requests, concurrency {concurrency}, plain asyncio loop, client in a second process")
    for row in rows:
        print(
            f"  {row['name']:<42} {row['rps']:8.0f} req/s   p50 {row['p50_ms']:6.2f} ms   p99 {row['p99_ms']:6.2f} ms"
        )
    print(f"  ratio ftdesk/bare throughput: {rows[1]['rps'] / rows[0]['rps']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    import logging

    logging.disable(logging.INFO)  # measure the stack, not the terminal
    asyncio.run(run(args.requests, args.concurrency))


if __name__ == "__main__":
    main()
