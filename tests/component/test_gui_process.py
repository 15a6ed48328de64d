"""`python main.py` (the tray app) as a real process, offscreen: serve, stream, hand off, shut down, and soak.

aiohttp's test server cancels stream handlers itself, so only a real process shows whether a signal ends
the app promptly with SSE and WebSocket clients connected (aiohttp waits for open handlers when it stops:
Quit once hung 14-99 s). The soak runs the qasync loop through many thousands of callbacks, where the
PySide6 6.12.0 + CPython 3.11 crash would appear (every killTimer leaked a reference to None; the process
aborted after ~16,000 callbacks).
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import pytest

from ftdesk.brokers.paper.universe import Universe
from tests.component.processes import ServiceProcess, free_port, main_py, port_is_free, service_env
from tests.conftest import TEST_API_KEY

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {TEST_API_KEY}"}
SOAK_SECONDS = 60.0
WARM_UP_SECONDS = 10.0
RSS_GROWTH_LIMIT_KB = 30 * 1024
# A paper quote changes at most once a second per symbol: 100 symbols make ~100 updates/s per stream.
SOAK_SYMBOLS = list(Universe.load().symbols[:100])


def gui_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    return service_env(data_dir, port, FTSERVICE_API_KEY=TEST_API_KEY, **extra)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


async def open_streams(http: aiohttp.ClientSession, base: str, symbols: list[str]) -> tuple:
    sse = await http.get(f"{base}/api/v1/streaming/quotes", params={"symbols": ",".join(symbols)}, headers=AUTH)
    assert sse.status == 200
    assert (await sse.content.readline()).startswith(b"retry:")
    ws = await http.ws_connect(f"{base}/ws/quotes", headers=AUTH)
    await ws.send_json({"action": "subscribe", "symbols": symbols})
    assert (await ws.receive_json(timeout=5))["type"] in ("status", "ack")
    return sse, ws


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_the_tray_app_serves_streams_and_exits_0_within_3_s_on_a_signal(tmp_path: Path, sig: int) -> None:
    port = free_port()
    app = await ServiceProcess.start(main_py(), gui_env(tmp_path, port), port)
    try:
        assert "status window (no system tray)" in app.banner
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{app.base_url}/api/v1/health") as response:
                body = await response.json()
                assert response.status == 200 and body["data"]["service"] == "ftdesk"
            sse, ws = await open_streams(http, app.base_url, ["AAPL"])
            loop = asyncio.get_running_loop()
            started = loop.time()
            assert await app.stop(sig, limit=3.0) == 0
            assert loop.time() - started < 3.0
            sse.release()
            await ws.close()
        assert port_is_free(port)
        assert "Shutting down" in (tmp_path / "logs" / "ftdesk.log").read_text()
    finally:
        await app.kill()


async def test_a_second_launch_hands_off_to_the_running_app_and_exits_0(tmp_path: Path) -> None:
    port = free_port()
    env = gui_env(tmp_path, port)
    app = await ServiceProcess.start(main_py(), env, port)
    try:
        second = await asyncio.create_subprocess_exec(
            *main_py(), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode == 0, err.decode()
        assert out.decode().strip() == f"ftdesk is already running at {app.base_url}; its window is now in front"
        async with aiohttp.ClientSession() as http, http.get(f"{app.base_url}/api/v1/health") as response:
            assert response.status == 200
        assert await app.stop() == 0
    finally:
        await app.kill()


@pytest.mark.timeout(SOAK_SECONDS + 90)
async def test_soak_streams_and_rest_for_60_s_without_a_crash_or_memory_growth(tmp_path: Path) -> None:
    port = free_port()
    app = await ServiceProcess.start(main_py(), gui_env(tmp_path, port, FTSERVICE_PAPER_TICK_INTERVAL="0.05"), port)
    base = app.base_url
    counts = {"sse": 0, "ws": 0, "rest": 0}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{base}/api/v1/auth/login", json={"username": "soak", "password": "x"}, headers=AUTH):
                pass
            sse, ws = await open_streams(http, base, SOAK_SYMBOLS)

            async def read_sse() -> None:
                async for line in sse.content:
                    if line.startswith(b"event: quote"):
                        counts["sse"] += 1

            async def read_ws() -> None:
                async for message in ws:
                    if message.type is aiohttp.WSMsgType.TEXT and '"quote"' in message.data:
                        counts["ws"] += 1

            readers = [asyncio.create_task(read_sse()), asyncio.create_task(read_ws())]
            loop = asyncio.get_running_loop()
            started = loop.time()
            rss_after_warm_up: int | None = None
            paths = ["/api/v1/auth/status", "/api/v1/accounts", "/api/v1/streaming/status", "/api/v1/health"]
            latencies: list[float] = []
            while loop.time() - started < SOAK_SECONDS:
                sent = loop.time()
                async with http.get(base + paths[counts["rest"] % len(paths)], headers=AUTH) as response:
                    assert response.status == 200, await response.text()
                    await response.read()
                latencies.append(loop.time() - sent)
                counts["rest"] += 1
                if rss_after_warm_up is None and loop.time() - started >= WARM_UP_SECONDS:
                    rss_after_warm_up = rss_kb(app.proc.pid)
            rss_at_end = rss_kb(app.proc.pid)
            assert app.proc.returncode is None, "the app died during the soak"
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
            sse.release()
            await ws.close()
        assert rss_after_warm_up is not None
        growth = rss_at_end - rss_after_warm_up
        latencies.sort()
        p99, slowest = latencies[int(len(latencies) * 0.99)] * 1000, latencies[-1] * 1000
        print(
            f"soak: {counts}, RSS {rss_after_warm_up} kB at 10 s, {rss_at_end} kB at 60 s (+{growth} kB), "
            f"REST p99 {p99:.1f} ms, slowest {slowest:.1f} ms"
        )
        assert counts["sse"] > 1000 and counts["ws"] > 1000 and counts["rest"] > 1000, counts
        assert growth < RSS_GROWTH_LIMIT_KB, f"RSS grew {growth} kB between 10 s and 60 s"
        assert await app.stop() == 0
        assert "Traceback" not in await app.stderr_text()
    finally:
        await app.kill()


async def test_a_second_launch_with_another_data_dir_says_so_quietly_and_exits_1(tmp_path: Path) -> None:
    port = free_port()
    app = await ServiceProcess.start(main_py(), gui_env(tmp_path / "first", port), port)
    try:
        env = service_env(tmp_path / "second", port)  # its own data dir, no API key of its own yet
        env.pop("FTSERVICE_API_KEY", None)
        second = await asyncio.create_subprocess_exec(
            *main_py(), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode == 1, (out, err)
        lines = (out + err).decode().strip().splitlines()
        assert lines == [
            f"ftdesk: another ftdesk, with another data dir, is already serving on {port} (this launch's data dir "
            f"is {tmp_path / 'second'}). Quit that one, or start this one on another port (FTSERVICE_PORT)"
        ]  # one line, and no keychain line
        assert not (tmp_path / "second" / "api-key").exists(), "a launch that hands over writes no key"
        assert await app.stop() == 0
    finally:
        await app.kill()
