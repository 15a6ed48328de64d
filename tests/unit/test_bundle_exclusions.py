"""packaging/exclusions.py: the frozen bundle leaves out what ftdesk never loads and keeps what the tray needs."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"


def load(name: str) -> ModuleType:
    """Import one of packaging/'s scripts by path (the folder is not a package, and PyPI owns its name)."""
    spec = importlib.util.spec_from_file_location(f"ftdesk_packaging_{name}", PACKAGING / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def exclusions() -> ModuleType:
    return load("exclusions")


@pytest.fixture
def build(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(PACKAGING))  # build.py imports exclusions.py as its neighbour
    return load("build")


# Where PyInstaller puts each file in the bundle: Qt's under PySide6/Qt, the system's at the top.
LEFT_OUT = [
    "PySide6/Qt/translations/qtbase_de.qm",
    "PySide6/Qt/translations/qt_help_fr.qm",
    "PySide6/translations/qtbase_ja.qm",  # where the Windows wheel keeps them
    "PySide6/Qt/lib/libQt6Network.so.6",
    "PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6",
    "PySide6/Qt/plugins/platforms/libqeglfs.so",
    "PySide6/Qt/plugins/platforms/libqvnc.so",
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
    "PySide6/Qt/plugins/tls/libqopensslbackend.so",
    "PySide6/Qt/plugins/imageformats/libqjpeg.so",
    "libgtk-3.so.0",
    "libgio-2.0.so.0",
    "libcairo.so.2",
    "libharfbuzz.so.0",
    "libgssapi_krb5.so.2",
    "libkrb5.so.3",
]
KEPT = [
    # the tray on X11 and Wayland, and the offscreen platform of CI and the platform check
    "PySide6/Qt/plugins/platforms/libqxcb.so",
    "PySide6/Qt/plugins/platforms/libqwayland.so",
    "PySide6/Qt/plugins/platforms/libqoffscreen.so",
    "PySide6/Qt/plugins/wayland-shell-integration/libxdg-shell.so",
    "PySide6/Qt/plugins/wayland-decoration-client/libadwaita.so",
    "PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so",
    "PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so",
    "PySide6/Qt/plugins/platforminputcontexts/libcomposeplatforminputcontextplugin.so",
    # the app's icons and the desktop's icon theme
    "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
    "PySide6/Qt/plugins/imageformats/libqsvg.so",
    "PySide6/Qt/plugins/imageformats/libqico.so",
    "PySide6/Qt/lib/libQt6Svg.so.6",
    # Qt itself, the tray's D-Bus, and Wayland's client library
    "PySide6/Qt/lib/libQt6Core.so.6",
    "PySide6/Qt/lib/libicudata.so.73",
    "PySide6/Qt/lib/libQt6DBus.so.6",
    "PySide6/Qt/lib/libQt6WaylandClient.so.6",
    "PySide6/Qt/lib/libQt6OpenGL.so.6",
    "libdbus-1.so.3",
    "libglib-2.0.so.0",
    "libxkbcommon-x11.so.0",
    # Python, TLS to the upstream, and the API key's encryption
    "libpython3.12.so.1.0",
    "libssl.so.3",
    "libcrypto.so.3",
    "python3.12/lib-dynload/_ssl.cpython-312-x86_64-linux-gnu.so",
    "certifi/cacert.pem",
    "cryptography/hazmat/bindings/_rust.abi3.so",
    "resources/icons/png/tray-paper-22.png",
]


@pytest.mark.parametrize("destination", LEFT_OUT)
def test_what_ftdesk_never_loads_is_left_out(exclusions: ModuleType, destination: str) -> None:
    assert exclusions.left_out(destination)
    assert exclusions.left_out(destination.replace("/", "\\"))  # the same on Windows


@pytest.mark.parametrize("destination", KEPT)
def test_what_the_tray_and_the_service_load_is_kept(exclusions: ModuleType, destination: str) -> None:
    assert not exclusions.left_out(destination)


def test_the_modules_ftdesk_never_imports_are_excluded_and_the_ones_it_imports_are_not(exclusions: ModuleType) -> None:
    excluded = set(exclusions.EXCLUDED_MODULES)
    assert {"PySide6.QtNetwork", "PySide6.QtQml", "PySide6.QtQuick", "readline", "tkinter"} <= excluded
    assert not excluded & {"PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "ssl", "cryptography"}


def _pyside_qt() -> Path:
    spec = importlib.util.find_spec("PySide6")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "Qt"


def _needed(library: Path) -> list[str]:
    output = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\).*\[(.+)\]", output)


def _qt_libraries_present(plugin: Path, qt: Path) -> bool:
    """Return whether every Qt library the plugin links to ships with PySide6: PyInstaller collects it only then.

    (The virtual keyboard's input plugin needs a QML library the wheel does not ship, so no bundle has it.)
    """
    return all((qt / "lib" / name).is_file() for name in _needed(plugin) if name.startswith("libQt6"))


# The plugin folders PyInstaller's hooks collect for the Qt modules ftdesk imports (QtCore, QtGui, QtWidgets).
PLUGIN_FOLDERS = [
    "platforms",
    "platformthemes",
    "platforminputcontexts",
    "iconengines",
    "imageformats",
    "xcbglintegrations",
    "egldeviceintegrations",
    "generic",
    "wayland-decoration-client",
    "wayland-graphics-integration-client",
    "wayland-shell-integration",
]


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("readelf") is None, reason="ELF, readelf")
def test_nothing_the_bundle_keeps_links_to_a_library_it_leaves_out(exclusions: ModuleType) -> None:
    qt = _pyside_qt()
    roots = [qt.parent / f"{module}.abi3.so" for module in ("QtCore", "QtGui", "QtWidgets")]
    for folder in PLUGIN_FOLDERS:
        roots += [
            path
            for path in (qt / "plugins" / folder).glob("*.so")
            if not exclusions.left_out(str(path)) and _qt_libraries_present(path, qt)
        ]
    assert any(path.name == "libqxcb.so" for path in roots) and any(path.name == "libqwayland.so" for path in roots)
    seen: set[Path] = set()
    pending = list(roots)
    needs_left_out: list[str] = []
    while pending:
        library = pending.pop()
        if library in seen:
            continue
        seen.add(library)
        for name in _needed(library):
            if exclusions.left_out(name):
                needs_left_out.append(f"{library.name} needs {name}")
            if (qt / "lib" / name).is_file():
                pending.append(qt / "lib" / name)
    assert needs_left_out == []
    assert qt / "lib" / "libQt6DBus.so.6" in seen  # the walk reached Qt's own libraries


