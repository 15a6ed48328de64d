"""The check that keeps Qt from aborting ftdesk: which plugin Qt picks, where the display is, what to install."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from ftdesk.gui.platform_probe import (
    PACKAGES,
    PlatformProbe,
    XDisplay,
    install_hint,
    os_family,
    parse_x_display,
    qt_platforms,
)
from tests.fakes.desktop import (
    ABSENT_LIBRARY,
    broken_xcb_plugin,
    refusing_x_server,
    unused_display_number,
    xcb_plugin_loads,
    xvfb,
)

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's platform plugins are Linux's")

UBUNTU = {"ID": "ubuntu", "ID_LIKE": "debian"}
FEDORA = {"ID": "fedora"}
MANJARO = {"ID": "manjaro", "ID_LIKE": "arch"}
ROCKY = {"ID": "rocky", "ID_LIKE": "rhel centos fedora"}
OPENSUSE = {"ID": "opensuse-tumbleweed", "ID_LIKE": "opensuse suse"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ["xcb"]),
        ({"DISPLAY": ":0"}, ["xcb"]),
        ({"WAYLAND_DISPLAY": "wayland-0"}, ["wayland", "xcb"]),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, ["wayland", "xcb"]),
        ({"DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"}, ["wayland", "xcb"]),
        ({"DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"}, ["xcb"]),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, ["offscreen"]),
        ({"QT_QPA_PLATFORM": "wayland:nohighdpi;XCB"}, ["wayland", "xcb"]),
    ],
)
def test_the_platforms_follow_qts_own_order(environ: dict[str, str], expected: list[str]) -> None:
    assert qt_platforms(environ) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (":0", XDisplay(host="", number=0)),
        (":1.0", XDisplay(host="", number=1)),
        ("unix:3", XDisplay(host="unix", number=3)),
        ("localhost:10.0", XDisplay(host="localhost", number=10)),
        ("tcp/example.org:2", XDisplay(host="example.org", number=2, protocol="tcp")),
        ("[::1]:5", XDisplay(host="::1", number=5)),
    ],
)
def test_display_names_parse_as_libxcb_reads_them(value: str, expected: XDisplay) -> None:
    assert parse_x_display(value) == expected


@pytest.mark.parametrize("value", ["", "wayland-0", "host::0", ":abc", "localhost:"])
def test_what_is_not_an_x_display_name_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="not an X display name"):
        parse_x_display(value)


def test_a_local_display_is_looked_for_on_its_sockets_then_on_tcp() -> None:
    local = parse_x_display(":7").addresses()
    assert (socket.AF_UNIX, "/tmp/.X11-unix/X7") in local
    assert local[-1] == (socket.AF_UNSPEC, ("localhost", 6007))
    assert parse_x_display("unix:7").addresses()[-1] == (socket.AF_UNIX, "/tmp/.X11-unix/X7")
    assert parse_x_display("localhost:10.0").addresses() == [(socket.AF_UNSPEC, ("localhost", 6010))]


@pytest.mark.parametrize(
    ("os_release", "family"),
    [(UBUNTU, "debian"), ({"ID": "debian"}, "debian"), (FEDORA, "fedora"), (ROCKY, "fedora"), (MANJARO, "arch")],
)
def test_the_distribution_family_comes_from_os_release(os_release: dict[str, str], family: str) -> None:
    assert os_family(os_release) == family


def test_the_fix_names_the_packages_of_the_distribution_once_each() -> None:
    missing = ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-randr.so.0", "libxcb.so.1"]
    assert install_hint(missing, UBUNTU) == (
        "sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-randr0 libxcb1"
    )
    assert install_hint(missing, FEDORA) == "sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms libxcb"
    assert install_hint(missing, MANJARO) == "sudo pacman -S xcb-util-cursor xcb-util-wm xcb-util-keysyms libxcb"


def test_on_an_unknown_distribution_the_fix_names_the_packages_of_each_family() -> None:
    hint = install_hint(["libxkbcommon-x11.so.0"], OPENSUSE)
    assert "Debian/Ubuntu: sudo apt install libxkbcommon-x11-0" in hint
    assert "Fedora: sudo dnf install libxkbcommon-x11" in hint
    assert "Arch: sudo pacman -S libxkbcommon-x11" in hint


def test_a_library_outside_the_table_and_a_missing_qt_library_get_their_own_advice() -> None:
    hint = install_hint(["libfoo.so.3", "libQt6XcbQpa.so.6"], UBUNTU)
    assert "install the package that provides libfoo.so.3" in hint
    assert "reinstall ftdesk" in hint and "libQt6XcbQpa.so.6" in hint


def test_every_table_row_names_a_package_for_each_family() -> None:
    assert all(len(row) == 3 and all(row) for row in PACKAGES.values())
    assert {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0"} <= set(PACKAGES)


def test_outside_linux_there_is_nothing_to_probe() -> None:
    for system in ("win32", "darwin"):
        assert PlatformProbe(environ={}, system=system).run() is None


@linux_only
def test_without_any_display_the_reason_is_no_display() -> None:
    problem = PlatformProbe(environ={}).run()
    assert problem is not None and problem.no_display and problem.missing == ()
    assert "no display (DISPLAY and WAYLAND_DISPLAY are unset)" in problem.message()
    assert problem.message().endswith("Serving the API headless without the tray, as --headless does")


@linux_only
def test_a_display_nobody_answers_is_no_display() -> None:
    number = unused_display_number()
    problem = PlatformProbe(environ={"DISPLAY": f":{number}"}).run()
    assert problem is not None and problem.no_display
    assert f"nothing answers at DISPLAY=:{number}, /tmp/.X11-unix/X{number}" in problem.message()


@linux_only
def test_a_forwarded_display_left_from_an_ssh_session_says_so() -> None:
    number = unused_display_number()
    problem = PlatformProbe(environ={"DISPLAY": f"localhost:{number}.0"}).run()
    assert problem is not None
    assert f"localhost port {6000 + number}" in problem.message() and "SSH session" in problem.message()


@linux_only
def test_an_x_server_that_refuses_the_client_is_reported() -> None:
    with refusing_x_server() as display:
        problem = PlatformProbe(environ={"DISPLAY": display}).run()
    assert problem is not None
    assert f"the X server at DISPLAY={display} refused the connection (check XAUTHORITY" in problem.message()


def broken_pyside6(tmp_path: Path) -> Path:
    """Return a PySide6 folder whose xcb plugin the dynamic loader refuses for want of ABSENT_LIBRARY."""
    broken_xcb_plugin(tmp_path / "PySide6" / "Qt")
    return tmp_path / "PySide6"


@linux_only
@pytest.mark.skipif(not xcb_plugin_loads(), reason="this machine lacks libraries Qt's xcb plugin needs")
def test_a_plugin_the_loader_refuses_names_the_missing_library(tmp_path: Path) -> None:
    environ = {"DISPLAY": f":{unused_display_number()}"}
    problem = PlatformProbe(environ=environ, pyside_dir=broken_pyside6(tmp_path), os_release=lambda: UBUNTU).run()
    assert problem is not None
    assert problem.missing[0] == ABSENT_LIBRARY
    message = problem.message()
    # the display that is gone and the library, together: one message, one fix
    assert "the tray cannot start: no display (nothing answers at DISPLAY=" in message
    assert f", and Qt's xcb platform plugin needs {ABSENT_LIBRARY}" in message
    assert f"To fix it: install the package that provides {ABSENT_LIBRARY}" in message


@linux_only
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb for a real X server")
def test_on_a_live_display_a_refused_plugin_is_the_only_problem(tmp_path: Path) -> None:
    with xvfb() as display:
        probe = PlatformProbe(environ={"DISPLAY": display}, pyside_dir=broken_pyside6(tmp_path))
        problem = probe.run()
    assert problem is not None and not problem.no_display
    assert problem.message().startswith(f"the tray cannot start: Qt's xcb platform plugin needs {ABSENT_LIBRARY}")


@linux_only
@pytest.mark.skipif(not xcb_plugin_loads(), reason="this machine lacks libraries Qt's xcb plugin needs")
def test_a_refused_plugin_in_the_plugin_path_is_passed_over_for_the_bundled_one_as_qt_does(tmp_path: Path) -> None:
    platforms = broken_xcb_plugin(tmp_path)
    environ = {"QT_QPA_PLATFORM_PLUGIN_PATH": str(platforms), "DISPLAY": f":{unused_display_number()}"}
    problem = PlatformProbe(environ=environ).run()
    assert problem is not None and problem.missing == ()  # the display is the only problem
    assert "platform plugin" not in problem.message()


@linux_only
def test_a_damaged_plugin_file_asks_for_a_reinstall(tmp_path: Path) -> None:
    platforms = tmp_path / "PySide6" / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (platforms / "libqxcb.so").write_bytes(b"")
    with refusing_x_server() as display:
        problem = PlatformProbe(environ={"DISPLAY": display}, pyside_dir=tmp_path / "PySide6").run()
    assert problem is not None
    assert "Qt's xcb platform plugin is damaged (" in problem.message() and "file too short" in problem.message()
    assert "reinstall ftdesk" in problem.message()


@linux_only
def test_a_wayland_session_without_its_compositor_falls_back_to_x_like_qt(tmp_path: Path) -> None:
    number = unused_display_number()
    environ = {"WAYLAND_DISPLAY": "wayland-gone", "XDG_RUNTIME_DIR": str(tmp_path), "DISPLAY": f":{number}"}
    problem = PlatformProbe(environ=environ).run()
    assert problem is not None and problem.no_display
    message = problem.message()
    assert f"wayland: no display (no Wayland compositor answers at {tmp_path}/wayland-gone)" in message
    assert f"xcb: no display (nothing answers at DISPLAY=:{number}" in message


@linux_only
def test_a_live_wayland_socket_lets_the_tray_start(tmp_path: Path) -> None:
    compositor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    compositor.bind(str(tmp_path / "wayland-1"))
    compositor.listen()
    try:
        environ = {"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": str(tmp_path)}
        problem = PlatformProbe(environ=environ).run()
    finally:
        compositor.close()
    assert problem is None or not problem.no_display, problem.message()  # the display itself is judged alive


@linux_only
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb for a real X server")
def test_a_real_x_server_lets_the_tray_start() -> None:
    with xvfb() as display:
        problem = PlatformProbe(environ={"DISPLAY": display}).run()
    assert problem is None or not problem.no_display, problem.message()  # the display itself is judged alive


@linux_only
def test_plugins_kept_where_the_probe_does_not_look_are_left_to_qt(tmp_path: Path) -> None:
    # A packager's own layout: no platforms folder where the probe looks, so it cannot judge and stays quiet.
    assert PlatformProbe(environ={"QT_QPA_PLATFORM": "offscreen"}, pyside_dir=tmp_path / "PySide6").run() is None


@linux_only
def test_a_plugin_missing_from_its_folder_is_named(tmp_path: Path) -> None:
    platforms = tmp_path / "PySide6" / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    problem = PlatformProbe(environ={"QT_QPA_PLATFORM": "offscreen"}, pyside_dir=tmp_path / "PySide6").run()
    assert problem is not None
    assert f"Qt's offscreen platform plugin is not in {platforms}" in problem.message()


@linux_only
def test_a_platform_name_this_qt_lacks_says_what_to_unset(tmp_path: Path) -> None:
    # A QT_QPA_PLATFORM left from another desktop: Qt would abort (SIGABRT) on it.
    platforms = tmp_path / "PySide6" / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (platforms / "libqxcb.so").write_bytes(b'\x7fELF...{"Keys": ["xcb"]}...')
    (platforms / "libqoffscreen.so").write_bytes(b'\x7fELF...{"Keys": ["offscreen"]}...')
    probe = PlatformProbe(environ={"QT_QPA_PLATFORM": "nosuchplatform"}, pyside_dir=tmp_path / "PySide6")
    problem = probe.run()
    assert problem is not None and not problem.no_display
    message = problem.message()
    assert "QT_QPA_PLATFORM=nosuchplatform names a platform plugin this Qt does not have" in message
    assert "it has offscreen, xcb" in message and "To fix it: unset QT_QPA_PLATFORM" in message
    assert "\n" not in message


@linux_only
def test_a_plugin_named_only_in_its_metadata_is_left_to_qt(tmp_path: Path) -> None:
    platforms = tmp_path / "PySide6" / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (platforms / "libqcustom-kiosk.so").write_bytes(b'\x7fELF...{"Keys": ["kiosk"]}...')
    assert PlatformProbe(environ={"QT_QPA_PLATFORM": "kiosk"}, pyside_dir=tmp_path / "PySide6").run() is None


@linux_only
def test_the_installed_qt_lacks_a_made_up_platform_and_has_offscreen() -> None:
    assert PlatformProbe(environ={"QT_QPA_PLATFORM": "offscreen"}).run() is None
    problem = PlatformProbe(environ={"QT_QPA_PLATFORM": "nosuchplatform"}).run()
    assert problem is not None and "this Qt does not have" in problem.message()
