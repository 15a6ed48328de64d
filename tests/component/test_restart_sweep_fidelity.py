"""A halted restart on the fake Fidelity upstream cancels the working orders before the service answers anyone.

The first run places two resting orders and stops with them working at the upstream; the halt is then found in
the data dir (what a crash right after a halt was saved leaves). The second run logs in at start with the stored
credentials (login at start-up on) and, before its first answer, has canceled both at the upstream: one cancel
call per order.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ftdesk.domain.safety import HaltState
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from tests.component.test_safety_fidelity import API, BUY, upstream
from tests.conftest import RunningService
from tests.fakes.fidelity_server import FakeFidelity

__all__ = ["upstream"]  # the fake Fidelity upstream fixture, shared with test_safety_fidelity

CANCEL_PATH = "/cancel/place/v1"


async def start(start_service: Callable[..., Any], upstream: FakeFidelity, **env: str) -> RunningService:
    running: RunningService = await start_service(
        clock=upstream.clock, broker="fidelity", fidelity_upstream=upstream.base_url, live_trading="true", **env
    )
    return running


async def test_a_halted_restart_cancels_the_working_orders_at_the_upstream_before_the_first_answer(
    start_service: Callable[..., Any], upstream: FakeFidelity, tmp_path: Path
) -> None:
    first = await start(start_service, upstream)
    login = {"username": "trader", "password": "correct-horse", "remember": True}
    status, body = await first.call("POST", f"{API}/auth/login", json=login)
    assert status == 200, body
    placed = []
    for qty in (1, 2):
        status, preview = await first.call("POST", f"{API}/orders/equity/preview", json={**BUY, "qty": qty})
        assert status == 200, preview
        body = {**BUY, "qty": qty, "confNum": preview["data"]["conf_num"]}
        status, place = await first.call("POST", f"{API}/orders/equity/place", json=body)
        assert status == 200, place
        placed.append(place["data"]["conf_num"])
    await first.runtime.stop()
    assert {o.status for o in upstream.orders.book.values()} == {"OPEN"}  # still working when the run ended
    SafetyStore(tmp_path / "data").save(
        SafetyRecord(halt=HaltState(halted=True, since=datetime(2026, 3, 2, 15, 0, tzinfo=UTC), by="api"))
    )
    cancels_before = upstream.hits_for(CANCEL_PATH)

    second = await start(start_service, upstream, login_at_startup="true")
    # Nothing has been asked of the second run yet: the sweep is done before it answers.
    assert {o.status for o in upstream.orders.book.values()} == {"VERIFIED_CANCEL"}
    assert upstream.hits_for(CANCEL_PATH) - cancels_before == len(placed), "one cancel call per order, no retry"
    status, orders = await second.call("GET", f"{API}/orders/status")
    assert status == 200, orders
    working = [o for o in orders["data"] if o["status_detail"]["status"] in ("OPEN", "PARTIALLY_FILLED")]
    assert working == []
    status, refused = await second.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED", refused  # still halted after the sweep
    status, journal = await second.call("GET", f"{API}/orders/journal")
    assert status == 200, journal
    sweep = next(e for e in journal["data"] if e["action"] == "halt" and e["endpoint"] == "safety (restart)")
    assert sorted(sweep["conf_nums"]) == sorted(placed) and sweep["outcome"] == "accepted"
    cancels = [e for e in journal["data"] if e["action"] == "cancel" and e["endpoint"] == "HALT cancel (restart)"]
    assert sorted(e["conf_num"] for e in cancels) == sorted(placed)
