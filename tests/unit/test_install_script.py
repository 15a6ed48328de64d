"""packaging/linux/install.sh on an unpacked archive whose app is this checkout run through Python."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ftdesk.autostart import desktop_exec

REPO = Path(__file__).resolve().parents[2]
INSTALL_SH = REPO / "packaging" / "linux" / "install.sh"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="install.sh is the Linux installer")


@pytest.fixture
def unpacked(tmp_path: Path) -> Path:
    """An unpacked tarball: install.sh next to ftdesk/, whose ftdesk runs this checkout's ftdesk."""
    folder = tmp_path / "ftdesk-0.1.0-linux-x86_64"
    app = folder / "ftdesk"
    (app / "_internal").mkdir(parents=True)
    shutil.copytree(REPO / "resources", app / "_internal" / "resources")
    launcher = app / "ftdesk"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ftdesk "$@"\n')
    launcher.chmod(0o755)
    shutil.copy2(INSTALL_SH, folder / "install.sh")
    return folder


def run_install(folder: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    return subprocess.run(
        ["sh", str(folder / "install.sh"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def desktop_entry(path: Path) -> configparser.SectionProxy:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read_string(path.read_text())
    return entry["Desktop Entry"]


def test_install_adds_the_app_its_command_menu_entry_icons_and_login_entry_and_uninstall_removes_them(
    unpacked: Path, tmp_path: Path
) -> None:
    # A home whose path needs quoting in a desktop entry (space, $, `, %) and that sed would mangle (&).
    home = tmp_path / "Ann $Lee `x` 100% & co"
    home.mkdir()
    local = home / ".local"
    app = local / "lib" / "ftdesk" / "ftdesk"

    result = run_install(unpacked, home, "--autostart")

    assert result.returncode == 0, result.stderr
    assert f"is installed in {app.parent}" in result.stdout
    assert (local / "bin" / "ftdesk").resolve() == app.resolve()
    menu = desktop_entry(local / "share" / "applications" / "ftdesk.desktop")
    assert menu["Exec"] == desktop_exec([str(app)])  # the same quoting the app itself writes
    assert menu["Icon"] == "ftdesk" and menu["Name"] == "ftdesk"
    for icon in ("16x16/apps/ftdesk.png", "512x512/apps/ftdesk.png", "scalable/apps/ftdesk.svg"):
        assert (local / "share" / "icons" / "hicolor" / icon).is_file()
    login_entry = home / ".config" / "autostart" / "ftdesk.desktop"
    assert login_entry.is_file()
    assert "Start at login: on" in result.stdout

    result = run_install(unpacked, home, "--uninstall")

    assert result.returncode == 0, result.stderr
    assert not app.parent.exists()
    assert not (local / "bin" / "ftdesk").is_symlink()
    assert not (local / "share" / "applications" / "ftdesk.desktop").exists()
    assert not (local / "share" / "icons" / "hicolor" / "48x48" / "apps" / "ftdesk.png").exists()
    assert not login_entry.exists()
    assert "stay in" in result.stdout


def test_installing_again_keeps_an_existing_login_entry_and_without_the_flag_adds_none(
    unpacked: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    login_entry = home / ".config" / "autostart" / "ftdesk.desktop"

    assert run_install(unpacked, home).returncode == 0
    assert not login_entry.exists()

    assert run_install(unpacked, home, "--autostart").returncode == 0
    login_entry.write_text(login_entry.read_text().replace("Exec=", "Exec=/old/path "))
    upgrade = run_install(unpacked, home)

    assert upgrade.returncode == 0, upgrade.stderr
    assert "/old/path" not in login_entry.read_text()  # pointed at the new install
    assert (home / ".local" / "lib" / "ftdesk" / "ftdesk").is_file()


def test_an_unknown_option_is_refused_with_the_usage(unpacked: Path, tmp_path: Path) -> None:
    result = run_install(unpacked, tmp_path, "--everywhere")
    assert result.returncode != 0
    assert "unknown option: --everywhere" in result.stderr
    assert "--uninstall" in result.stderr


def test_a_running_ftdesk_is_neither_replaced_nor_removed(unpacked: Path, tmp_path: Path) -> None:
    if shutil.which("pgrep") is None:
        pytest.skip("install.sh checks for a running ftdesk with pgrep")
    home = tmp_path / "home"
    home.mkdir()
    assert run_install(unpacked, home).returncode == 0
    app = home / ".local" / "lib" / "ftdesk" / "ftdesk"
    # A process whose command line is the installed app, as the running tray app's is.
    running = subprocess.Popen(["sh", "-c", "sleep 60", str(app)])
    try:
        for args in ((), ("--uninstall",)):
            result = run_install(unpacked, home, *args)
            assert result.returncode != 0
            assert "ftdesk is running: quit it first" in result.stderr
            assert app.is_file()
    finally:
        running.kill()
        running.wait()
    assert run_install(unpacked, home, "--uninstall").returncode == 0
    assert not app.exists()
