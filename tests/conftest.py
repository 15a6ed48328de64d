"""Shared fixtures: settings in a temp data dir, an in-memory keyring, and a service on a real socket."""

from __future__ import annotations

import os

# Qt must never look for a display in tests, and subprocesses must never touch the real keychain.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from ftdesk.app import ServiceRuntime
from ftdesk.config import Settings, load_settings
from ftdesk.domain.clock import Clock
from ftdesk.logs import ACCESS_LOGGER, SecretRedactor
from ftdesk.service.context import ServiceContext
from ftdesk.service.push.state import StreamingOptions
from ftdesk.service.web.routing import RouteTable
from tests.fakes.keyring import InMemoryKeyring

TEST_API_KEY = "test-api-key-0123456789abcdef"
# The local risk limits (docs/safety.md) are off for tests about something else, which place far limits and big
# orders on purpose; the safety tests turn each one on.
LIMITS_OFF = {
    f"FTSERVICE_{name.upper()}": "off"
    for name in (
        "max_equity_qty",
        "max_equity_notional",
        "max_option_contracts",
        "max_option_notional",
        "max_price_distance_pct",
        "max_orders_per_minute",
        "max_open_orders",
    )
}


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Build Settings from FTSERVICE_* values, with a temp data dir and an ephemeral port."""

    def build(**env: str) -> Settings:
        environ = {"FTSERVICE_DATA_DIR": str(tmp_path / "data"), "FTSERVICE_PORT": "0", **LIMITS_OFF}
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
    runtime: ServiceRuntime

    @property
    def context(self) -> ServiceContext:
        """Return the running service's context."""
        assert self.runtime.context is not None
        return self.runtime.context

    def url(self, path: str) -> str:
        """Return the absolute URL of a path."""
        return self.base_url + path

    @property
    def auth(self) -> dict[str, str]:
        """Return the Authorization header with the right key."""
        return {"Authorization": f"Bearer {self.api_key}"}

    async def call(self, method: str, path: str, **kwargs: object) -> tuple[int, dict]:
        """Send an authenticated request and return the status and the JSON envelope."""
        headers = {**self.auth, **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        async with self.http.request(method, self.url(path), headers=headers, **kwargs) as response:  # type: ignore[arg-type]
            return response.status, await response.json()

    async def login(self, username: str = "trader", password: str = "paper-pass", **extra: object) -> dict:
        """Log in through the API and return the data of the answer."""
        status, body = await self.call(
            "POST", "/api/v1/auth/login", json={"username": username, "password": password, **extra}
        )
        assert status == 200, body
        return body["data"]


@pytest.fixture
def stream_options() -> StreamingOptions:
    """Return the streaming options ``start_service`` builds services with (a test module may override it)."""
    return StreamingOptions()


@pytest.fixture
async def start_service(
    make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring, stream_options: StreamingOptions
) -> AsyncIterator[Callable[..., object]]:
    """Start the real service runtime on 127.0.0.1:<free port> (paper broker, in-memory keychain)."""
    started: list[tuple[ServiceRuntime, aiohttp.ClientSession]] = []

    async def start(
        *,
        extra_tables: list[RouteTable] | None = None,
        clock: Clock | None = None,
        streaming: StreamingOptions | None = None,
        **env: str,
    ) -> RunningService:
        env.setdefault("FTSERVICE_API_KEY", TEST_API_KEY)
        env.setdefault("FTSERVICE_PAPER_SEED", "20261121")
        settings = make_settings(**env)
        runtime = ServiceRuntime(
            settings,
            clock=clock,
            keyring_backend=memory_keyring,
            redactor=SecretRedactor(),
            extra_tables=extra_tables,
            streaming=streaming or stream_options,
        )
        await runtime.start()
        http = aiohttp.ClientSession()
        started.append((runtime, http))
        return RunningService(base_url=runtime.url, api_key=TEST_API_KEY, http=http, runtime=runtime)

    yield start
    for runtime, http in started:
        await http.close()
        await runtime.stop()


@pytest.fixture
def configured_logging() -> Iterator[None]:
    """Let a test configure logging as ``main()`` does, and put the process's logging back afterwards."""
    root, access = logging.getLogger(), logging.getLogger(ACCESS_LOGGER)
    saved = (root.level, list(root.handlers), list(access.handlers), access.propagate)
    yield
    for logger in (root, access):
        for handler in list(logger.handlers):
            if getattr(handler, "_ftdesk", False):
                logger.removeHandler(handler)
                handler.close()
    root.setLevel(saved[0])
    root.handlers[:], access.handlers[:], access.propagate = saved[1], saved[2], saved[3]
