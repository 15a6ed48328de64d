"""The desktop app on a real service (paper broker, loopback port, in-memory keychain) for GUI tests.

``make_desktop`` (tests/gui/conftest.py) builds a ``Desktop``: the ``DesktopApp`` the tray runs, the
environment its settings come from (so a restart reloads the same way), and an HTTP client for the API.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices

from ftdesk.app import ServiceRuntime
from ftdesk.config import Settings, load_settings
from ftdesk.domain.clock import Clock
from ftdesk.gui.application import DesktopApp
from ftdesk.gui.bridge import ServiceBridge
from ftdesk.logs import SecretRedactor
from ftdesk.service.control import ServiceControl
from ftdesk.service.first_run import record_welcome_shown
from ftdesk.service.routes.app_window import DesktopWindow
from tests.conftest import TEST_API_KEY
from tests.fakes.keyring import InMemoryKeyring

POLL_MS = 20
"""The bridge's poll interval in tests: state changes show within a few loop turns."""


@dataclass
class Desktop:
    """A started desktop app and a client for its API."""

    app: DesktopApp
    environ: dict[str, str]
    http: aiohttp.ClientSession
    runtimes: list[ServiceRuntime] = field(default_factory=list)

    @property
    def bridge(self) -> ServiceBridge:
        """Return the app's bridge."""
        return self.app.bridge

    @property
    def runtime(self) -> ServiceRuntime:
        """Return the service runtime running now."""
        return self.runtimes[-1]

    @property
    def api_key(self) -> str:
        """Return the API key the running service requires."""
        context = self.runtime.context
        assert context is not None
        return context.api_key

    def settings(self) -> Settings:
        """Load the settings the way the app reloads them."""
        return load_settings(self.environ)

    async def call(self, method: str, path: str, *, key: str | None = None, **kwargs: Any) -> tuple[int, dict]:
        """Send a request with the API key (or the one given) and return the status and the envelope."""
        headers = {"Authorization": f"Bearer {key or self.api_key}"}
        async with self.http.request(method, self.runtime.url + path, headers=headers, **kwargs) as response:
            return response.status, await response.json()


class DesktopRig:
    """Builds desktop apps in a temp data dir and stops them all at the end of the test."""

    def __init__(self, tmp_path: Path, keyring: InMemoryKeyring) -> None:
        self._tmp_path = tmp_path
        self._keyring = keyring
        self._desktops: list[Desktop] = []

    async def build(
        self,
        *,
        has_tray: bool = True,
        start: bool = True,
        clock: Clock | None = None,
        settings_file: dict[str, Any] | None = None,
        welcome_seen: bool = True,
        pnl_refresh_ms: int = 3_600_000,
        **env: str,
    ) -> Desktop:
        """Build (and start) a desktop app; env holds FTSERVICE_* values (FTSERVICE_API_KEY='' unsets it).

        ``settings_file`` is written to settings.json first (a value there can be changed and restarted,
        unlike one fixed by the environment). ``welcome_seen`` writes the welcome mark first, as on every
        start after the first; with False the data dir is left as it is (a fresh one: a first start).
        ``pnl_refresh_ms`` is the cockpit's slow P&L poll: an hour by default, so what a test sees in the
        cockpit arrives through the account events.
        """
        data_dir = self._tmp_path / "data"
        if settings_file is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            (data_dir / "settings.json").write_text(json.dumps(settings_file))
        if welcome_seen:
            record_welcome_shown(data_dir)
        environ = {
            "FTSERVICE_DATA_DIR": str(self._tmp_path / "data"),
            "FTSERVICE_PORT": "0",
            "FTSERVICE_PAPER_SEED": "20261121",
            "FTSERVICE_API_KEY": TEST_API_KEY,
        }
        environ.update(env)
        environ = {name: value for name, value in environ.items() if value != ""}
        runtimes: list[ServiceRuntime] = []

        def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
            runtime = ServiceRuntime(
                settings, clock=clock, keyring_backend=self._keyring, redactor=SecretRedactor(), window=window
            )
            runtimes.append(runtime)
            return runtime

        control = ServiceControl(load_settings(environ), make_runtime, reload_settings=lambda: load_settings(environ))
        app = DesktopApp(control, has_tray=has_tray, poll_interval_ms=POLL_MS, pnl_refresh_ms=pnl_refresh_ms)
        desktop = Desktop(app, environ, aiohttp.ClientSession(), runtimes)
        self._desktops.append(desktop)
        if start:
            await app.start()
        return desktop

    async def close(self) -> None:
        """Stop every app built here."""
        for desktop in self._desktops:
            await desktop.http.close()
            with contextlib.suppress(RuntimeError):  # a test may have shut it down already
                await desktop.app.shutdown()
            for runtime in desktop.runtimes:
                await runtime.stop()
            desktop.app.window.deleteLater()


class UrlRecorder(QObject):
    """Stands in for the browser and the file manager: QDesktopServices hands it every URL it opens."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        """Receive a URL that QDesktopServices.openUrl was asked to open."""
        self.urls.append(url)

    def install(self) -> None:
        """Route http and file URLs here instead of to the desktop."""
        for scheme in ("http", "file"):
            QDesktopServices.setUrlHandler(scheme, self, "open")

    def uninstall(self) -> None:
        """Give the schemes back to the desktop."""
        for scheme in ("http", "file"):
            QDesktopServices.unsetUrlHandler(scheme)
