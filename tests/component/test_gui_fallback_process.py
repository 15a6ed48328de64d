"""Plain `ftdesk` on desktops Qt cannot use: it says what is missing and serves headless instead of aborting.

Without the probe, Qt prints its own hint and calls qFatal (SIGABRT) in both cases below, before ftdesk can
say anything or serve anything.
"""

from __future__ import annotations

import shutil
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from ftdesk.gui.platform_probe import os_family, read_os_release
from tests.component.processes import ServiceProcess, free_port, main_py, port_is_free, service_env
from tests.conftest import TEST_API_KEY
from tests.fakes.desktop import unusable_library, unused_display_number, xcb_plugin_loads, xvfb

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's platform plugins are Linux's"),
]

DESKTOP_VARIABLES = ("QT_QPA_PLATFORM", "QT_QPA_PLATFORM_PLUGIN_PATH", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "DISPLAY")
# What the message tells a user of each distribution family (None: one ftdesk does not recognise).
FIXES = {
    "libxcb-cursor.so.0": {
        "debian": "To fix it: sudo apt install libxcb-cursor0",
        "fedora": "To fix it: sudo dnf install xcb-util-cursor",
        "arch": "To fix it: sudo pacman -S xcb-util-cursor",
        None: "Debian/Ubuntu: sudo apt install libxcb-cursor0",
    },
    "libxcb.so.1": {
        "debian": "To fix it: sudo apt install libxcb1",
        "fedora": "To fix it: sudo dnf install libxcb",
        "arch": "To fix it: sudo pacman -S libxcb",
        None: "Debian/Ubuntu: sudo apt install libxcb1",
    },
}


def desktop_env(data_dir: Path, port: int, **desktop: str) -> dict[str, str]:
    """Return a service environment whose desktop is exactly the given variables (no offscreen Qt)."""
    env = service_env(data_dir, port, FTSERVICE_API_KEY=TEST_API_KEY)
    for name in DESKTOP_VARIABLES:
        env.pop(name, None)
    env.update(desktop)
    return env


async def serves_headless_then_stops(app: ServiceProcess, data_dir: Path) -> str:
    """Check the headless banner and /api/v1/health, stop with SIGTERM; return what it wrote to stderr."""
    try:
        assert app.banner.startswith(f"ftdesk 0.1.0 serving {app.base_url}/api/v1 (broker: paper, dry-run)")
        assert "tray icon" not in app.banner and "status window" not in app.banner  # the --headless banner
        async with aiohttp.ClientSession() as http, http.get(f"{app.base_url}/api/v1/health") as response:
            body = await response.json()
        assert response.status == 200 and body["data"]["service"] == "ftdesk"
        assert await app.stop(signal.SIGTERM) == 0
        assert port_is_free(app.port)
    finally:
        await app.kill()
    stderr = await app.stderr_text()
    assert "Traceback" not in stderr and "qt.qpa" not in stderr  # Qt never ran
    log = (data_dir / "logs" / "ftdesk.log").read_text()
    lines = [line for line in log.splitlines() if "the tray cannot start" in line]
    assert len(lines) == 1 and "WARNING" in lines[0]
    return stderr


async def test_a_display_that_is_gone_is_named_and_the_api_is_served_headless(tmp_path: Path) -> None:
    number = unused_display_number()  # as DISPLAY stays set after the SSH session or X server is gone
    port = free_port()
    app = await ServiceProcess.start(main_py(), desktop_env(tmp_path, port, DISPLAY=f":{number}"), port)
    stderr = await serves_headless_then_stops(app, tmp_path)
    assert f"the tray cannot start: no display (nothing answers at DISPLAY=:{number}" in stderr
    assert "Serving the API headless without the tray, as --headless does" in stderr


@pytest.mark.skipif(not xcb_plugin_loads(), reason="this machine lacks libraries Qt's xcb plugin needs")
@pytest.mark.parametrize("soname", ["libxcb-cursor.so.0", "libxcb.so.1"])
async def test_a_platform_plugin_the_loader_refuses_is_named_and_the_api_is_served_headless(
    tmp_path: Path, soname: str
) -> None:
    # The dynamic loader finds an unusable copy of the library first, so it refuses Qt's own xcb plugin in this
    # process (as where the library is missing or broken); Qt itself would abort here.
    port = free_port()
    env = desktop_env(
        tmp_path / "data",
        port,
        QT_QPA_PLATFORM="xcb",
        DISPLAY=f":{unused_display_number()}",
        LD_LIBRARY_PATH=str(unusable_library(tmp_path / "lib", soname)),
    )
    app = await ServiceProcess.start(main_py(), env, port)
    stderr = await serves_headless_then_stops(app, tmp_path / "data")
    assert f"Qt's xcb platform plugin needs {soname}" in stderr
    assert f"{soname}: file too short" in stderr  # the loader's own words
    assert FIXES[soname][os_family(read_os_release())] in stderr  # for the distribution it runs on
    # What fails only for want of it (libX11 needs libxcb) is not named as missing too.
    assert "libX11.so.6" not in stderr


async def test_a_platform_plugin_qt_does_not_have_is_named_and_the_api_is_served_headless(tmp_path: Path) -> None:
    # A QT_QPA_PLATFORM left from another desktop (or misspelt): Qt would print its hint and abort (SIGABRT).
    port = free_port()
    env = desktop_env(tmp_path, port, QT_QPA_PLATFORM="nosuchplatform", DISPLAY=f":{unused_display_number()}")
    app = await ServiceProcess.start(main_py(), env, port)
    stderr = await serves_headless_then_stops(app, tmp_path)
    lines = [line for line in stderr.splitlines() if "the tray cannot start" in line]
    assert len(lines) == 1, stderr
    assert "QT_QPA_PLATFORM=nosuchplatform names a platform plugin this Qt does not have" in lines[0]
    assert "To fix it: unset QT_QPA_PLATFORM" in lines[0]


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb for a real X server")
@pytest.mark.skipif(not xcb_plugin_loads(), reason="this machine lacks libraries Qt's xcb plugin needs")
async def test_on_a_real_x_server_the_tray_app_starts(tmp_path: Path) -> None:
    # The probe must never keep the tray from a desktop that works, nor disturb the X server Qt connects to next.
    port = free_port()
    with xvfb() as display:
        app = await ServiceProcess.start(main_py(), desktop_env(tmp_path, port, DISPLAY=display), port)
        try:
            assert "tray icon" in app.banner or "status window" in app.banner
            assert await app.stop(signal.SIGTERM) == 0
        finally:
            await app.kill()
    assert "the tray cannot start" not in await app.stderr_text()
