"""Brokers the contract suite runs against: paper, and the Fidelity adapter on its fake upstream servers.

Each test module covers one capability group and takes that group's object from a fixture here (``accounts``,
``orders``, ...), so a test sees only the group it checks, on either broker.

Both run on clocks that start at ``ANCHOR`` (paper's stands still, Fidelity's runs from it in real time), so
``today`` is the same for either and for the tests, whatever day the suite runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import SecretStr

from ftdesk.brokers.base import Broker
from ftdesk.brokers.capabilities import AccountsApi, MarketDataApi, OrdersApi, ResearchApi, SessionApi, UserDataApi
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain.accounts import Account, Position, SecurityType
from ftdesk.domain.session import Credentials
from tests.fakes.clock import ANCHOR, AnchoredClock, ManualClock
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds


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
        fake = FakeFidelity(username=credentials.username, password=password, mdds=FakeMdds(), clock=AnchoredClock())
        await fake.start()
        # The fake changes behind ftdesk's back: no answer reuse (read_share), or a test would read the old one.
        config = FidelityConfig(upstream=fake.base_url, request_timeout=5.0, read_share=0.0)
        instance = FidelityBroker(config, fake.clock)
    await instance.start()
    await instance.session.login(credentials)
    try:
        yield instance
    finally:
        await instance.close()
        if fake is not None:
            if fake.mdds is not None:
                await fake.mdds.kill()
            await fake.close()


@pytest.fixture
def today() -> date:
    """Return the New York day both brokers' clocks are on."""
    return ANCHOR.astimezone(ZoneInfo("America/New_York")).date()


@pytest.fixture
def optionable_symbol(broker: Broker) -> str:
    return "AAPL"


@pytest.fixture
def session(broker: Broker) -> SessionApi:
    return broker.session


@pytest.fixture
def accounts(broker: Broker) -> AccountsApi:
    return broker.accounts


@pytest.fixture
def orders(broker: Broker) -> OrdersApi:
    return broker.orders


@pytest.fixture
def market_data(broker: Broker) -> MarketDataApi:
    return broker.market_data


@pytest.fixture
def research(broker: Broker) -> ResearchApi:
    return broker.research


@pytest.fixture
def user_data(broker: Broker) -> UserDataApi:
    return broker.user_data


@pytest.fixture
async def equity_position(accounts: AccountsApi) -> tuple[Account, Position]:
    """Return an account and an equity (or ETF) position it holds, chosen from the broker's own data."""
    for account in await accounts.get_accounts():
        for position in await accounts.get_positions(account.acct_num):
            if position.security_type in (SecurityType.EQUITY, SecurityType.ETF) and position.quantity > 0:
                return account, position
    pytest.fail("the broker's accounts hold no equity position to test with")
