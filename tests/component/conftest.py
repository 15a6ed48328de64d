"""Fixtures of the Fidelity group tests: the fake upstream and a broker logged in to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import SecretStr

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.domain.session import Credentials
from tests.fakes.fidelity_server import FakeFidelity

FIDELITY_USER, FIDELITY_PASSWORD = "trader", "correct-horse-battery"


@asynccontextmanager
async def running_fake(**options: Any) -> AsyncIterator[FakeFidelity]:
    """Run the fake Fidelity upstream on a loopback port (``options`` as ``FakeFidelity`` takes them)."""
    server = FakeFidelity(username=FIDELITY_USER, password=FIDELITY_PASSWORD, **options)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakeFidelity]:
    """Start the fake Fidelity upstream on a loopback port."""
    async with running_fake() as server:
        yield server


@asynccontextmanager
async def logged_in(fake: FakeFidelity, **settings: Any) -> AsyncIterator[FidelityBroker]:
    """Run a Fidelity broker logged in to the fake, on the fake's clock (``settings`` as ``FidelityConfig`` takes)."""
    # The fake changes behind ftdesk's back: no answer reuse (read_share), or a test would read the old one.
    config = FidelityConfig(**{"upstream": fake.base_url, "request_timeout": 5.0, "read_share": 0.0, **settings})
    instance = FidelityBroker(config, fake.clock)
    await instance.start()
    try:
        await instance.session.login(Credentials(username=FIDELITY_USER, password=SecretStr(FIDELITY_PASSWORD)))
        yield instance
    finally:
        await instance.close()


@pytest.fixture
async def broker(fake: FakeFidelity) -> AsyncIterator[FidelityBroker]:
    """Return a Fidelity broker logged in to the fake, on the fake's clock."""
    async with logged_in(fake) as instance:
        yield instance