def test_the_build_names_a_left_out_file_that_was_bundled(build: ModuleType, tmp_path: Path) -> None:
    internal = tmp_path / "ftdesk" / "_internal"
    (internal / "PySide6" / "Qt" / "translations").mkdir(parents=True)
    (internal / "PySide6" / "Qt" / "translations" / "qtbase_de.qm").write_bytes(b"qm")
    (internal / "libpython3.12.so.1.0").write_bytes(b"elf")
    assert build.left_out_files(tmp_path / "ftdesk") == ["PySide6/Qt/translations/qtbase_de.qm"]


def test_the_build_fails_a_bundle_over_its_budget_and_names_the_largest_files(
    build: ModuleType, tmp_path: Path
) -> None:
    bundle = tmp_path / "ftdesk"
    (bundle / "_internal").mkdir(parents=True)
    with (bundle / "_internal" / "libbig.so").open("wb") as big:
        big.truncate(2 * build.MIB)  # sparse: no disk is written
    budget = build.BUNDLE_BUDGET_MIB * build.MIB
    assert build.over_budget(budget, bundle) is None
    why = build.over_budget(budget + 1, bundle)
    assert why is not None and f"{build.BUNDLE_BUDGET_MIB} MiB budget" in why and "_internal/libbig.so 2.0" in why
