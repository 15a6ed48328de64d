"""Brokers the contract suite runs against: paper now, the Fidelity adapter on fake upstreams later."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from ftdesk.brokers.base import Broker
from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain.session import Credentials
from tests.fakes.clock import ManualClock


@pytest.fixture
def credentials() -> Credentials:
    return Credentials(username="contract-trader", password=SecretStr("contract-password"))


@pytest.fixture(params=["paper"])
async def broker(request: pytest.FixtureRequest, tmp_path: Path, credentials: Credentials) -> AsyncIterator[Broker]:
    if request.param == "paper":
        instance = PaperBroker(PaperConfig(db_path=tmp_path / "paper.sqlite3", seed=20261121), ManualClock())
    await instance.start()
    await instance.login(credentials)
    try:
        yield instance
    finally:
        await instance.close()


@pytest.fixture
def optionable_symbol(broker: Broker) -> str:
    return "AAPL"
