"""The Broker contract: what every brokerage behind ftdesk must be, whatever its upstream.

The broker as a whole: one object per capability group, each satisfying its protocol, and the quote feed.
Each group's behaviour has its own module (``test_<group>_contract.py``). Runs against each broker fixture
of ``conftest.py`` (paper, and the Fidelity adapter on its fake upstream servers); tests choose accounts and
symbols from the broker's own data, so no test knows which broker it is talking to.
"""

from __future__ import annotations

import asyncio

from ftdesk.brokers.base import AccountEventFeed, Broker, QuoteFeed
from ftdesk.brokers.capabilities import AccountsApi, MarketDataApi, OrdersApi, ResearchApi, SessionApi, UserDataApi
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.market import Quote


def test_the_broker_satisfies_the_protocols(broker: Broker) -> None:
    assert isinstance(broker, Broker)
    assert isinstance(broker.quote_feed, QuoteFeed)
    assert isinstance(broker.account_events, AccountEventFeed)
    assert broker.quote_feed.max_symbols_per_message <= 50


def test_each_capability_group_satisfies_its_protocol(broker: Broker) -> None:
    assert isinstance(broker.session, SessionApi)
    assert isinstance(broker.accounts, AccountsApi)
    assert isinstance(broker.orders, OrdersApi)
    assert isinstance(broker.market_data, MarketDataApi)
    assert isinstance(broker.research, ResearchApi)
    assert isinstance(broker.user_data, UserDataApi)


async def test_quote_feed_delivers_subscribed_symbols(
    broker: Broker, equity_position: tuple[Account, Position]
) -> None:
    _, position = equity_position
    connection = await broker.quote_feed.connect()
    try:
        await connection.subscribe([position.symbol])
        messages = connection.messages()
        quote = await asyncio.wait_for(anext(messages), 5)
        assert isinstance(quote, Quote) and quote.symbol == position.symbol and quote.bid <= quote.ask
    finally:
        await connection.close()
    snapshot = await broker.quote_feed.snapshot([position.symbol])
    assert [q.symbol for q in snapshot] == [position.symbol]
