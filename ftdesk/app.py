"""The composition root: settings -> broker -> service -> server; headless or (later) with the tray.

This is the only module that imports concrete brokers, the server and the GUI. ``run_headless`` never
imports Qt, so the whole service runs on a machine without a display.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from keyring.backend import KeyringBackend

from ftdesk import __version__
from ftdesk.config import SETTINGS, ConfigError, Settings, load_settings
from ftdesk.domain.clock import Clock, SystemClock
from ftdesk.logs import SecretRedactor, configure_logging
from ftdesk.service.context import ServiceContext
from ftdesk.service.keys import ApiKeyStore, SecretVault
from ftdesk.service.server import PortInUseError, ServiceServer
from ftdesk.service.streams import StreamRegistry
from ftdesk.service.webapp import create_web_app

log = logging.getLogger("ftdesk")


def system_keyring() -> KeyringBackend | None:
    """Return the OS keychain backend keyring selects, or None when it cannot be loaded."""
    try:
        import keyring

        backend: KeyringBackend = keyring.get_keyring()
    except Exception:  # a broken keyring installation must not stop the service
        return None
    return backend


def settings_redactor(settings: Settings) -> SecretRedactor:
    """Return a log filter that masks every secret setting."""
    return SecretRedactor(getattr(settings, spec.name) for spec in SETTINGS if spec.secret)


class ServiceRuntime:
    """The running service: one object the headless runner and the tray start and stop alike."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        keyring_backend: KeyringBackend | None = None,
        redactor: SecretRedactor | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.redactor = redactor or settings_redactor(settings)
        self._keyring_backend = keyring_backend
        self.server: ServiceServer | None = None
        self.context: ServiceContext | None = None

    async def start(self) -> None:
        """Load the API key, build the app and bind the port (``PortInUseError`` if taken)."""
        settings = self.settings
        vault = SecretVault(self._keyring_backend)
        key_store = ApiKeyStore(vault, settings.data_dir, settings.api_key)
        # keyring may talk to D-Bus and the fallback touches the disk: keep both off the event loop.
        api_key, key_source = await asyncio.to_thread(key_store.load_or_create)
        self.redactor.add(api_key)
        self.context = ServiceContext(
            settings=settings,
            api_key=api_key,
            key_source=key_source,
            clock=self.clock,
            version=__version__,
            broker_name=settings.broker,
            streams=StreamRegistry(),
            started_monotonic=self.clock.monotonic(),
        )
        app = create_web_app(self.context)
        self.server = ServiceServer(app, settings.host, settings.port)
        await self.server.start()

    @property
    def url(self) -> str:
        """Return the base URL of the running service."""
        if self.server is None:
            return self.settings.base_url
        return self.server.url

    async def stop(self) -> None:
        """Close streams, stop the server and release everything; idempotent."""
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()


def _install_stop_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for signame in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, signame, None)
        if sig is None:
            continue
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows: no add_signal_handler
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))


async def serve_until_stopped(settings: Settings, redactor: SecretRedactor) -> int:
    """Serve until SIGINT or SIGTERM, then shut down cleanly; return the exit code."""
    stop = asyncio.Event()
    _install_stop_signals(asyncio.get_running_loop(), stop)
    backend = await asyncio.to_thread(system_keyring)
    runtime = ServiceRuntime(settings, keyring_backend=backend, redactor=redactor)
    try:
        await runtime.start()
    except PortInUseError as exc:
        print(f"ftdesk: {exc}", file=sys.stderr, flush=True)
        return 1
    mode = "LIVE TRADING" if settings.live_trading else "dry-run"
    print(
        f"ftdesk {__version__} serving {runtime.url}/api/v1 (broker: {settings.broker}, {mode}); "
        f"docs: {runtime.url}/docs",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        log.info("Shutting down")
        await runtime.stop()
    return 0


def run_headless(settings: Settings, redactor: SecretRedactor) -> int:
    """Run the service on a plain asyncio loop (no Qt import) until a stop signal."""
    return asyncio.run(serve_until_stopped(settings, redactor))


def print_api_key(settings: Settings) -> int:
    """Print the API key (creating it on first use) for scripts."""
    store = ApiKeyStore(SecretVault(system_keyring()), settings.data_dir, settings.api_key)
    key, _source = store.load_or_create()
    print(key)
    return 0


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ftdesk",
        description="Your brokerage account behind a local REST, SSE and WebSocket API on 127.0.0.1:8787.",
        epilog="Settings come from FTSERVICE_* environment variables and settings.json in the data dir "
        "(see the README).",
    )
    parser.add_argument("--headless", action="store_true", help="serve the API without the tray (no display needed)")
    parser.add_argument("--print-api-key", action="store_true", help="print the API key and exit")
    parser.add_argument("--version", action="version", version=f"ftdesk {__version__}")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Start ftdesk from the command line; return the process exit code."""
    args = _parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"ftdesk: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.print_api_key:
        return print_api_key(settings)
    redactor = settings_redactor(settings)
    configure_logging(settings.log_level, settings.data_dir / "logs", redactor)
    if not args.headless:
        print("ftdesk: the tray app is not part of this build yet; serving headless", file=sys.stderr, flush=True)
    return run_headless(settings, redactor)


if __name__ == "__main__":
    sys.exit(main())
