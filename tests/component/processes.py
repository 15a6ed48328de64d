"""Start ftdesk as a real process on a free port and talk to it over loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """Return a port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Say whether a listener could bind the port now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def service_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """Return an environment for a service process isolated in data_dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FTSERVICE_")}
    env.update(
        FTSERVICE_DATA_DIR=str(data_dir),
        FTSERVICE_PORT=str(port),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        QT_QPA_PLATFORM="offscreen",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


class ServiceProcess:
    """A running ftdesk process."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int) -> None:
        self.proc = proc
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.banner = ""
        self.stdout_task: asyncio.Future[bytes] | None = None
        self.stderr_task: asyncio.Future[bytes] | None = None

    @classmethod
    async def start(cls, args: Sequence[str], env: dict[str, str], port: int, *, ready: bool = True) -> ServiceProcess:
        """Start the process and (by default) wait for its 'serving' banner."""
        proc = await asyncio.create_subprocess_exec(
            *args, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        service = cls(proc, port)
        if ready:
            await service.wait_ready()
        return service

    async def wait_ready(self, limit: float = 20.0) -> None:
        """Wait until the process prints its banner; fail with its stderr if it exits first."""
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), limit)
            if not line:
                stderr = await self.proc.stderr.read() if self.proc.stderr else b""
                raise AssertionError(f"ftdesk exited before serving: {stderr.decode(errors='replace')}")
            if b"serving" in line:
                self.banner = line.decode()
                self._drain_output()
                return

    def _drain_output(self) -> None:
        # Keep reading both pipes from now on: a full pipe (the access log writes a line per request)
        # would block the app's loggers, and with them its event loop.
        self.stdout_task = asyncio.ensure_future(self.proc.stdout.read()) if self.proc.stdout else None
        self.stderr_task = asyncio.ensure_future(self.proc.stderr.read()) if self.proc.stderr else None

    async def stderr_text(self) -> str:
        """Return everything the process wrote to stderr after its banner (waits for it to exit)."""
        return (await self.stderr_task).decode(errors="replace") if self.stderr_task is not None else ""

    async def stop(self, sig: int = signal.SIGTERM, limit: float = 3.0) -> int:
        """Send a signal and return the exit code (fails if it takes longer than limit seconds)."""
        self.proc.send_signal(sig)
        return await asyncio.wait_for(self.proc.wait(), limit)

    async def kill(self) -> None:
        """Kill the process if it still runs."""
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        for task in (self.stdout_task, self.stderr_task):
            if task is not None and not task.done():
                task.cancel()


def main_py() -> list[str]:
    """Return the command line that starts ftdesk as a user would."""
    return [sys.executable, str(ROOT / "main.py")]
