"""Say, before Qt starts, whether it can open the desktop here: when it cannot, Qt aborts the whole process.

Qt (6.x, Linux) takes its platform plugins from ``QT_QPA_PLATFORM`` (a ``;``-separated list) or else tries
wayland (when ``WAYLAND_DISPLAY`` is set or ``XDG_SESSION_TYPE`` is ``wayland``), then xcb (when ``DISPLAY`` is
set), then its built-in default, xcb. It uses the first plugin that loads and connects, and when none does it
prints a hint and calls ``qFatal``, i.e. SIGABRT, before any of our code runs again.

This module makes the same checks in-process, in a few milliseconds, without importing a Qt binding: it
loads the plugin file with ``dlopen`` as Qt's loader does (lazy binding), so the dynamic loader's error names
the missing shared library (the others the plugin needs are then looked up too, so one message names them
all); for X it opens and closes a connection through libxcb as Qt would, which also checks the authorization
(``XAUTHORITY``), after a TCP reachability check with a short timeout for a remote display; for Wayland it
connects to the compositor's socket. On other systems than Linux there is nothing to probe. Only positive
evidence counts as a problem: whatever this module cannot judge (a plugin it does not know, a display syntax
it does not parse, plugins kept where it does not look) is left to Qt.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import re
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

X_TCP_PORT = 6000
X_UNIX_DIR = "/tmp/.X11-unix"
CONNECT_TIMEOUT = 1.0
_RTLD_LAZY = getattr(os, "RTLD_LAZY", 1)
_RTLD_LOCAL = getattr(os, "RTLD_LOCAL", 0)

# The package that provides each shared library Qt's xcb and wayland plugins (and the Qt libraries they pull
# in) load from the system, per distribution family: Debian/Ubuntu (apt), Fedora/RHEL (dnf), Arch (pacman).
# packaging/linux/install.sh carries the same table (a test keeps the two equal).
PACKAGES: Mapping[str, tuple[str, str, str]] = MappingProxyType(
    {
        "libxcb.so.1": ("libxcb1", "libxcb", "libxcb"),
        "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
        "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
        "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
        "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image"),
        "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util"),
        "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil"),
        "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb"),
        "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb"),
        "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb"),
        "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb"),
        "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb"),
        "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb"),
        "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb"),
        "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
        "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
        "libX11.so.6": ("libx11-6", "libX11", "libx11"),
        "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11"),
        "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd"),
        "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd"),
        "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig"),
        "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2"),
        "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
        "libgthread-2.0.so.0": ("libglib2.0-0", "glib2", "glib2"),
        "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus"),
        "libwayland-client.so.0": ("libwayland-client0", "libwayland-client", "wayland"),
        "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor", "wayland"),
    }
)
FAMILIES = ("debian", "fedora", "arch")
_INSTALL_COMMANDS = MappingProxyType(
    {"debian": "sudo apt install", "fedora": "sudo dnf install", "arch": "sudo pacman -S"}
)
_FAMILY_NAMES = MappingProxyType({"debian": "Debian/Ubuntu", "fedora": "Fedora", "arch": "Arch"})
_FAMILY_IDS = MappingProxyType(
    {
        "debian": frozenset({"debian", "ubuntu", "linuxmint", "pop", "elementary", "raspbian", "kali", "neon"}),
        "fedora": frozenset({"fedora", "rhel", "centos", "rocky", "almalinux", "nobara"}),
        "arch": frozenset({"arch", "manjaro", "endeavouros", "cachyos", "garuda"}),
    }
)

# The system libraries each plugin needs (its own and those of the Qt libraries it loads; glibc and
# libstdc++ left out): when the plugin does not load, each is looked up so one message names them all.
_SYSTEM_LIBRARIES = MappingProxyType(
    {
        "xcb": tuple(name for name in PACKAGES if not name.startswith("libwayland")),
        "wayland": (
            "libwayland-client.so.0",
            "libwayland-cursor.so.0",
            "libxkbcommon.so.0",
            "libGL.so.1",
            "libEGL.so.1",
            "libX11.so.6",
            "libfontconfig.so.1",
            "libfreetype.so.6",
            "libglib-2.0.so.0",
            "libgthread-2.0.so.0",
            "libdbus-1.so.3",
        ),
    }
)
# The platform plugins Qt ships, by the file that holds each (Qt 6.x; wayland's older builds split it).
_PLUGIN_FILES = MappingProxyType(
    {
        "xcb": ("libqxcb.so",),
        "wayland": ("libqwayland.so", "libqwayland-generic.so"),
        "wayland-egl": ("libqwayland.so", "libqwayland-egl.so"),
        "wayland-brcm": ("libqwayland.so", "libqwayland-brcm.so"),
        "offscreen": ("libqoffscreen.so",),
        "minimal": ("libqminimal.so",),
        "minimalegl": ("libqminimalegl.so",),
        "eglfs": ("libqeglfs.so",),
        "linuxfb": ("libqlinuxfb.so",),
        "vnc": ("libqvnc.so",),
        "vkkhrdisplay": ("libqvkkhrdisplay.so",),
    }
)
# What Qt bundles itself (PySide6's Qt/lib): missing one of these means a broken install, not a missing package.
_BUNDLED = re.compile(r"^lib(Qt6|icu|pyside6|shiboken6)")
# The dynamic loader's error: "<library or its path>: <why>", e.g. "libxcb-cursor.so.0: cannot open shared
# object file: No such file or directory", or "/some/dir/libxcb-cursor.so.0: file too short".
_LOADER_ERROR = re.compile(r"^(?:[^:]*/)?([^/:\s]+\.so(?:\.\d+)*): (.+)$")
_NOT_FOUND = "cannot open shared object file"


def load_library(path: str) -> str | None:
    """Load path (a file or a soname) as Qt's plugin loader does; return None, or the dynamic loader's error."""
    libc = ctypes.CDLL(None)
    dlopen, dlerror = libc.dlopen, libc.dlerror
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    dlerror.restype, dlerror.argtypes = ctypes.c_char_p, []
    # ctypes.CDLL always binds every symbol now (RTLD_NOW); Qt's loader binds lazily, so call dlopen itself to
    # judge the plugin by the same rule.
    if dlopen(os.fsencode(path), _RTLD_LAZY | _RTLD_LOCAL):
        return None  # what loaded stays loaded: Qt loads the same files next (a failed load leaves nothing)
    error = dlerror()
    return error.decode(errors="replace") if error else f"{path}: could not be loaded"


def read_os_release() -> Mapping[str, str]:
    """Return this system's os-release fields (/etc/os-release), or nothing where it has none."""
    try:
        return platform.freedesktop_os_release()
    except OSError:
        return {}


