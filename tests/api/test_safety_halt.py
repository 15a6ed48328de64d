"""The kill switch through the running paper service: halt, refusals, cancels, persistence, resume, audit."""

from __future__ import annotations

import os
import stat

import pytest

from ftdesk.domain.safety import TradingHalted
from ftdesk.service.control import ServiceChange
from ftdesk.service.safety.store import SAFETY_FILE_NAME
from tests.api import safety_rig
from tests.api.safety_rig import Desk

clock, make_desk = safety_rig.clock, safety_rig.make_desk  # fixtures

# A place is always preceded by its preview; both are refused while halted.


async def _two_open_orders(desk: Desk, acct: str) -> list[str]:
    confs = []
    for qty in (1, 2):
        status, placed = await desk.place(await desk.resting_buy(acct, qty=qty))
        assert status == 200, placed
        confs.append(placed["data"]["conf_num"])
    return confs


async def test_halt_cancels_every_open_order_turns_live_off_and_refuses_previews_and_places(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    confs = await _two_open_orders(desk, acct)
    heard: list[ServiceChange] = []
    desk.control.subscribe(heard.append)

    outcome = await desk.ok("POST", "/safety/halt", json={"reason": "script misbehaves"})

    assert sorted(c["conf_num"] for c in outcome["canceled"]) == sorted(confs)
    assert outcome["failures"] == [] and outcome["source"] == "api" and outcome["live_was_on"] is True
    assert await desk.open_orders() == []
    assert desk.control.status().live is False
    assert ServiceChange.SAFETY in heard and ServiceChange.LIVE_TRADING in heard
    body = await desk.resting_buy(acct)
    status, refused = await desk.call("POST", "/orders/equity/preview", json=body)
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED", refused
    assert refused["error"]["details"]["halted_by"] == "api"
    with pytest.raises(TradingHalted):  # live trading cannot come back on while halted, whoever asks
        desk.control.set_live_trading(True, source="test")
    assert desk.control.status().live is False
    status, refused = await desk.call("POST", "/orders/equity/place", json={**body, "confNum": "AAAAAAAA"})
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED", refused

    state = await desk.ok("GET", "/safety")
    assert state["halt"]["halted"] is True and state["halt"]["by"] == "api"
    assert state["halt"]["reason"] == "script misbehaves"
    assert state["last_live_change"]["enabled"] is False and state["last_live_change"]["source"] == "halt"

    entries = await desk.journal()
    halt_rows = [e for e in entries if e["action"] == "halt"]
    assert len(halt_rows) == 1 and sorted(halt_rows[0]["conf_nums"]) == sorted(confs)
    assert "script misbehaves" in halt_rows[0]["message"] and halt_rows[0]["endpoint"] == "safety (api)"
    canceled = [e for e in entries if e["action"] == "cancel" and e["outcome"] == "accepted"]
    assert sorted(e["conf_num"] for e in canceled) == sorted(confs)
    refusals = [(e["action"], e["error_code"]) for e in entries if e["outcome"] == "refused"]
    assert refusals == [("place", "TRADING_HALTED"), ("preview", "TRADING_HALTED")]
    switches = [(e["message"]) for e in entries if e["action"] == "live_switch"]
    assert "off by halt" in switches[0]  # newest first: the refused switch-on left no row after the halt's


async def test_a_cancel_still_works_while_halted(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    await desk.ok("POST", "/safety/halt")  # no body: no reason
    # An order that reached the broker some other way (another app, the broker's website) while halted.
    orders = desk.broker.orders
    from ftdesk.domain.orders import EquityAction, EquityOrder, PriceType, TimeInForce

    order = EquityOrder(
        acct_num=acct,
        symbol="AAPL",
        action=EquityAction.BUY,
        qty=3,
        price_type=PriceType.LIMIT,
        limit_price=round(await desk.last() * 0.95, 2),
        tif=TimeInForce.GTC,
    )
    preview = await orders.preview_equity_order(order)
    placed = await orders.place_equity_order(order, preview.conf_num)
    canceled = await desk.ok("POST", f"/orders/{placed.conf_num}/cancel", json={"acct_num": acct, "action_code": "B"})
    assert canceled["is_accepted"] is True
    assert await desk.open_orders() == []


async def test_a_halt_is_kept_across_a_restart_and_a_resume_leaves_live_trading_off(make_desk, tmp_path) -> None:
    first: Desk = await make_desk(FTSERVICE_LIVE_TRADING="true")
    await first.ok("POST", "/safety/halt", json={"reason": "lunch"})
    path = tmp_path / "data" / SAFETY_FILE_NAME
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    await first.http.close()
    await first.control.stop()

    # Same data dir, live trading configured on: the service comes back halted, with live trading off.
    second: Desk = await make_desk(live=False, FTSERVICE_LIVE_TRADING="true")
    assert second.control.safety().halt.halted and second.control.safety().halt.reason == "lunch"
    assert second.control.status().live is False
    acct = await second.account()
    status, refused = await second.call("POST", "/orders/equity/preview", json=await second.resting_buy(acct))
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED"

    lifted = await second.ok("POST", "/safety/resume")
    assert lifted["halted"] is True and lifted["by"] == "api"
    assert (await second.ok("GET", "/safety"))["halt"]["halted"] is False
    status, refused = await second.place(await second.resting_buy(acct))
    assert status == 403 and refused["error"]["code"] == "LIVE_TRADING_DISABLED", "resume never turns live on"
    second.control.set_live_trading(True, source="tray")
    status, placed = await second.place(await second.resting_buy(acct))
    assert status == 200, placed
    assert [e["action"] for e in await second.journal()].count("resume") == 1
    again = await second.ok("POST", "/safety/resume")
    assert again["halted"] is False, "resuming when not halted changes nothing"


async def test_the_control_surface_halts_and_resumes_like_the_api(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    confs = await _two_open_orders(desk, acct)
    outcome = await desk.control.halt(source="tray")
    assert sorted(c.conf_num for c in outcome.canceled) == sorted(confs) and outcome.source == "tray"
    state = desk.control.safety()
    assert state.halt.halted and state.halt.by == "tray" and not state.live_trading
    assert state.last_live_change is not None and state.last_live_change.source == "halt"
    again = await desk.control.halt(source="tray")
    assert again.already_halted and again.canceled == [] and again.halted_since == outcome.halted_since
    lifted = await desk.control.resume(source="tray")
    assert lifted.halted and not desk.control.safety().halt.halted
