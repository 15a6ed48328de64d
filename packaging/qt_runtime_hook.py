"""Point Qt at the bundle's plugins at start without loading Qt: ``ftdesk.spec`` runs it instead of PyInstaller's hook.

PyInstaller's run-time hook for PySide6 (``pyi_rth_pyside6``) imports ``PySide6.QtCore`` in every start, to
register a ``qt.conf`` that moves Qt's prefix into the bundle. A headless start never uses Qt, yet that import
mapped QtCore, ICU, GLib and shiboken's signature support: about 10 MiB of resident memory and some 80 ms. The
PySide6 wheels register the same ``qt.conf`` themselves when ``QtCore`` is first imported (the ``Qt`` folder beside
the ``PySide6`` package, which in the bundle is the folder the stock hook names), so only the environment the stock
hook sets is kept here, and it costs no import.
"""

from __future__ import annotations

import os
import sys


def _prepend(path: str, variable: str) -> None:
    paths = [entry for entry in os.environ.get(variable, "").split(os.pathsep) if entry]
    if path not in paths:
        os.environ[variable] = os.pathsep.join([path, *paths])


def _point_qt_at_the_bundle() -> None:
    bundle: str = sys._MEIPASS  # type: ignore[attr-defined]  # set by PyInstaller's bootloader
    app_bundle = sys.platform == "darwin" and bundle.endswith("Contents/Frameworks")
    windows = sys.platform.startswith("win")
    # PySide6 keeps Qt in PySide6/ on Windows and in PySide6/Qt/ elsewhere.
    qt_folder = os.path.join(bundle, "PySide6") if windows else os.path.join(bundle, "PySide6", "Qt")
    os.environ["QT_PLUGIN_PATH"] = os.path.join(qt_folder, "plugins")
    qml = [os.path.join(qt_folder, "qml")]
    if app_bundle:  # a .app keeps binaries and data apart: Contents/Frameworks and Contents/Resources
        qml.insert(0, os.path.join(bundle, "..", "Resources", os.path.relpath(qt_folder, bundle), "qml"))
    os.environ["QML2_IMPORT_PATH"] = os.pathsep.join(os.path.normpath(path) for path in qml)
    # Where the stock hook lets Qt find the bundle's own libraries first (OpenSSL for its TLS backends).
    if windows:
        _prepend(bundle, "PATH")
    elif sys.platform == "darwin" and not app_bundle:
        _prepend(bundle, "DYLD_LIBRARY_PATH")


_point_qt_at_the_bundle()