@dataclass(frozen=True)
class Problem:
    """Why Qt cannot open the desktop with one platform plugin."""

    platform: str
    reason: str
    missing: tuple[str, ...] = ()  # sonames of the shared libraries the plugin needs and the system lacks
    no_display: bool = False
    fix: str = ""  # what to change when it is not a package to install


@dataclass(frozen=True)
class GuiUnavailable:
    """Why the tray cannot start here, and what would fix it."""

    problems: tuple[Problem, ...]
    fix: str = ""

    @property
    def no_display(self) -> bool:
        """Say whether every platform failed for want of a display (nothing to install)."""
        return all(problem.no_display for problem in self.problems)

    @property
    def missing(self) -> tuple[str, ...]:
        """Return the sonames of every missing shared library, in the order found, once each."""
        return tuple(dict.fromkeys(name for problem in self.problems for name in problem.missing))

    def message(self) -> str:
        """Return the one line that says what is missing, how to fix it, and that ftdesk serves headless."""
        if len(self.problems) == 1:
            what = self.problems[0].reason
        else:
            what = "; ".join(f"{problem.platform}: {problem.reason}" for problem in self.problems)
        fix = f" To fix it: {self.fix}." if self.fix else ""
        return f"the tray cannot start: {what}.{fix} Serving the API headless without the tray, as --headless does"


def os_family(os_release: Mapping[str, str]) -> str | None:
    """Return the distribution family (debian, fedora, arch) of an os-release mapping, or None."""
    ids = {os_release.get("ID", "").lower(), *os_release.get("ID_LIKE", "").lower().split()}
    for family in FAMILIES:
        if ids & _FAMILY_IDS[family]:
            return family
    return None


