"""The politeness layer through the real Fidelity client against the fake upstream, on a hand-driven clock.

Fake and broker share a ``ManualClock``: a call that waits for a budget or a backoff waits until the test
moves the clock, so "not delayed" is shown by a call finishing without the clock moving at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import SecretStr

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.domain import errors as e
from ftdesk.domain.research import NoteDraft, ScanDefinition
from ftdesk.domain.session import Credentials
from tests.fakes import fidelity_payloads as p
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_server import FakeFidelity

USER, PASSWORD = "trader", "correct-horse-battery"
POSITIONS = "/ftgw/dp/position/v2"
BALANCES = "/ftgw/dp/balance/detail/v2"
HOLIDAYS = "/ftgw/dpdirect/market/holidaycalendar/v1"
AUTOSUGGEST = "/ftgw/dpdirect/search/autosuggest/v1"
NOTE_CREATE = "/ftgw/dp/research/tool/notebook/note/create/v1"
SAML = "/ftgw/digital/rschwidgets/api/saml"
SCAN = "/DataService/ScannerServiceReference.asmx/ExecuteScan"


class WatchedClock(ManualClock):
    """A manual clock that lets a test wait until someone sleeps on it (an event, not a poll)."""

    def __init__(self) -> None:
        super().__init__()
        self._slept = asyncio.Event()
        self.requested: list[float] = []  # every sleep asked for, in seconds

    async def sleep(self, seconds: float) -> None:
        """Sleep as ``ManualClock`` does, telling ``sleeping()`` and ``asked_to_sleep()`` about it."""
        self.requested.append(seconds)
        self._slept.set()
        await super().sleep(seconds)

    async def asked_to_sleep(self, low: float, high: float) -> None:
        """Return once someone has asked to sleep between ``low`` and ``high`` seconds."""
        while not any(low <= seconds <= high for seconds in self.requested):
            self._slept.clear()
            await self._slept.wait()

    async def sleeping(self, more_than: int = 0) -> None:
        """Return once more than ``more_than`` coroutines sleep on this clock."""
        while self.sleeper_count <= more_than:
            self._slept.clear()
            await self._slept.wait()


@pytest.fixture
def clock() -> WatchedClock:
    return WatchedClock()


@pytest.fixture
async def fake(clock: WatchedClock) -> AsyncIterator[FakeFidelity]:
    server = FakeFidelity(username=USER, password=PASSWORD, clock=clock)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def make_broker(fake: FakeFidelity, clock: WatchedClock) -> AsyncIterator[Callable[..., FidelityBroker]]:
    made: list[FidelityBroker] = []

    def build(**config: Any) -> FidelityBroker:
        broker = FidelityBroker(FidelityConfig(upstream=fake.base_url, request_timeout=5.0, **config), clock)
        made.append(broker)
        return broker

    yield build
    for broker in made:
        await broker.close()


@pytest.fixture
async def broker(make_broker: Callable[..., FidelityBroker]) -> FidelityBroker:
    instance = make_broker()
    await instance.session.login(credentials())
    return instance


def credentials(password: str = PASSWORD) -> Credentials:
    return Credentials(username=USER, password=SecretStr(password))


async def test_a_tight_read_loop_never_waits_while_the_upstream_has_not_complained(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    async with asyncio.timeout(20):  # the clock never moves: any wait for a budget would hang here
        for _ in range(300):
            assert len(await broker.accounts.get_positions(p.MARGIN)) == 3
    assert fake.hits[POSITIONS] == 300


async def test_a_read_answered_429_is_retried_after_its_retry_after(
    broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    fake.push_back(POSITIONS, 429, retry_after=2)
    read = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    await clock.sleeping()
    await clock.advance(1.9)
    assert not read.done() and fake.hits[POSITIONS] == 1  # Retry-After is honoured, not cut short
    while not read.done():
        await clock.advance(0.5)
    assert len(await read) == 3
    assert fake.hits[POSITIONS] == 2


async def test_502_503_504_and_a_cut_connection_are_retried_with_backoff(
    broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    for status in (502, 0, 504):
        fake.push_back(POSITIONS, status)
    read = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    while not read.done():
        await clock.sleeping()
        await clock.advance(1.0)  # the jittered backoff is at most 0.25, 0.5, then 1 s
    assert len(await read) == 3
    assert fake.hits[POSITIONS] == 4


async def test_a_read_whose_retries_run_out_answers_upstream_busy(
    broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    fake.push_back(BALANCES, 503, times=10)
    read = asyncio.create_task(broker.accounts.get_balances(p.MARGIN))
    while not read.done():
        await clock.sleeping()
        await clock.advance(5.0)
    with pytest.raises(e.BrokerError, match=r"busy or unreachable.*HTTP 503.*after 4 attempts") as caught:
        await read
    assert caught.value.details["reason"] == "UPSTREAM_BUSY"
    assert caught.value.details["upstream_status"] == 503 and caught.value.details["attempts"] == 4
    assert fake.hits[BALANCES] == 4  # the initial call and FTSERVICE_FIDELITY_READ_RETRIES=3


async def test_a_retry_after_past_the_read_budget_fails_at_once_instead_of_hanging(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    fake.push_back(POSITIONS, 429, retry_after=60)
    async with asyncio.timeout(5):  # the clock never moves
        with pytest.raises(e.BrokerError) as caught:
            await broker.accounts.get_positions(p.MARGIN)
        assert caught.value.details["reason"] == "UPSTREAM_BUSY" and caught.value.details["retry_after"] >= 60
        # Other reads respect the pause too, and say so at once rather than wait past their budget.
        with pytest.raises(e.BrokerError, match="slow down") as later:
            await broker.accounts.get_balances(p.MARGIN)
    assert later.value.details["reason"] == "UPSTREAM_BUSY"
    assert fake.hits[POSITIONS] == 1 and fake.hits[BALANCES] == 0


async def test_a_write_answered_429_or_cut_off_is_never_retried(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.push_back(NOTE_CREATE, 429, retry_after=1)
    async with asyncio.timeout(5):
        with pytest.raises(e.BrokerError, match="never sends a write twice") as caught:
            await broker.research.create_note(NoteDraft(note="n", symbol="SPY", title="t"))
        assert caught.value.details["upstream_status"] == 429 and caught.value.details["retried"] is False
        fake.push_back(NOTE_CREATE, 0)
        with pytest.raises(e.BrokerError, match="Cannot reach Fidelity"):
            await broker.research.create_note(NoteDraft(note="n", symbol="SPY", title="t"))
    assert fake.hits[NOTE_CREATE] == 2


async def test_pushback_slows_reads_then_they_recover_and_writes_never_wait_behind_them(
    broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    for _ in range(20):
        await broker.accounts.get_positions(p.MARGIN)
    fake.push_back(POSITIONS, 429, retry_after=1)
    first = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    await clock.sleeping()
    budget = broker.politeness.reads
    assert budget.rate is not None and budget.pushbacks == 1
    # A different read waits for the pause as well ...
    other = asyncio.create_task(broker.accounts.get_balances(p.MARGIN))
    for _ in range(20):
        await asyncio.sleep(0)
    assert fake.hits[BALANCES] == 0
    # ... while a write goes out at once.
    async with asyncio.timeout(5):
        await broker.research.create_note(NoteDraft(note="n", symbol="SPY", title="t"))
    while not (first.done() and other.done()):
        await clock.advance(0.5)
    assert len(await first) == 3 and (await other).acct_num == p.MARGIN
    # No more pushback: the limit climbs back and is lifted, and a tight loop runs free again.
    await clock.advance(60)
    assert budget.rate is None
    async with asyncio.timeout(10):
        for _ in range(50):
            await broker.accounts.get_positions(p.MARGIN)


async def test_logins_over_the_budget_are_refused_at_once_with_the_wait(
    make_broker: Callable[..., FidelityBroker], fake: FakeFidelity, clock: WatchedClock
) -> None:
    broker = make_broker(login_per_minute=3)
    async with asyncio.timeout(10):
        for _ in range(3):
            await broker.session.login(credentials())
        with pytest.raises(e.BrokerError, match="logged in to Fidelity 3 times in the last minute") as caught:
            await broker.session.login(credentials())
    assert caught.value.details == {"reason": "LOGIN_RATE_LIMITED", "retry_after": 20.0}
    assert fake.logins == 3 and broker.cookies()  # the refused login left the live session alone
    await clock.advance(20)
    await broker.session.login(credentials())
    assert fake.logins == 4


async def test_reference_data_is_served_from_the_cache_while_fresh(
    make_broker: Callable[..., FidelityBroker], broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    first = await broker.market_data.get_holiday_calendar(None)
    assert await broker.market_data.get_holiday_calendar(None) == first
    assert fake.hits[HOLIDAYS] == 1
    await broker.research.search_symbols("AA")
    await broker.research.search_symbols("AA")
    await broker.research.search_symbols("MS")
    assert fake.hits[AUTOSUGGEST] == 2  # per query
    await clock.advance(600)
    await broker.research.search_symbols("AA")
    await broker.market_data.get_holiday_calendar(None)
    assert fake.hits[AUTOSUGGEST] == 3 and fake.hits[HOLIDAYS] == 1  # 10 minutes vs 12 hours
    await broker.accounts.get_positions(p.MARGIN)
    await broker.accounts.get_positions(p.MARGIN)
    assert fake.hits[POSITIONS] == 2  # account data is never cached
    await broker.session.login(credentials())
    await broker.market_data.get_holiday_calendar(None)
    assert fake.hits[HOLIDAYS] == 2  # a new login starts empty


async def test_the_screener_token_is_reused_until_it_expires(
    broker: FidelityBroker, fake: FakeFidelity, clock: WatchedClock
) -> None:
    for _ in range(3):
        assert (await broker.research.run_screener(ScanDefinition(limit=2))).rows
    assert fake.hits[SAML] == 1 and fake.hits[SCAN] == 3  # one sign-in, three scans
    await clock.advance(3600 - 60)  # the fake's token lives an hour: within a minute of expiry it is renewed
    await broker.research.run_screener(ScanDefinition(limit=2))
    assert fake.hits[SAML] == 2
    fake.research.tokens.clear()  # LiveVol forgets the token early: fetched again once, and the scan runs
    assert (await broker.research.run_screener(ScanDefinition(limit=2))).rows
    assert fake.hits[SAML] == 3 and fake.hits[SCAN] == 6


async def test_without_live_account_events_a_slow_answer_is_not_reused(
    make_broker: Callable[..., FidelityBroker], fake: FakeFidelity, clock: WatchedClock
) -> None:
    broker = make_broker(read_share=1.0)  # a window, but no account-event stream runs to prove answers current
    await broker.session.login(credentials())
    before = fake.hits[POSITIONS]
    fake.hold(POSITIONS)
    read = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    async with asyncio.timeout(5):
        while fake.hits[POSITIONS] == before:  # noqa: ASYNC110 - the fake has no arrival event
            await asyncio.sleep(0.001)
    await clock.advance(0.4)  # the upstream takes this long: far enough to keep answers, were events live
    fake.release(POSITIONS)
    await read
    assert not broker.event_watch.live

    await clock.advance(0.1)
    await broker.accounts.get_positions(p.MARGIN)
    assert fake.hits[POSITIONS] == before + 2  # asked again: nothing proves the first answer still current
