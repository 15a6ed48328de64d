"""Name what the frozen bundle leaves out: modules, Qt plugins, Qt translations and libraries ftdesk never loads.

``ftdesk.spec`` applies it to PyInstaller's analysis and ``build.py`` checks the result. Every group below was
checked against what the running app maps (``/proc/<pid>/maps`` of the frozen app, headless, as the tray app
on the offscreen platform and on an X server, after a paper login and a ``/docs`` request) and against what
the kept libraries link to (``readelf -d``): nothing kept needs a left-out library.
"""

from __future__ import annotations

import re

# Modules ftdesk never imports. The Qt ones keep ~45 MB of QML, Quick and PDF out of the bundle; the
# others are reached only through optional plugins of libraries (pydantic's mypy and hypothesis plugins,
# pygments' image formatter) and would come along from a development venv. readline (with libreadline and
# libtinfo) serves only the interactive prompt, which a windowed app never shows.
EXCLUDED_MODULES = [
    "tkinter",
    "readline",
    "hypothesis",
    "mypy",
    "pydantic.mypy",
    "pydantic.v1.mypy",
    "pydantic.v1._hypothesis_plugin",
    "PIL",
    "pygments",  # rich's syntax highlighting only; its tables (the `ftdesk` subcommands) do not import it
    "IPython",
    "pytest",
    "_pytest",
    "setuptools",
    "pkg_resources",
    "distutils",
    "PySide6.QtQml",
    "PySide6.QtQuick",
    "PySide6.QtQuickWidgets",
    "PySide6.QtPdf",
    "PySide6.QtPdfWidgets",
    "PySide6.QtNetwork",
    "PySide6.QtOpenGL",
    "PySide6.QtOpenGLWidgets",
    "PySide6.QtSql",
    "PySide6.QtTest",
    "PySide6.QtXml",
    "PySide6.QtConcurrent",
    "PySide6.QtDBus",
    "PySide6.QtPrintSupport",
    "PySide6.QtDesigner",
    "PySide6.QtUiTools",
]

# Qt plugins ftdesk never loads, by their path in the bundle: Linux platforms for kiosks, framebuffers and
# remote displays (the desktop needs xcb or wayland; offscreen is what headless runs and CI use) and the
# EGLFS integrations behind them, input for those (evdev), image formats other than the PNG/ICO/ICNS/SVG of
# its icons and of the desktop's icon theme, the GTK 3 theme (which would bring GTK itself along), and the
# TLS and network-information backends of QtNetwork, which ftdesk does not use (aiohttp does its HTTP and
# Python's ssl module its TLS). xcb, wayland (with its shell, decoration and graphics integrations),
# offscreen, the xdg-desktop-portal theme, the input contexts, the SVG icon engine and the image formats
# above stay.
UNUSED_PLUGINS = re.compile(
    r"plugins/(platforms/libq(eglfs|linuxfb|minimal|minimalegl|vnc|vkkhrdisplay)\.so"
    r"|imageformats/libq(gif|jpeg|tiff|webp|tga|wbmp)\.so|platformthemes/libqgtk3\.so"
    r"|generic|egldeviceintegrations|qmltooling|designer|sqldrivers|printsupport|networkinformation|tls"
    r"|wayland-graphics-integration-server)"
)

# Qt's own translations (7 MiB of .qm files): they are read only through a QTranslator, and ftdesk installs
# none (its strings are English), so Qt's dialogs and context menus speak English either way. (Windows
# wheels keep them in PySide6/translations.)
UNUSED_DATA = re.compile(r"PySide6/(Qt/)?translations/")

# Libraries nothing kept links to, by file name (PyInstaller puts the system's at the top of the bundle and
# Qt's under PySide6/Qt/lib). They came along only as dependencies of what the spec leaves out:
#   - the GTK 3 theme plugin: GTK, GDK, ATK, cairo, pixman, pango, HarfBuzz (Qt carries its own), graphite2,
#     fribidi, libthai, libdatrie, GIO, GObject, GModule, libmount, libblkid, libselinux, libjpeg, epoxy;
#   - QtNetwork, left behind by its TLS and network-information plugins: libQt6Network and the Kerberos
#     libraries (GSSAPI) only it links to;
#   - the EGLFS platform plugin: libQt6EglFSDeviceIntegration and libQt6EglFsKmsSupport.
# GLib itself (Qt's event dispatcher), the X11/xcb libraries, D-Bus (the tray's StatusNotifierItem),
# libQt6OpenGL, libQt6Svg and libQt6WaylandClient (wayland's plugins) and OpenSSL (Python's ssl) stay.
UNUSED_LIBRARIES = re.compile(
    r"^lib("
    r"gtk-3|gdk-3|atk-1\.0|atk-bridge-2\.0|atspi|cairo-gobject|cairo|pixman-1|pangocairo-1\.0|pangoft2-1\.0"
    r"|pango-1\.0|harfbuzz|graphite2|fribidi|thai|datrie|gio-2\.0|gobject-2\.0|gmodule-2\.0|mount|blkid"
    r"|selinux|jpeg|epoxy|gdk_pixbuf-2\.0"
    r"|Qt6Network|gssapi_krb5|krb5|k5crypto|krb5support|com_err|keyutils"
    r"|Qt6EglFSDeviceIntegration|Qt6EglFsKmsSupport"
    r")\.so"
)


def left_out(destination: str) -> bool:
    """Return whether the bundle leaves out the file PyInstaller would put at ``destination``."""
    path = destination.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    return bool(UNUSED_PLUGINS.search(path) or UNUSED_DATA.search(path) or UNUSED_LIBRARIES.match(name))
