"""BEPS with no FTSERVICE_BEPS_* set: the Fidelity broker configures it at login, renews its token, reconnects.

Real sockets (the fake Fidelity upstream, which plays the token endpoint, and the fake AppSync server behind
it); every delay on one manual clock shared by the broker, the hub and both fakes, so token lifetimes and
backoff are exact and no test depends on the date.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import SecretStr

from ftdesk.brokers.fidelity.beps import SUBSCRIPTION_DOCUMENT, BepsConfig
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.domain.session import Credentials
from ftdesk.streaming.event_consumer import EventConsumer, NumberedEvent
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.models import HubState
from tests.fakes.appsync_server import FakeAppSync
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_payloads import MEMBER_ID
from tests.fakes.fidelity_server import BEPS_TOKEN_PATH, FakeFidelity
from tests.fakes.stepping import advance_in_steps
from tests.fakes.waiting import wait_until

STATIC_TOKEN = "static-token-nobody-configured"
LIFETIME = 900.0
BACKOFF = (1.0, 2.0)


@dataclass
class Rig:
    clock: ManualClock
    appsync: FakeAppSync
    fidelity: FakeFidelity
    broker: FidelityBroker
    hub: AccountEventHub

    def token_fetches(self) -> int:
        return self.fidelity.hits_for(BEPS_TOKEN_PATH)

    def state(self) -> HubState:
        return self.hub.state

    async def live(self) -> None:
        await wait_until(lambda: self.appsync.subscribed() == 1 and self.state() is HubState.CONNECTED)


def beps_event(n: int) -> dict[str, Any]:
    return {"eventId": f"evt-{n}", "subscribeId": MEMBER_ID, "eventType": "MFCEX", "message": f"fill {n}"}


async def read(consumer: EventConsumer, count: int) -> list[NumberedEvent]:
    got: list[NumberedEvent] = []
    async with asyncio.timeout(5):
        while len(got) < count:
            got.extend(await consumer.get())
    return got


async def make_rig(beps: BepsConfig | None = None, style: str = "jwt") -> Rig:
    clock = ManualClock()
    # A keep-alive timeout longer than the token's life: these tests move the clock without "ka" messages.
    appsync = FakeAppSync(token=STATIC_TOKEN, connection_timeout_ms=3_600_000, clock=clock)
    fidelity = FakeFidelity(appsync=appsync, clock=clock)
    fidelity.beps_token_lifetime = LIFETIME
    fidelity.beps_token_style = style
    await appsync.start()
    await fidelity.start()
    broker = FidelityBroker(FidelityConfig(upstream=fidelity.base_url), clock, beps=beps)
    hub = AccountEventHub(broker.account_events, clock, backoff=BACKOFF, stable_after=10.0)
    await hub.start()
    return Rig(clock, appsync, fidelity, broker, hub)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = await make_rig()
    await made.broker.session.login(Credentials(username="trader", password=SecretStr("correct-horse")))
    try:
        yield made
    finally:
        await made.hub.close()
        await made.broker.close()
        await made.fidelity.close()
        await made.appsync.close()


async def test_login_alone_configures_beps_and_events_flow(rig: Rig) -> None:
    consumer, _ = rig.hub.open_consumer()
    assert rig.hub.unavailable_reason() is None  # nothing to set: the stream is offered at once

    rig.hub.set_session_active(True)
    await rig.live()

    assert rig.token_fetches() == 1
    session = rig.appsync.current
    assert session is not None and session.token in rig.appsync.issued  # the fetched token, not a setting
    (subscription,) = session.subscriptions.values()
    assert subscription.query == SUBSCRIPTION_DOCUMENT
    assert subscription.variables == {"subscribeId": MEMBER_ID, "consumerAppId": "ATN"}  # MID of the context
    assert await rig.appsync.push(beps_event(1)) == 1
    (got,) = await read(consumer, 1)
    assert (got.event.event_type, got.event.upstream_code) == ("ORDER_FILL", "MFCEX")
    assert got.event.desc["event_id"] == "evt-1"
    status = rig.hub.status()
    assert status.live is True and status.why_not is None
    assert status.detail is not None and "JWT exp" in status.detail


async def test_the_token_is_renewed_before_it_expires_without_losing_or_repeating_an_event(rig: Rig) -> None:
    consumer, _ = rig.hub.open_consumer()
    rig.hub.set_session_active(True)
    await rig.live()
    first = rig.appsync.current
    assert first is not None

    # The margin is a tenth of the lifetime (at least 60 s): renewal is due at 810 s of 900.
    await advance_in_steps(rig.clock, LIFETIME - 100, step=10.0)
    assert rig.token_fetches() == 1 and rig.appsync.current is first
    await advance_in_steps(rig.clock, 20, step=1.0)
    await wait_until(lambda: rig.token_fetches() == 2 and first.closed and rig.appsync.subscribed() == 1)

    second = rig.appsync.current
    assert second is not None and second is not first and second.token != first.token
    assert "stop" in first.types()  # the old subscription was stopped, not just dropped
    assert rig.state() is HubState.CONNECTED and rig.hub.status().reconnect_count == 0
    await advance_in_steps(rig.clock, 60, step=10.0)  # past the first token's expiry
    assert await rig.appsync.expire_sessions() == 0  # the live connection holds a fresh token
    assert await rig.appsync.push(beps_event(2)) == 1
    got = await read(consumer, 1)
    assert [item.event.desc["event_id"] for item in got] == ["evt-2"]
    assert rig.hub.status().live is True


async def test_a_dropped_connection_reconnects_with_a_token_still_fresh(rig: Rig) -> None:
    consumer, _ = rig.hub.open_consumer()
    rig.hub.set_session_active(True)
    await rig.live()
    first = rig.appsync.current

    await rig.appsync.kill()
    await wait_until(lambda: rig.state() is HubState.RECONNECTING)
    status = rig.hub.status()
    assert status.live is False
    assert status.why_not is not None and "closed the account-event connection" in status.why_not
    await advance_in_steps(rig.clock, BACKOFF[0] + 0.5)
    await rig.live()

    assert rig.appsync.current is not first
    assert rig.token_fetches() == 1  # the token was still good: no new fetch
    assert await rig.appsync.push(beps_event(3)) == 1
    (got,) = await read(consumer, 1)
    assert got.event.desc["event_id"] == "evt-3"


async def test_a_token_answer_of_unknown_shape_is_refused_with_a_reason_not_guessed() -> None:
    made = await make_rig(style="unknown")
    try:
        await made.broker.session.login(Credentials(username="trader", password=SecretStr("correct-horse")))
        made.hub.set_session_active(True)
        await wait_until(lambda: made.hub.last_error is not None)
        status = made.hub.status()
        assert status.live is False
        assert status.why_not is not None and "shape ftdesk does not know" in status.why_not
        assert "authz" in status.why_not and "FTSERVICE_BEPS_TOKEN" in status.why_not
        assert made.appsync.attempts == 0  # nothing was sent to BEPS with a guessed token
    finally:
        await made.hub.close()
        await made.broker.close()
        await made.fidelity.close()
        await made.appsync.close()


async def test_settings_override_the_parts_they_name() -> None:
    made = await make_rig(beps=BepsConfig(token=STATIC_TOKEN, mid="MID-FROM-SETTINGS"), style="json")
    try:
        await made.broker.session.login(Credentials(username="trader", password=SecretStr("correct-horse")))
        made.hub.set_session_active(True)
        await made.live()
        session = made.appsync.current
        assert session is not None and session.token == STATIC_TOKEN
        (subscription,) = session.subscriptions.values()
        assert subscription.variables["subscribeId"] == "MID-FROM-SETTINGS"
        assert made.token_fetches() == 0
        detail = made.hub.status().detail
        assert detail is not None and "FTSERVICE_BEPS_TOKEN" in detail and "FTSERVICE_BEPS_MID" in detail
        assert STATIC_TOKEN not in json.dumps(made.hub.status().model_dump(mode="json"))
    finally:
        await made.hub.close()
        await made.broker.close()
        await made.fidelity.close()
        await made.appsync.close()
