"""The paper world survives a restart and a killed process: committed work stays, half a fill never does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ftdesk.domain.orders import ConditionalLeg, ConditionalOrder, EquityOrder, OrderStatus, StagedOrderDraft
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import CALL, World, scripted_market

ROOT = Path(__file__).resolve().parents[3]


def snapshot(world: World, acct: str) -> dict[str, Any]:
    """Everything a trader sees of an account (times of computation left out)."""
    return {
        "orders": [o.model_dump() for o in world.engine.order_status(acct)],
        "positions": [p.model_dump() for p in world.ledger.positions(acct)],
        "balance": world.ledger.balances(acct).model_dump(exclude={"as_of"}),
        "lots": {s: [lot.model_dump() for lot in world.ledger.open_lots(acct, s)] for s in ("AAPL", CALL)},
        "closed": [c.model_dump() for c in world.ledger.closed_lots(acct, "AAPL", None, None)],
        "transactions": [t.model_dump() for t in world.ledger.transactions(acct, None, None)],
        "staged": world.engine.staged_orders().model_dump(),
    }


def test_close_and_reopen_keeps_orders_positions_cash_and_lots(tmp_path: Path) -> None:
    clock = ManualClock()
    world = World(tmp_path / "paper.db", clock, scripted_market(clock))
    acct = world.account("P1", cash="100000")
    engine = world.engine
    for order in (
        EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=30, price_type="M"),
        EquityOrder(acct_num=acct, symbol="AAPL", action="S", qty=10, price_type="M"),
        EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=5, price_type="L", limit_price=95, tif="G"),
    ):
        engine.place_equity(order, engine.preview_equity(order).conf_num)
    oto = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OTO",
        legs=[
            ConditionalLeg(symbol="AAPL", action="B", qty=10, price_type="L", limit_price=94, tif="G"),
            ConditionalLeg(symbol="AAPL", action="S", qty=10, price_type="L", limit_price=110, tif="G"),
        ],
    )
    primary, child = engine.place_conditional(oto, engine.preview_conditional(oto).conf_nums).conf_nums
    engine.save_staged(StagedOrderDraft(acct_num=acct, order={"symbol": "KO", "qty": 3}))
    used = {o.id_detail.conf_num for o in engine.order_status(acct)}
    before = snapshot(world, acct)

    world = world.reopen()
    assert snapshot(world, acct) == before

    # The reopened world goes on where it stopped, and its seeded rng never reuses a conf_num.
    fresh = world.engine.preview_equity(EquityOrder(acct_num=acct, symbol="KO", action="B", qty=1, price_type="M"))
    assert fresh.conf_num not in used
    clock.set_wall(clock.now().replace(minute=1))
    world.market.set_price("AAPL", 93.5)
    assert world.engine.process_market() == 2
    primary_order = world.engine.order_detail(primary, acct).order
    child_order = world.engine.order_detail(child, acct).order
    assert primary_order is not None and child_order is not None
    assert primary_order.status_detail.status is OrderStatus.FILLED
    assert child_order.status_detail.status is OrderStatus.OPEN
    assert world.ledger.positions(acct)[0].quantity == 35


def test_a_failed_inner_unit_is_undone_while_the_outer_one_commits(tmp_path: Path) -> None:
    clock = ManualClock()
    world = World(tmp_path / "paper.db", clock, scripted_market(clock))
    acct = world.account("N1")
    world.events.clear()

    def failing_unit() -> None:
        with world.ledger.outbox.atomic():
            world.ledger.post_cash(acct, "DEPOSIT", 99_999, "undone")
            raise RuntimeError("boom")

    with world.ledger.outbox.atomic():
        world.ledger.post_cash(acct, "DEPOSIT", 10_000, "kept")
        with pytest.raises(RuntimeError):
            failing_unit()
        assert world.events == []  # nothing is published before the commit
    assert [t.description for t in world.ledger.transactions(acct, None, None)] == ["kept"]
    assert [e.desc["amount"] for e in world.events] == [100.0]


_KILLED_FILL = """
import sys
from pathlib import Path

from ftdesk.brokers.paper.ledger.lots import Lots
from ftdesk.domain.orders import EquityOrder
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import World, scripted_market

clock = ManualClock()
world = World(Path(sys.argv[1]), clock, scripted_market(clock))
acct = world.account("K1", cash="10000")
first = EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="M")
placed = world.engine.place_equity(first, world.engine.preview_equity(first).conf_num)
print("ACK", placed.conf_num, placed.status.value, flush=True)

book_lot = Lots._open_lot

def paused(self, *args, **kwargs):
    # The fill's order update and cash transaction are written; its lot is not: wait here to be killed.
    print("READY", flush=True)
    sys.stdin.readline()
    return book_lot(self, *args, **kwargs)

Lots._open_lot = paused
second = EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=5, price_type="M")
world.engine.place_equity(second, world.engine.preview_equity(second).conf_num)
print("NOT KILLED", flush=True)
"""


@pytest.mark.timeout(60)
def test_a_killed_fill_leaves_nothing_half_applied(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_FILL, str(db)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ack = proc.stdout.readline().split()
        ready = proc.stdout.readline().strip()
        assert ack[:1] == ["ACK"] and ready == "READY", proc.stderr.read() if proc.stderr else ""
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    _, first_conf, first_status = ack
    assert first_status == "FILLED"

    clock = ManualClock()
    world = World(db, clock, scripted_market(clock))
    (position,) = world.ledger.positions("K1")
    assert position.quantity == 10  # the acknowledged fill is there, the killed one is not
    assert world.ledger.balances("K1").cash == 10000 - 1000.10
    assert [t.txn_type for t in world.ledger.transactions("K1", None, None)] == ["BUY", "DEPOSIT"]
    assert [lot.quantity for lot in world.ledger.open_lots("K1", "AAPL")] == [10]
    orders = {o.id_detail.conf_num: o.status_detail for o in world.engine.order_status("K1")}
    assert orders.pop(first_conf).status is OrderStatus.FILLED
    ((status),) = orders.values()  # the second order was accepted (committed) but never filled
    assert (status.status, status.qty_exec) == (OrderStatus.OPEN, 0)
