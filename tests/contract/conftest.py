"""Brokers the contract suite runs against: paper, and the Fidelity adapter on its fake upstream servers.

The Fidelity adapter implements session, accounts/portfolio and MDDS quotes so far; the contract tests of
the other groups are skipped for it (not xfailed: some would pass for the wrong reason, since a
"not implemented" BrokerError satisfies a test that expects a refusal).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from ftdesk.brokers.base import Broker
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain.clock import SystemClock
from ftdesk.domain.session import Credentials
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

# Contract tests that need a Fidelity group a later session adds (issue 7), and what it is.
FIDELITY_NOT_YET = {
    "test_a_resting_limit_order_lives_through_preview_place_status_and_cancel": "orders module",
    "test_place_without_a_matching_preview_is_refused": "orders module",
    "test_market_data_for_a_held_symbol": "market-data REST module",
    "test_option_chain_and_analytics": "market-data REST and research modules",
    "test_research_calendars_search_and_screener": "research and user-data modules",
    "test_notebook_crud": "research module (notebook)",
    "test_watchlists_preferences_and_price_triggers": "user-data module",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip, for the Fidelity broker only, the contract tests of groups it does not implement yet."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = getattr(item, "originalname", item.name)
        if callspec is not None and callspec.params.get("broker") == "fidelity" and name in FIDELITY_NOT_YET:
            item.add_marker(pytest.mark.skip(reason=f"Fidelity {FIDELITY_NOT_YET[name]} not implemented yet"))


@pytest.fixture
def credentials() -> Credentials:
    return Credentials(username="contract-trader", password=SecretStr("contract-password"))


@pytest.fixture(params=["paper", "fidelity"])
async def broker(request: pytest.FixtureRequest, tmp_path: Path, credentials: Credentials) -> AsyncIterator[Broker]:
    fake: FakeFidelity | None = None
    instance: Broker
    if request.param == "paper":
        instance = PaperBroker(PaperConfig(db_path=tmp_path / "paper.sqlite3", seed=20261121), ManualClock())
    else:
        password = credentials.password.get_secret_value()
        fake = FakeFidelity(username=credentials.username, password=password, mdds=FakeMdds())
        await fake.start()
        config = FidelityConfig(upstream=fake.base_url, request_timeout=5.0, rate_per_second=1000.0, burst=1000)
        instance = FidelityBroker(config, SystemClock())
    await instance.start()
    await instance.login(credentials)
    try:
        yield instance
    finally:
        await instance.close()
        if fake is not None:
            if fake.mdds is not None:
                await fake.mdds.kill()
            await fake.close()


@pytest.fixture
def optionable_symbol(broker: Broker) -> str:
    return "AAPL"