def install_hint(missing: Sequence[str], os_release: Mapping[str, str]) -> str:
    """Return how to install the packages that provide the missing libraries on this distribution."""
    bundled = [name for name in missing if _BUNDLED.match(name)]
    known = [name for name in missing if name in PACKAGES]
    unknown = [name for name in missing if name not in PACKAGES and name not in bundled]
    hints: list[str] = []
    if known:
        family = os_family(os_release)
        families = [family] if family else list(FAMILIES)
        commands = []
        for fam in families:
            index = FAMILIES.index(fam)
            packages = " ".join(dict.fromkeys(PACKAGES[name][index] for name in known))
            command = f"{_INSTALL_COMMANDS[fam]} {packages}"
            commands.append(command if family else f"{_FAMILY_NAMES[fam]}: {command}")
        hints.append("; ".join(commands) if family else "install the packages (" + "; ".join(commands) + ")")
    if unknown:
        hints.append(f"install the package that provides {', '.join(unknown)}")
    if bundled:
        hints.append(f"reinstall ftdesk (its own Qt is incomplete: {', '.join(bundled)} is missing)")
    return "; and ".join(hints)


def qt_platforms(environ: Mapping[str, str]) -> list[str]:
    """Return the platform plugins Qt will try, in its order (Qt 6.x on Linux)."""
    chosen = environ.get("QT_QPA_PLATFORM", "")
    if chosen:
        names = [entry.split(":", 1)[0].strip().lower() for entry in chosen.split(";")]
        return [name for name in names if name]
    order: list[str] = []
    if "DISPLAY" in environ:
        order.append("xcb")
    if "WAYLAND_DISPLAY" in environ or environ.get("XDG_SESSION_TYPE") == "wayland":
        order.insert(0, "wayland")
    if "xcb" not in order:
        order.append("xcb")  # the default of PySide6's Qt on Linux
    return order


