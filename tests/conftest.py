"""Shared fixtures: settings in a temp data dir, an in-memory keyring, and a service on a real socket."""

from __future__ import annotations

import os

# Qt must never look for a display in tests, and subprocesses must never touch the real keychain.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.config import Settings, load_settings
from ftdesk.domain.clock import SystemClock
from ftdesk.service.context import ServiceContext
from ftdesk.service.keys import KeySource
from ftdesk.service.routes import route_tables
from ftdesk.service.routing import RouteTable
from ftdesk.service.server import ServiceServer
from ftdesk.service.streams import StreamRegistry
from ftdesk.service.webapp import create_web_app
from tests.fakes.keyring import InMemoryKeyring

TEST_API_KEY = "test-api-key-0123456789abcdef"


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Build Settings from FTSERVICE_* values, with a temp data dir and an ephemeral port."""

    def build(**env: str) -> Settings:
        environ = {"FTSERVICE_DATA_DIR": str(tmp_path / "data"), "FTSERVICE_PORT": "0"}
        environ.update({k if k.startswith("FTSERVICE_") else f"FTSERVICE_{k.upper()}": v for k, v in env.items()})
        return load_settings(environ)

    return build


@pytest.fixture
def memory_keyring() -> InMemoryKeyring:
    """Return a fresh in-memory keychain."""
    return InMemoryKeyring()


@dataclass
class RunningService:
    """A service on a real loopback socket and a client session for it."""

    base_url: str
    api_key: str
    http: aiohttp.ClientSession
    context: ServiceContext

    def url(self, path: str) -> str:
        """Return the absolute URL of a path."""
        return self.base_url + path

    @property
    def auth(self) -> dict[str, str]:
        """Return the Authorization header with the right key."""
        return {"Authorization": f"Bearer {self.api_key}"}


@pytest.fixture
async def start_service(make_settings: Callable[..., Settings]) -> AsyncIterator[Callable[..., object]]:
    """Start the web app on 127.0.0.1:<free port> with the given settings and extra route tables."""
    started: list[tuple[ServiceServer, aiohttp.ClientSession]] = []
    brokers: list[PaperBroker] = []

    async def start(*, extra_tables: list[RouteTable] | None = None, **env: str) -> RunningService:
        settings = make_settings(**env)
        broker = PaperBroker(PaperConfig(db_path=settings.data_dir / "paper.sqlite3", seed=1), SystemClock())
        brokers.append(broker)
        context = ServiceContext(
            settings=settings,
            api_key=TEST_API_KEY,
            key_source=KeySource.ENVIRONMENT,
            clock=SystemClock(),
            version="test",
            broker=broker,
            streams=StreamRegistry(),
            started_monotonic=SystemClock().monotonic(),
        )
        app = create_web_app(context, route_tables() + (extra_tables or []))
        server = ServiceServer(app, "127.0.0.1", 0)
        await server.start()
        http = aiohttp.ClientSession()
        started.append((server, http))
        return RunningService(base_url=server.url, api_key=TEST_API_KEY, http=http, context=context)

    yield start
    for server, http in started:
        await http.close()
        await server.stop()
    for broker in brokers:
        await broker.close()
