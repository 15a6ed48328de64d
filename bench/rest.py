"""REST throughput and latency of a portfolio GET on the paper broker, served from the qasync loop.

The ftdesk service and a bare aiohttp handler run in this process on ONE qasync loop (as in the tray
app); a client process drives each in turn in the same run, so the ratio survives a noisy machine.

    .venv/bin/python bench/rest.py [--requests 10000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.service_overhead import CLIENT, summarise  # noqa: E402


async def measure(total: int, concurrency: int) -> list[dict[str, float | str]]:
    from aiohttp import web
    from pydantic import SecretStr

    from ftdesk.app import ServiceRuntime
    from ftdesk.config import load_settings
    from ftdesk.domain.session import Credentials
    from ftdesk.logs import SecretRedactor

    with tempfile.TemporaryDirectory() as data_dir:
        key = "r" * 32
        settings = load_settings(
            {
                "FTSERVICE_DATA_DIR": data_dir,
                "FTSERVICE_PORT": "0",
                "FTSERVICE_API_KEY": key,
                "FTSERVICE_PAPER_SEED": "1",
            }
        )
        runtime = ServiceRuntime(settings, redactor=SecretRedactor())
        context = await runtime.start()
        await context.session.login(Credentials(username="bench", password=SecretStr("bench")))
        acct = (await runtime.broker.accounts.get_accounts())[0].acct_num
        positions_json = json.dumps(
            {
                "ok": True,
                "data": [p.model_dump(mode="json") for p in await runtime.broker.accounts.get_positions(acct)],
                "error": None,
            }
        )

        async def bare(_request: web.Request) -> web.Response:
            return web.Response(text=positions_json, content_type="application/json")

        bare_app = web.Application()
        bare_app.router.add_get("/positions", bare)
        bare_runner = web.AppRunner(bare_app, access_log=None)
        await bare_runner.setup()
        site = web.TCPSite(bare_runner, "127.0.0.1", 0)
        await site.start()
        bare_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        def client(url: str, headers: dict[str, str]) -> dict:
            out = subprocess.run(
                [sys.executable, "-c", CLIENT, url, str(total), str(concurrency), json.dumps(headers)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            return json.loads(out)

        lag: list[float] = []
        stop = asyncio.Event()

        async def lag_probe() -> None:
            loop = asyncio.get_running_loop()
            while not stop.is_set():
                start = loop.time()
                await asyncio.sleep(0.01)
                lag.append(max(0.0, loop.time() - start - 0.01))

        probe = asyncio.ensure_future(lag_probe())
        bare_result = await asyncio.to_thread(client, f"http://127.0.0.1:{bare_port}/positions", {})
        health = await asyncio.to_thread(client, f"{runtime.url}/api/v1/health", {})
        ours = await asyncio.to_thread(
            client, f"{runtime.url}/api/v1/accounts/{acct}/positions", {"Authorization": f"Bearer {key}"}
        )
        stop.set()
        await probe
        await runtime.stop()
        await bare_runner.cleanup()
    lag.sort()
    rows = [
        summarise("bare aiohttp (same JSON)", bare_result),
        summarise("ftdesk GET positions", ours),
        summarise("ftdesk GET health (stack only)", health),
    ]
    rows.append({"name": "loop lag", "p99_ms": lag[int(len(lag) * 0.99) - 1] * 1000 if lag else 0.0})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    logging.disable(logging.INFO)

    import PySide6
    from PySide6.QtWidgets import QApplication

    from ftdesk.gui.event_loop import DesktopEventLoop

    app = QApplication.instance() or QApplication([])
    with asyncio.Runner(loop_factory=lambda: DesktopEventLoop(app)) as runner:
        rows = runner.run(measure(args.requests, args.concurrency))
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"PySide6 {PySide6.__version__}, qasync loop"
    )
    print(f"{args.requests} requests per server, concurrency {args.concurrency}, client in a second process")
    for row in rows[:3]:
        print(
            f"  {row['name']:<28} {row['rps']:8.0f} req/s   p50 {row['p50_ms']:6.2f} ms   p99 {row['p99_ms']:6.2f} ms"
        )
    print(f"  ratio ftdesk/bare throughput: {float(rows[1]['rps']) / float(rows[0]['rps']):.2f}")
    print(f"  event-loop lag while serving: p99 {rows[3]['p99_ms']:.2f} ms")


if __name__ == "__main__":
    main()
