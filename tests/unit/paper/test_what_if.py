"""An account's exposure after hypothetical fills: the shortcut for plain stock gives exactly the full answer."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import CALL, PUT, World, scripted_market


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    return World(tmp_path / "paper.db", clock, scripted_market(clock))


CHANGES = [
    [("MSFT", Decimal(10), Decimal("399.50"))],  # a new stock position
    [("KO", Decimal(-50), Decimal("60.10"))],  # a sale short
    [("KO", Decimal(20), Decimal("59.90")), ("MSFT", Decimal(-3), Decimal("401"))],
    [("AAPL", Decimal(-100), Decimal("100"))],  # the shares covering the short call
    [(CALL, Decimal(1), Decimal("2.10"))],  # an option
    [],
]


@pytest.mark.parametrize("margin", [True, False], ids=["margin", "cash"])
def test_the_stock_shortcut_agrees_with_the_full_computation(
    world: World, monkeypatch: pytest.MonkeyPatch, margin: bool
) -> None:
    acct = world.account("A1", margin=margin, cash="200000")
    world.fill(acct, "AAPL", 200, "100.00")
    world.fill(acct, "KO", 100, "60.00")
    world.fill(acct, CALL, -1, "2.00")  # covered by the AAPL shares
    if margin:
        world.fill(acct, PUT, -1, "1.50")
    fast = world.ledger.what_if(acct)
    answers = [fast(changes) for changes in CHANGES]
    monkeypatch.setattr("ftdesk.brokers.paper.ledger.book._plain_stock", lambda holding: False)
    full = world.ledger.what_if(acct)
    assert answers == [full(changes) for changes in CHANGES]
    assert answers[-1] == world.ledger.exposure(acct)
