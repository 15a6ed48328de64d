"""`python main.py --headless` as a real process: serve, shut down cleanly, and fail clearly."""

from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.component.processes import ServiceProcess, free_port, main_py, port_is_free, service_env
from tests.fakes.waiting import wait_until

pytestmark = pytest.mark.slow


async def get_json(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        return response.status, await response.json()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_serves_then_exits_0_and_releases_the_port(tmp_path: Path, sig: int) -> None:
    port = free_port()
    service = await ServiceProcess.start([*main_py(), "--headless"], service_env(tmp_path, port), port)
    try:
        assert f"http://127.0.0.1:{port}/api/v1" in service.banner and "dry-run" in service.banner
        status, body = await get_json(service.base_url + "/api/v1/health")
        assert status == 200 and body["data"]["service"] == "ftdesk"
        assert await service.stop(sig) == 0
        assert port_is_free(port)
        # A first start with no window: the first tray start here will still show the welcome.
        assert (tmp_path / "welcome-pending").is_file()
    finally:
        await service.kill()


async def test_shutdown_is_prompt_with_a_half_sent_request_open(tmp_path: Path) -> None:
    port = free_port()
    service = await ServiceProcess.start([*main_py(), "--headless"], service_env(tmp_path, port), port)
    try:
        async with aiohttp.ClientSession() as http:
            # a client that stops mid-body must not hold shutdown up
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /api/v1/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
            await writer.drain()
            async with http.get(service.base_url + "/api/v1/health") as response:
                assert response.status == 200
            loop = asyncio.get_running_loop()
            started = loop.time()
            assert await service.stop(signal.SIGTERM, limit=3.0) == 0
            assert loop.time() - started < 3.0
            writer.close()
    finally:
        await service.kill()


async def test_print_api_key_matches_the_key_the_server_requires(tmp_path: Path) -> None:
    port = free_port()
    env = service_env(tmp_path, port)
    proc = await asyncio.create_subprocess_exec(*main_py(), "--print-api-key", env=env, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    key = out.decode().strip()
    assert proc.returncode == 0 and len(key) >= 40
    key_file = tmp_path / "api-key"
    assert key_file.read_text().strip() == key and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        url = service.base_url + "/api/v1/does-not-exist"
        assert (await get_json(url))[1]["error"]["code"] == "API_KEY_INVALID"
        assert (await get_json(url, {"Authorization": f"Bearer {key}"}))[1]["error"]["code"] == "NOT_FOUND"
        log_file = tmp_path / "logs" / "ftdesk.log"
        # The access log's writer thread writes what queued every few hundredths of a second.
        await wait_until(lambda: "/api/v1/does-not-exist" in log_file.read_text())
        assert key not in log_file.read_text()
    finally:
        assert await service.stop() == 0


async def test_a_taken_port_prints_one_line_naming_it_and_exits_non_zero(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            *main_py(),
            "--headless",
            env=service_env(tmp_path, port),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _out, err = await asyncio.wait_for(proc.communicate(), 20)
    lines = [line for line in err.decode().splitlines() if line.startswith("ftdesk:")]
    assert proc.returncode not in (0, None)
    assert len(lines) == 1 and f"port {port}" in lines[0] and "already in use" in lines[0]
    assert b"Traceback" not in err


async def test_a_bad_setting_prints_one_line_naming_the_variable(tmp_path: Path) -> None:
    env = service_env(tmp_path, free_port(), FTSERVICE_PORT="abc")
    proc = await asyncio.create_subprocess_exec(
        *main_py(), "--headless", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2
    text = err.decode().strip()
    assert text == "ftdesk: configuration error: FTSERVICE_PORT='abc' is not valid: expected an integer from 0 to 65535"


async def test_headless_never_imports_qt_nor_cryptography_without_stored_credentials(tmp_path: Path) -> None:
    # Blocked modules fail to import: a start that reached for one would never answer. cryptography (7 MiB of
    # memory) serves only stored credentials, and this data dir has none.
    port = free_port()
    script = (
        "import sys; sys.modules['PySide6'] = None; sys.modules['qasync'] = None; sys.modules['cryptography'] = None; "
        "from ftdesk.app import main; sys.exit(main(['--headless']))"
    )
    service = await ServiceProcess.start([sys.executable, "-c", script], service_env(tmp_path, port), port)
    try:
        assert (await get_json(service.base_url + "/api/v1/health"))[0] == 200
    finally:
        assert await service.stop() == 0


@pytest.mark.parametrize("modules", ["ftdesk.app", "ftdesk.app, ftdesk.gui.application"], ids=["headless", "tray"])
def test_freezing_the_imports_freezes_next_to_no_garbage(modules: str) -> None:
    # The start collects only the young generations before freezing what the imports made (a full collection
    # costs every start ~45 ms): garbage left in the old generation stays frozen for the process's life, so it
    # must stay tens of objects, not thousands: 0-5 of ~70,000 in the development tree, 29 in CI's fresh install
    # (46 with no collection at all; 1,866 with collection off during the imports, what this guards against).
    script = (
        f"import gc; import {modules}; ftdesk.app.freeze_imported_objects(); frozen = gc.get_freeze_count(); "
        "gc.unfreeze(); print(frozen, gc.collect())"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    frozen, garbage = map(int, result.stdout.split())
    assert frozen > 10_000, "the imports' objects are frozen"
    assert garbage <= 200, f"{garbage} collectable objects of {frozen} were frozen"


async def test_the_console_script_starts_the_app(tmp_path: Path) -> None:
    script = shutil.which("ftdesk", path=str(Path(sys.executable).parent))
    assert script, "the ftdesk console script is installed next to the interpreter"
    port = free_port()
    service = await ServiceProcess.start([script, "--headless"], service_env(tmp_path, port), port)
    try:
        assert (await get_json(service.base_url + "/api/v1/health"))[0] == 200
    finally:
        assert await service.stop() == 0


async def run_cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *main_py(), *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_reset_paper_is_refused_while_running_and_starts_a_fresh_world_after(tmp_path: Path) -> None:
    port = free_port()
    env = service_env(tmp_path, port)
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    world = tmp_path / "paper" / "paper.sqlite3"
    try:
        assert world.exists()
        code, _out, err = await run_cli("--reset-paper", env=env)
        assert code == 1 and "quit it before resetting" in err
        assert world.exists()
    finally:
        assert await service.stop() == 0
    code, out, _err = await run_cli("--reset-paper", env=env)
    assert code == 0 and "Paper world reset" in out
    assert not world.exists()


async def test_the_fidelity_broker_starts_without_reaching_fidelity_and_says_so(tmp_path: Path) -> None:
    # Nothing upstream is contacted before a login, so a machine without Fidelity still serves.
    port = free_port()
    env = service_env(tmp_path, port, FTSERVICE_BROKER="fidelity", FTSERVICE_FIDELITY_UPSTREAM="http://127.0.0.1:9")
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        assert "broker: fidelity" in service.banner
        status, body = await get_json(service.base_url + "/api/v1/health")
        assert status == 200 and body["data"]["broker"] == "fidelity"
        assert await service.stop() == 0
    finally:
        await service.kill()
