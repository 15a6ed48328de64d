"""Percent price alerts: the level is a move from the previous close; older databases gain the basis column."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from ftdesk.brokers.paper.alerts import ALERTS_SCHEMA, PriceAlerts
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.errors import ValidationFailed
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerBasis, TriggerDirection, TriggerStatus
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket

PERCENT = TriggerBasis.PERCENT


def alerts_on(path: Path, market: ScriptedMarket, events: list[AccountEvent], clock: ManualClock) -> PriceAlerts:
    store = PaperStore(path, [ALERTS_SCHEMA])
    store.open()
    return PriceAlerts(store, market, clock, events.append, random.Random(5))


def test_a_percent_trigger_fires_at_its_move_from_the_previous_close(tmp_path: Path) -> None:
    clock = ManualClock()
    market = ScriptedMarket(clock)
    market.add_equity("SPY", 640.0, prev_close=650.0)  # already down 1.5 %
    events: list[AccountEvent] = []
    alerts = alerts_on(tmp_path / "paper.db", market, events, clock)
    below = alerts.create(PriceTriggerDraft(symbol="SPY", direction=TriggerDirection.BELOW, price=4, basis=PERCENT))
    above = alerts.create(PriceTriggerDraft(symbol="SPY", direction=TriggerDirection.ABOVE, price=2, basis=PERCENT))
    assert (below.basis, below.price) == (PERCENT, 4.0)
    with pytest.raises(ValidationFailed, match="would fire immediately"):
        alerts.create(PriceTriggerDraft(symbol="SPY", direction=TriggerDirection.BELOW, price=1, basis=PERCENT))

    market.set_price("SPY", 624.5)  # 3.92 % under 650: not yet
    assert alerts.check() == []
    market.set_price("SPY", 624.0)  # 4 % under 650
    (fired,) = alerts.check()
    assert fired.trigger_id == below.trigger_id and fired.status is TriggerStatus.TRIGGERED
    assert events[-1].desc["basis"] == "PERCENT" and "4% below the previous close" in events[-1].desc["message"]
    market.set_price("SPY", 663.0)  # 2 % over 650
    assert [t.trigger_id for t in alerts.check()] == [above.trigger_id]


def test_a_database_from_before_percent_triggers_keeps_its_triggers_as_price_levels(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_schema = ALERTS_SCHEMA.replace(
        "    basis              TEXT NOT NULL DEFAULT 'PRICE' CHECK (basis IN ('PRICE', 'PERCENT')),\n", ""
    )
    assert "basis" not in old_schema
    with sqlite3.connect(path) as conn:
        conn.executescript(old_schema)
        conn.execute(
            "INSERT INTO price_triggers(trigger_id, symbol, direction, price_e4, status, note, create_time, seq) "
            "VALUES('T1', 'SPY', 'ABOVE', 7000000, 'ACTIVE', '', '2026-11-20T15:00:00+00:00', 1)"
        )
    conn.close()
    clock = ManualClock()
    market = ScriptedMarket(clock)
    market.add_equity("SPY", 640.0)
    alerts = alerts_on(path, market, [], clock)
    (old,) = alerts.triggers()
    assert (old.trigger_id, old.price, old.basis) == ("T1", 700.0, TriggerBasis.PRICE)
    made = alerts.create(PriceTriggerDraft(symbol="SPY", direction=TriggerDirection.ABOVE, price=5, basis=PERCENT))
    assert [t.basis for t in alerts.triggers()] == [TriggerBasis.PRICE, PERCENT] and made.price == 5.0
