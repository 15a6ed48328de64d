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
from ftdesk.gui.platform_probe import PACKAGES, os_family, read_os_release
from tests.fakes.desktop import broken_xcb_plugin, pyside6_qt_dir, unusable_library, xcb_plugin_loads

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


def run_install(folder: Path, home: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        **extra_env,
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


def bundle_qt(unpacked: Path, *, broken: bool = False) -> None:
    """Put Qt's xcb plugin where the frozen bundle has it (its Qt libraries beside it, as in the bundle)."""
    qt = unpacked / "ftdesk" / "_internal" / "PySide6" / "Qt"
    if broken:
        broken_xcb_plugin(qt)
        return
    (qt / "plugins" / "platforms").mkdir(parents=True)
    (qt / "lib").symlink_to(pyside6_qt_dir() / "lib", target_is_directory=True)
    shutil.copy2(pyside6_qt_dir() / "plugins" / "platforms" / "libqxcb.so", qt / "plugins" / "platforms")


# The command install.sh prints for libxcb-cursor.so.0, by the distribution family it runs on.
FIX_FOR_LIBXCB_CURSOR = {
    "debian": ["  Install them with: sudo apt install libxcb-cursor0"],
    "fedora": ["  Install them with: sudo dnf install xcb-util-cursor"],
    "arch": ["  Install them with: sudo pacman -S xcb-util-cursor"],
    None: [
        "  Debian/Ubuntu: sudo apt install libxcb-cursor0",
        "  Fedora: sudo dnf install xcb-util-cursor",
        "  Arch: sudo pacman -S xcb-util-cursor",
    ],
}


@pytest.mark.skipif(shutil.which("ldd") is None, reason="install.sh checks the tray's libraries with ldd")
def test_a_library_the_tray_needs_is_named_with_its_package_and_the_install_still_succeeds(
    unpacked: Path, tmp_path: Path
) -> None:
    bundle_qt(unpacked)
    home = tmp_path / "home"
    home.mkdir()
    # The loader finds an unusable libxcb-cursor.so.0 first, as on a system where it is missing or broken.
    broken = unusable_library(tmp_path / "lib", "libxcb-cursor.so.0")

    result = run_install(unpacked, home, LD_LIBRARY_PATH=str(broken))

    assert result.returncode == 0, result.stderr
    assert "is installed in" in result.stdout
    lines = result.stdout.splitlines()
    assert "Note: the tray needs libraries this system lacks: libxcb-cursor.so.0. Until they are installed, ftdesk" in (
        lines
    )
    for line in FIX_FOR_LIBXCB_CURSOR[os_family(read_os_release())]:
        assert line in lines


@pytest.mark.skipif(shutil.which("ldd") is None, reason="install.sh checks the tray's libraries with ldd")
@pytest.mark.skipif(not xcb_plugin_loads(), reason="this machine lacks libraries Qt's xcb plugin needs")
def test_a_library_no_package_table_knows_is_named_as_such(unpacked: Path, tmp_path: Path) -> None:
    bundle_qt(unpacked, broken=True)  # its xcb plugin needs libxcb-absent.so.0, which nothing provides
    home = tmp_path / "home"
    home.mkdir()

    result = run_install(unpacked, home)

    assert result.returncode == 0, result.stderr
    assert "Note: the tray needs libraries this system lacks: libxcb-absent.so.0." in result.stdout
    assert "  Install the package that provides libxcb-absent.so.0." in result.stdout.splitlines()


@pytest.mark.skipif(shutil.which("ldd") is None, reason="install.sh checks the tray's libraries with ldd")
def test_with_every_library_present_nothing_is_asked_for(unpacked: Path, tmp_path: Path) -> None:
    if not xcb_plugin_loads():
        pytest.skip("this machine lacks libraries Qt's xcb plugin needs")
    bundle_qt(unpacked)
    home = tmp_path / "home"
    home.mkdir()

    result = run_install(unpacked, home)

    assert result.returncode == 0, result.stderr
    assert "the tray needs" not in result.stdout


def test_the_installer_and_the_app_name_the_same_packages() -> None:
    text = INSTALL_SH.read_text()
    table = text.split("<<'TABLE'\n", 1)[1].split("\nTABLE\n", 1)[0]
    rows = {line.split()[0]: tuple(line.split()[1:]) for line in table.splitlines()}
    assert rows == PACKAGES
