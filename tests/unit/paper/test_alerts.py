"""Price alerts: creation rules, firing once on a crossing, the PRICE_ALERT_ABOVE/BELOW events, persistence."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from ftdesk.brokers.paper.alerts import ALERTS_SCHEMA, PriceAlerts
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.errors import NotFound, ValidationFailed
from ftdesk.domain.events import AccountEvent, EventCategory
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerDirection, TriggerStatus
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket

ABOVE, BELOW = TriggerDirection.ABOVE, TriggerDirection.BELOW


class World:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = ManualClock()
        self.market = ScriptedMarket(self.clock)
        self.market.add_equity("AAPL", 190.00)
        self.market.add_equity("TSLA", 250.00)
        self.events: list[AccountEvent] = []
        self.store = PaperStore(path, [ALERTS_SCHEMA])
        self.store.open()
        self.alerts = self._alerts()

    def _alerts(self) -> PriceAlerts:
        return PriceAlerts(self.store, self.market, self.clock, self.events.append, random.Random(3))

    def reopen(self) -> PriceAlerts:
        self.store.close()
        self.store = PaperStore(self.path, [ALERTS_SCHEMA])
        self.store.open()
        self.alerts = self._alerts()
        return self.alerts


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path / "paper.db")
    yield w
    w.store.close()


def test_create_returns_an_active_trigger(world: World) -> None:
    trigger = world.alerts.create(PriceTriggerDraft(symbol="aapl", direction=ABOVE, price=200.5, note="breakout"))
    assert trigger.trigger_id
    assert (trigger.symbol, trigger.direction, trigger.price, trigger.note) == ("AAPL", ABOVE, 200.5, "breakout")
    assert trigger.status is TriggerStatus.ACTIVE
    assert datetime.fromisoformat(trigger.create_time) == world.clock.now()
    assert trigger.triggered_time is None
    assert trigger.triggered_price is None
    assert world.alerts.triggers() == [trigger]


def test_unknown_symbol_is_rejected(world: World) -> None:
    with pytest.raises(ValidationFailed, match="ZZZZ") as err:
        world.alerts.create(PriceTriggerDraft(symbol="ZZZZ", direction=ABOVE, price=10))
    assert [e["field"] for e in err.value.details] == ["symbol"]
    assert world.alerts.triggers() == []


@pytest.mark.parametrize(
    ("direction", "price"),
    [(ABOVE, 190.00), (ABOVE, 150.00), (BELOW, 190.00), (BELOW, 230.00)],
)
def test_trigger_that_would_fire_at_once_is_rejected(world: World, direction: TriggerDirection, price: float) -> None:
    with pytest.raises(ValidationFailed, match="would fire immediately") as err:
        world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=direction, price=price))
    assert "$190.00" in err.value.message
    assert [e["field"] for e in err.value.details] == ["price"]
    assert world.alerts.triggers() == []


def test_above_trigger_fires_exactly_once_when_price_reaches_it(world: World) -> None:
    trigger = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=195, note="take profit"))
    world.market.set_price("AAPL", 194.99)
    assert world.alerts.check() == []
    assert world.events == []

    world.clock.set_wall(world.clock.now() + timedelta(minutes=5))
    world.market.set_price("AAPL", 195.37)
    fired = world.alerts.check()
    assert [t.trigger_id for t in fired] == [trigger.trigger_id]
    assert fired[0].status is TriggerStatus.TRIGGERED
    assert fired[0].triggered_price == 195.37
    assert fired[0].triggered_time is not None
    assert datetime.fromisoformat(fired[0].triggered_time) == world.clock.now()

    (event,) = world.events
    assert (event.event_type, event.upstream_code) == ("PRICE_ALERT_ABOVE", "TRPA")
    assert event.category is EventCategory.ALERT
    assert event.time == fired[0].triggered_time
    assert {k: event.desc[k] for k in ("trigger_id", "symbol", "direction", "price", "triggered_price", "note")} == {
        "trigger_id": trigger.trigger_id,
        "symbol": "AAPL",
        "direction": "ABOVE",
        "price": 195.0,
        "triggered_price": 195.37,
        "note": "take profit",
    }
    assert "$195.37" in event.desc["message"]

    world.market.set_price("AAPL", 199.0)
    assert world.alerts.check() == []
    world.market.set_price("AAPL", 150.0)
    world.market.set_price("AAPL", 200.0)
    assert world.alerts.check() == []
    assert len(world.events) == 1
    assert world.alerts.triggers() == fired


def test_below_trigger_fires_once_at_its_level(world: World) -> None:
    trigger = world.alerts.create(PriceTriggerDraft(symbol="TSLA", direction=BELOW, price=240.10))
    world.market.set_price("TSLA", 240.11)
    assert world.alerts.check() == []
    world.market.set_price("TSLA", 240.10)  # reaching the level exactly counts
    (fired,) = world.alerts.check()
    assert fired.trigger_id == trigger.trigger_id
    assert fired.triggered_price == 240.10
    (event,) = world.events
    assert (event.event_type, event.upstream_code) == ("PRICE_ALERT_BELOW", "TRPB")
    assert event.desc["direction"] == "BELOW"
    assert event.desc["triggered_price"] == 240.10
    assert world.alerts.check() == []
    assert len(world.events) == 1


def test_only_crossed_triggers_fire(world: World) -> None:
    near = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=191))
    far = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=220))
    tsla = world.alerts.create(PriceTriggerDraft(symbol="TSLA", direction=BELOW, price=200))
    world.market.set_price("AAPL", 192)
    assert [t.trigger_id for t in world.alerts.check()] == [near.trigger_id]
    statuses = {t.trigger_id: t.status for t in world.alerts.triggers()}
    assert statuses == {
        near.trigger_id: TriggerStatus.TRIGGERED,
        far.trigger_id: TriggerStatus.ACTIVE,
        tsla.trigger_id: TriggerStatus.ACTIVE,
    }
    assert world.alerts.subscribe().active_triggers == 2


def test_subscribe_reports_delivery_on_the_event_stream(world: World) -> None:
    world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=200))
    subscription = world.alerts.subscribe()
    assert subscription.active
    assert subscription.delivery == "/api/v1/streaming/events"
    assert subscription.active_triggers == 1


def test_delete_trigger(world: World) -> None:
    trigger = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=200))
    world.alerts.delete(trigger.trigger_id)
    assert world.alerts.triggers() == []
    world.market.set_price("AAPL", 210)
    assert world.alerts.check() == []  # a deleted trigger never fires
    assert world.events == []
    with pytest.raises(NotFound):
        world.alerts.delete(trigger.trigger_id)


def test_fired_state_survives_reopening_and_never_refires(world: World) -> None:
    fired_one = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=195))
    waiting = world.alerts.create(PriceTriggerDraft(symbol="TSLA", direction=BELOW, price=240))
    world.market.set_price("AAPL", 196)
    world.alerts.check()
    before = world.alerts.triggers()

    reopened = world.reopen()
    assert reopened.triggers() == before
    assert reopened.check() == []
    assert len(world.events) == 1
    world.market.set_price("TSLA", 239.5)
    assert [t.trigger_id for t in reopened.check()] == [waiting.trigger_id]
    assert fired_one.trigger_id != waiting.trigger_id
    # The same seed draws the same ids after a reopen: a new trigger still gets a fresh one.
    fresh = reopened.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=300))
    assert fresh.trigger_id not in {t.trigger_id for t in before}


def test_prices_are_exact_to_four_places(world: World) -> None:
    world.market.set_price("AAPL", 0.5)
    trigger = world.alerts.create(PriceTriggerDraft(symbol="AAPL", direction=ABOVE, price=0.5001))
    world.market.set_price("AAPL", 0.50009)  # rounds to 0.5001: reached
    (fired,) = world.alerts.check()
    assert fired.trigger_id == trigger.trigger_id
    assert fired.price == 0.5001
    assert fired.triggered_price == 0.5001
