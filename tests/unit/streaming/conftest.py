"""Fixtures of the quote-hub tests: a rig factory that closes every hub it made."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from ftdesk.brokers.base import QuoteFeed
from tests.fakes.clock import ManualClock
from tests.fakes.quote_feed import FakeQuoteFeed
from tests.unit.streaming.helpers import Rig, settle

MakeRig = Callable[..., Coroutine[Any, Any, Rig]]


@pytest.fixture
async def make_rig() -> AsyncIterator[MakeRig]:
    """Build and start a hub (fake feed unless one is given); options go to QuoteHub or FakeQuoteFeed."""
    rigs: list[Rig] = []

    async def build(
        *,
        feed: QuoteFeed | None = None,
        clock: ManualClock | None = None,
        feed_options: dict[str, Any] | None = None,
        **hub_options: Any,
    ) -> Rig:
        clock = clock or ManualClock()
        rig = Rig(feed or FakeQuoteFeed(clock, **(feed_options or {})), clock, **hub_options)
        await rig.hub.start()
        await settle()
        rigs.append(rig)
        return rig

    yield build
    for rig in rigs:
        await rig.hub.close()
        await settle()
        assert rig.clock.sleeper_count == 0, "the hub left a task sleeping after close()"
