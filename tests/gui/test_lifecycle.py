"""Lifecycle: a second launch hands off to the running app; Quit, SIGINT and SIGTERM share one clean shutdown."""

from __future__ import annotations

import asyncio
import dataclasses
import socket

import aiohttp
from aiohttp import web

from ftdesk.app import ServiceRuntime
from ftdesk.config import Settings, load_settings
from ftdesk.gui.application import serve_with_tray
from ftdesk.handoff import hand_off_to_running_instance
from ftdesk.logs import SecretRedactor
from ftdesk.service.control import ServiceControl
from ftdesk.service.routes.app_window import HEADLESS_REASON, DesktopWindow
from tests.component.processes import free_port, port_is_free
from tests.conftest import TEST_API_KEY
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop


def second_launch_settings(desktop: Desktop) -> Settings:
    """The settings a second launch reads: same data dir and key source, the running instance's port."""
    port = desktop.runtime.url.rsplit(":", 1)[1]
    return load_settings({**desktop.environ, "FTSERVICE_PORT": port})


async def test_a_second_launch_brings_the_running_window_to_the_front(make_desktop, memory_keyring) -> None:
    desktop = await make_desktop(has_tray=False)
    desktop.app.window.hide()
    handed = await hand_off_to_running_instance(second_launch_settings(desktop), memory_keyring)
    assert handed is not None and handed.ok
    assert handed.message == f"ftdesk is already running at {desktop.runtime.url}; its window is now in front"
    await wait_until(desktop.app.window.isVisible)


async def test_the_hand_off_finds_the_key_in_the_keychain_like_the_running_app(make_desktop, memory_keyring) -> None:
    desktop = await make_desktop(has_tray=True, FTSERVICE_API_KEY="")
    settings = second_launch_settings(desktop)
    assert settings.api_key is None
    handed = await hand_off_to_running_instance(settings, memory_keyring)
    assert handed is not None and handed.ok and handed.message.endswith("its window is now in front")
    await wait_until(desktop.app.window.isVisible)


async def test_a_headless_service_says_it_has_no_window(start_service, memory_keyring) -> None:
    service = await start_service()
    status, body = await service.call("POST", "/api/v1/app/window")
    assert status == 200 and body["data"] == {"shown": False, "reason": body["data"]["reason"]}
    assert "headless" in body["data"]["reason"]
    port = int(service.base_url.rsplit(":", 1)[1])
    settings = dataclasses.replace(service.runtime.settings, port=port)
    handed = await hand_off_to_running_instance(settings, memory_keyring)
    assert handed is not None and handed.ok
    assert handed.message == f"ftdesk is already running at {service.base_url}; {HEADLESS_REASON}"


async def test_a_second_launch_with_another_data_dir_says_so_in_words_and_fails(
    make_desktop, memory_keyring, tmp_path
) -> None:
    desktop = await make_desktop(has_tray=False)
    port = int(desktop.runtime.url.rsplit(":", 1)[1])
    other = load_settings({"FTSERVICE_DATA_DIR": str(tmp_path / "other"), "FTSERVICE_PORT": str(port)})
    handed = await hand_off_to_running_instance(other, memory_keyring)
    assert handed is not None and not handed.ok
    assert handed.message.startswith(f"another ftdesk, with another data dir, is already serving on {port}")
    assert "API_KEY_INVALID" not in handed.message


async def test_no_hand_off_when_nothing_or_something_else_answers_on_the_port(memory_keyring, tmp_path) -> None:
    base = {"FTSERVICE_DATA_DIR": str(tmp_path), "FTSERVICE_API_KEY": TEST_API_KEY}
    free = load_settings({**base, "FTSERVICE_PORT": str(free_port())})
    assert await hand_off_to_running_instance(free, memory_keyring) is None

    async def not_ftdesk(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "data": {"service": "something-else"}})

    other = web.Application()
    other.router.add_get("/api/v1/health", not_ftdesk)
    runner = web.AppRunner(other)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        taken = load_settings({**base, "FTSERVICE_PORT": str(port)})
        assert await hand_off_to_running_instance(taken, memory_keyring) is None
    finally:
        await runner.cleanup()


async def start_tray_app(tmp_path, memory_keyring, port: int) -> tuple[asyncio.Task[int], asyncio.Event, asyncio.Event]:
    """Start the tray app's serve loop; return its task, its stop event and an event set once it serves."""
    environ = {
        "FTSERVICE_DATA_DIR": str(tmp_path / "data"),
        "FTSERVICE_PORT": str(port),
        "FTSERVICE_API_KEY": TEST_API_KEY,
    }
    loop = asyncio.get_running_loop()
    installed: asyncio.Future[asyncio.Event] = loop.create_future()
    serving = asyncio.Event()

    def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(settings, keyring_backend=memory_keyring, redactor=SecretRedactor(), window=window)

    def install_stop_signals(_loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
        installed.set_result(stop)  # what SIGINT and SIGTERM set in the app

    control = ServiceControl(load_settings(environ), make_runtime, reload_settings=lambda: load_settings(environ))
    control.subscribe(lambda _change: serving.set() if control.running else None)
    task = loop.create_task(serve_with_tray(control, install_stop_signals))
    return task, await asyncio.wait_for(installed, 5), serving


async def test_a_stop_signal_closes_open_streams_stops_the_server_and_returns_0(tmp_path, memory_keyring) -> None:
    port = free_port()
    app, stop, serving = await start_tray_app(tmp_path, memory_keyring, port)
    await asyncio.wait_for(serving.wait(), 10)
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TEST_API_KEY}"}
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/api/v1/health") as response:
            assert response.status == 200
        sse = await http.get(f"{base}/api/v1/streaming/quotes?symbols=AAPL", headers=auth)
        ws = await http.ws_connect(f"{base}/ws/quotes", headers=auth)
        assert sse.status == 200
        loop = asyncio.get_running_loop()
        started = loop.time()
        stop.set()
        assert await asyncio.wait_for(app, 5) == 0
        assert loop.time() - started < 3.0
        frame = await ws.receive(timeout=1)
        while frame.type is aiohttp.WSMsgType.TEXT:  # the status frames sent before the close
            frame = await ws.receive(timeout=1)
        assert frame.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        sse.release()
    assert port_is_free(port)


async def test_a_taken_port_returns_1_with_one_line(tmp_path, memory_keyring, capsys) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        app, _stop, _serving = await start_tray_app(tmp_path, memory_keyring, port)
        assert await asyncio.wait_for(app, 10) == 1
    err = capsys.readouterr().err
    assert f"port {port}" in err and "already in use" in err