def platform_plugin_dirs(environ: Mapping[str, str], pyside_dir: Path | None) -> list[Path]:
    """Return the folders Qt looks in for platform plugins, first match first."""
    dirs: list[Path] = []
    if environ.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        dirs.append(Path(environ["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    if pyside_dir is not None:
        dirs.append(pyside_dir / "Qt" / "plugins" / "platforms")
    for entry in environ.get("QT_PLUGIN_PATH", "").split(os.pathsep):
        if entry:
            dirs.append(Path(entry) / "platforms")
    return list(dict.fromkeys(dirs))


def find_pyside6() -> Path | None:
    """Return PySide6's package folder (also inside a frozen bundle) without importing it."""
    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    bundle = getattr(sys, "_MEIPASS", None)  # PyInstaller: PySide6/ sits in the bundle's _internal folder
    if bundle and (Path(bundle) / "PySide6").is_dir():
        return Path(bundle) / "PySide6"
    return None


@dataclass(frozen=True)
class XDisplay:
    """Where an X ``DISPLAY`` value points: a unix socket or a TCP port on a host."""

    host: str
    number: int
    protocol: str = ""

    @property
    def unix(self) -> bool:
        """Say whether the display is reached over a local socket (as libxcb decides)."""
        return self.protocol == "unix" or self.host in ("", "unix")

    def addresses(self) -> list[tuple[int, str | tuple[str, int]]]:
        """Return the (address family, address) pairs libxcb tries, in its order."""
        port = X_TCP_PORT + self.number
        if not self.unix:
            return [(socket.AF_UNSPEC, (self.host, port))]
        file = f"{X_UNIX_DIR}/X{self.number}"
        found: list[tuple[int, str | tuple[str, int]]] = []
        if sys.platform.startswith("linux"):
            found.append((socket.AF_UNIX, "\0" + file))  # the abstract socket Xorg and Xwayland also listen on
        found.append((socket.AF_UNIX, file))
        if not self.protocol and not self.host:
            found.append((socket.AF_UNSPEC, ("localhost", port)))  # libxcb falls back to TCP for ":n"
        return found

    def describe(self) -> str:
        """Return where the display was looked for, for the message."""
        if self.unix:
            return f"{X_UNIX_DIR}/X{self.number}"
        return f"{self.host} port {X_TCP_PORT + self.number}"


def parse_x_display(value: str) -> XDisplay:
    """Parse a DISPLAY value ([protocol/][host]:number[.screen]) as libxcb does; raise ValueError if invalid."""
    protocol, slash, rest = value.rpartition("/")
    if not slash:
        protocol, rest = "", value
    host, colon, display = rest.rpartition(":")
    if not colon or host.endswith(":"):  # no display number, or DECnet (host::n), which nobody runs
        raise ValueError(f"{value!r} is not an X display name")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    number = display.split(".")[0]
    if not number.isdigit():
        raise ValueError(f"{value!r} is not an X display name")
    return XDisplay(host=host, number=int(number), protocol=protocol.lower())


def can_connect(family: int, address: str | tuple[str, int], timeout: float) -> bool:
    """Say whether something accepts a stream connection at address within timeout seconds."""
    if family == socket.AF_UNIX:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(address)
            except OSError:
                return False
            return True
    assert isinstance(address, tuple)
    try:
        socket.create_connection(address, timeout=timeout).close()
    except OSError:
        return False
    return True


def x_connection_error(display: str) -> int:
    """Open and close an X connection through libxcb (as Qt does); return its error code, 0 when it worked."""
    libxcb = ctypes.CDLL("libxcb.so.1")
    libxcb.xcb_connect.restype, libxcb.xcb_connect.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_void_p]
    libxcb.xcb_connection_has_error.restype = ctypes.c_int
    libxcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    libxcb.xcb_disconnect.restype, libxcb.xcb_disconnect.argtypes = None, [ctypes.c_void_p]
    connection = libxcb.xcb_connect(display.encode(), None)
    try:
        return int(libxcb.xcb_connection_has_error(connection))
    finally:
        libxcb.xcb_disconnect(connection)  # safe on a failed connection too (it is an error object)


@dataclass
class PlatformProbe:
    """The checks; what they read (environment, system, PySide6's folder, os-release) can be given."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    system: str = sys.platform
    pyside_dir: Path | None = None
    os_release: Callable[[], Mapping[str, str]] = read_os_release

    def run(self) -> GuiUnavailable | None:
        """Return why Qt could not open the desktop, or None when it can (or when this cannot tell)."""
        if not self.system.startswith("linux"):
            return None  # Windows and macOS always have their one platform plugin and a desktop to show it on
        problems: list[Problem] = []
        for name in qt_platforms(self.environ):
            problem = self._check(name)
            if problem is None:
                return None
            problems.append(problem)
        missing = tuple(dict.fromkeys(name for problem in problems for name in problem.missing))
        fixes = [install_hint(missing, self.os_release())] if missing else []
        fixes += [problem.fix for problem in problems if problem.fix]
        return GuiUnavailable(tuple(problems), "; ".join(dict.fromkeys(fixes)))

    def _check(self, name: str) -> Problem | None:
        if name == "xcb" and not self.environ.get("DISPLAY"):
            # Qt tries xcb last by default: with no display to show it on, its libraries do not matter.
            unset = "DISPLAY is unset" if "WAYLAND_DISPLAY" in self.environ else "DISPLAY and WAYLAND_DISPLAY are unset"
            return Problem(name, f"no display ({unset})", no_display=True)
        if name.startswith("wayland"):
            problem = self._wayland_display(name)
            if problem is not None:
                return problem
        plugin = self._load_plugin(name)
        if name != "xcb":
            return plugin
        # Both checks, so a display that is gone and missing libraries are named together.
        display = self._x_display(name)
        if display is None or plugin is None:
            return display or plugin
        return Problem(name, f"{display.reason}, and {plugin.reason}", plugin.missing, no_display=True)

    def _load_plugin(self, name: str) -> Problem | None:
        pyside_dir = self.pyside_dir if self.pyside_dir is not None else find_pyside6()
        if pyside_dir is None:
            return Problem(name, "PySide6 (Qt for Python) is not installed")
        files = _PLUGIN_FILES.get(name)
        dirs = platform_plugin_dirs(self.environ, pyside_dir)
        if files is None:
            return self._unknown_plugin(name, dirs)
        plugins = [d / f for d in dirs for f in files if (d / f).is_file()]
        if not plugins and not any(d.is_dir() for d in dirs):
            return None  # plugins kept where this probe does not look (a packager's layout): leave it to Qt
        if not plugins:
            return Problem(name, f"Qt's {name} platform plugin is not in {', '.join(str(d) for d in dirs)}")
        # Qt tries the plugin in QT_QPA_PLATFORM_PLUGIN_PATH, then its other plugin folders: any one will do.
        errors = [load_library(str(plugin)) for plugin in plugins]
        if None in errors:
            return None
        error = str(errors[0])
        first = _LOADER_ERROR.match(error)
        if first and first.group(1) in files:
            return Problem(name, f"Qt's {name} platform plugin is damaged ({error}); reinstall ftdesk")
        named = [first.group(1)] if first else []
        # The loader stops at the first missing library: look the others up too, so one install fixes all. A
        # library that does not load for want of another (libX11 without libxcb) names that other one.
        for library in _SYSTEM_LIBRARIES.get(name.split("-")[0], ()):
            failure = load_library(library)
            if failure is not None:
                culprit = _LOADER_ERROR.match(failure)
                named.append(culprit.group(1) if culprit else library)
        missing = tuple(dict.fromkeys(named))
        if not missing:
            return Problem(name, f"Qt's {name} platform plugin does not load ({error})")
        lacking = "missing on this system" if _NOT_FOUND in error else f"missing or broken on this system ({error})"
        return Problem(name, f"Qt's {name} platform plugin needs {', '.join(missing)}, {lacking}", missing)

    def _unknown_plugin(self, name: str, dirs: list[Path]) -> Problem | None:
        """Name a plugin Qt does not have: a name left in QT_QPA_PLATFORM from another desktop, or a typo.

        Qt finds a plugin by the keys in its metadata, which hold the name as plain text, so a name that no
        plugin file in Qt's folders contains is one Qt lacks (and Qt would abort on it).
        """
        plugins = sorted({p for d in dirs if d.is_dir() for p in d.iterdir() if p.suffix == ".so" and p.is_file()})
        if not plugins:
            return None  # plugins kept where this probe does not look: leave it to Qt
        needle = name.encode()
        for plugin in plugins:
            try:
                if needle in plugin.read_bytes():
                    return None
            except OSError:
                return None  # a plugin this probe cannot read may be the one: leave it to Qt
        known = [p.name.removeprefix("libq").removesuffix(".so") for p in plugins]
        setting = self.environ.get("QT_QPA_PLATFORM", name)
        return Problem(
            name,
            f"QT_QPA_PLATFORM={setting} names a platform plugin this Qt does not have ({name}; it has "
            f"{', '.join(known)})",
            fix="unset QT_QPA_PLATFORM (or set it to one of those) and start ftdesk again",
        )

    def _wayland_display(self, name: str) -> Problem | None:
        if self.environ.get("WAYLAND_SOCKET"):
            return None  # a connected socket handed over by the compositor: nothing to look for
        display = self.environ.get("WAYLAND_DISPLAY") or "wayland-0"
        if not display.startswith("/"):
            runtime = self.environ.get("XDG_RUNTIME_DIR")
            if not runtime:
                reason = f"no display (WAYLAND_DISPLAY={display} but XDG_RUNTIME_DIR is unset)"
                return Problem(name, reason, no_display=True)
            display = f"{runtime}/{display}"
        if can_connect(socket.AF_UNIX, display, CONNECT_TIMEOUT):
            return None
        return Problem(name, f"no display (no Wayland compositor answers at {display})", no_display=True)

    def _x_display(self, name: str) -> Problem | None:
        value = self.environ["DISPLAY"]
        try:
            display = parse_x_display(value)
        except ValueError:
            return None  # leave a syntax this probe does not know to libxcb
        # libxcb has no connect timeout: a remote host that does not answer would hold it for minutes.
        if not display.unix and not self._answers(display):
            return self._no_display(name, value, display)
        try:
            error = x_connection_error(value)
        except OSError:
            return None  # libxcb itself missing was reported above; nothing more to learn here
        if not error:
            return None
        # Only now knock without a handshake: a fresh X server with no client yet resets when such a
        # connection closes, and the next client (Qt's) can then be dropped.
        if display.unix and not self._answers(display):
            return self._no_display(name, value, display)
        reason = f"the X server at DISPLAY={value} refused the connection (check XAUTHORITY; error {error})"
        return Problem(name, reason, no_display=True)

    def _answers(self, display: XDisplay) -> bool:
        return any(can_connect(family, address, CONNECT_TIMEOUT) for family, address in display.addresses())

    @staticmethod
    def _no_display(name: str, value: str, display: XDisplay) -> Problem:
        # ssh -X forwards displays from :10 up on localhost TCP; one left set after the session ended is common.
        forwarded = display.host == "localhost" and display.number >= 10
        hint = ": an SSH session's X forwarding that has ended?" if forwarded else ""
        return Problem(name, f"no display (nothing answers at DISPLAY={value}, {display.describe()}{hint})", (), True)


def probe_gui(environ: Mapping[str, str] | None = None) -> GuiUnavailable | None:
    """Return why Qt could not open the desktop here, or None when the tray can start."""
    return PlatformProbe(environ=dict(os.environ if environ is None else environ)).run()
