"""Desktops Qt cannot use, built for real: a platform plugin the dynamic loader refuses, a display nobody
answers, an X server that refuses the client; and a real one (Xvfb) where the machine has it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The broken plugin needs this library instead of libxcb-cursor.so.0 (same length, so the ELF stays valid).
ABSENT_LIBRARY = "libxcb-absent.so.0"
_REPLACED_LIBRARY = "libxcb-cursor.so.0"


def pyside6_qt_dir() -> Path:
    """Return PySide6's Qt folder (plugins/ and lib/) without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "Qt"


def broken_xcb_plugin(root: Path) -> Path:
    """Return a platforms folder whose libqxcb.so is Qt's own with one needed library renamed to an absent one.

    The copy sits at root/plugins/platforms with root/lib pointing at PySide6's Qt libraries, so its run path
    ($ORIGIN/../../lib) finds them: the only thing the dynamic loader lacks is ABSENT_LIBRARY, as on a
    system without a package the plugin needs.
    """
    qt = pyside6_qt_dir()
    platforms = root / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (root / "lib").symlink_to(qt / "lib", target_is_directory=True)
    image = (qt / "plugins" / "platforms" / "libqxcb.so").read_bytes()
    needed = _REPLACED_LIBRARY.encode() + b"\0"
    assert image.count(needed) == 1, "the xcb plugin names libxcb-cursor.so.0 once, in its dynamic strings"
    (platforms / "libqxcb.so").write_bytes(image.replace(needed, ABSENT_LIBRARY.encode() + b"\0"))
    assert len(ABSENT_LIBRARY) == len(_REPLACED_LIBRARY)
    return platforms


def unusable_library(folder: Path, soname: str = "libxcb-cursor.so.0") -> Path:
    """Return a folder for LD_LIBRARY_PATH whose soname is an empty file: the dynamic loader finds it first
    and refuses it ("file too short"), for Qt's plugin as for anything else, as where the library is broken.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / soname).write_bytes(b"")
    return folder


def xcb_plugin_loads() -> bool:
    """Say whether Qt's own xcb plugin finds every library it needs on this machine (ldd, another process)."""
    plugin = pyside6_qt_dir() / "plugins" / "platforms" / "libqxcb.so"
    if shutil.which("ldd") is None:
        return False
    report = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=False)
    return report.returncode == 0 and "not found" not in report.stdout


def free_tcp_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unused_display_number() -> int:
    """Return an X display number nothing serves: no local socket and no TCP listener at 6000 + n."""
    while True:
        number = free_tcp_port() - 6000
        if number > 0 and not Path(f"/tmp/.X11-unix/X{number}").exists():
            return number


@contextmanager
def refusing_x_server(reason: str = "No protocol specified") -> Iterator[str]:
    """Serve X setup replies that refuse the client (as a server does without a valid XAUTHORITY); yield DISPLAY."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # closing it from another thread does not wake accept(): poll the stop flag
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(5)
            text = reason.encode()
            padded = text + b"\0" * (-len(text) % 4)
            # Failed (0), reason length, protocol 11.0, length of what follows in 4-byte units, reason.
            reply = bytes([0, len(text)]) + (11).to_bytes(2, "little") + (0).to_bytes(2, "little")
            reply += (len(padded) // 4).to_bytes(2, "little") + padded
            with client:
                try:
                    if client.recv(4096):  # the setup request (a bare connect-and-close sends none)
                        client.sendall(reply)
                except OSError:
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{port - 6000}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def xvfb() -> Iterator[str]:
    """Run a virtual X server (Xvfb) on a display number of its choosing; yield DISPLAY."""
    binary = shutil.which("Xvfb")
    assert binary is not None
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [binary, "-displayfd", str(write_fd), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as ready:
            number = ready.readline().strip()  # Xvfb writes its display number once it accepts clients
        assert number, "Xvfb did not start"
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(10)
