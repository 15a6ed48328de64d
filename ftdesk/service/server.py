"""Run the aiohttp application on a real socket, and stop it without waiting on open streams."""

from __future__ import annotations

import errno
import logging

from aiohttp import web

from ftdesk.service.middleware import AccessLogger

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 2.0


class PortInUseError(Exception):
    """The configured port is taken by another process."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            f"port {port} on {host} is already in use "
            "(is ftdesk already running? set FTSERVICE_PORT to use another port)"
        )
        self.host = host
        self.port = port


class ServiceServer:
    """The listening socket and aiohttp runner of one application."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.bound_port: int | None = None

    async def start(self) -> None:
        """Bind and start serving; raise ``PortInUseError`` when the port is taken."""
        runner = web.AppRunner(
            self._app,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
            access_log_class=AccessLogger,
            access_log=logging.getLogger("ftdesk.access"),
        )
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            if exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
                raise PortInUseError(self._host, self._port) from None
            raise
        self._runner = runner
        server = site._server  # aiohttp exposes no public accessor for the bound sockets
        sockets = getattr(server, "sockets", None) or []
        self.bound_port = sockets[0].getsockname()[1] if sockets else self._port

    @property
    def url(self) -> str:
        """Return the base URL the server answers on."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.bound_port or self._port}"

    async def stop(self) -> None:
        """Stop serving: streams are closed by the app's shutdown hook, then the runner is cleaned up."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
