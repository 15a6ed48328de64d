"""The local risk limits through the running paper service: each at its boundary and one past it."""

from __future__ import annotations

import asyncio
from typing import Any

from ftdesk.service.safety.loss_watch import LOSS_WATCH_SECONDS
from tests.api import safety_rig
from tests.api.safety_rig import Desk
from tests.fakes.waiting import wait_until

clock, make_desk = safety_rig.clock, safety_rig.make_desk  # fixtures

OPTION = "AAPL261218C270"


async def limits(desk: Desk, **values: Any) -> None:
    """Change limits the way the tray's settings dialog does (applied without a restart)."""
    outcome = await desk.control.save_settings(values)
    assert not outcome.errors, outcome.errors


async def preview(desk: Desk, body: dict[str, Any], kind: str = "equity") -> tuple[int, dict[str, Any]]:
    return await desk.call("POST", f"/orders/{kind}/preview", json=body)


def refused(answer: tuple[int, dict[str, Any]], limit: str, value: Any, order_value: Any) -> dict[str, Any]:
    status, body = answer
    assert status == 422 and body["error"]["code"] == "RISK_LIMIT", body
    details = body["error"]["details"]
    assert (details["limit"], details["limit_value"], details["order_value"]) == (limit, value, order_value), details
    return details


def accepted(answer: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    assert answer[0] == 200, answer[1]
    return answer[1]["data"]


def option_body(acct: str, qty: int, price: float | None = None) -> dict[str, Any]:
    body = {"acctNum": acct, "symbol": OPTION, "orderActionCode": "BC", "qty": qty, "priceTypeCode": "M"}
    if price is not None:
        body.update(priceTypeCode="L", limitPrice=price, tifCode="D")
    return body


async def test_equity_quantity_at_the_limit_passes_one_past_is_refused_at_preview_and_again_at_place(
    make_desk,
) -> None:
    desk: Desk = await make_desk(limits={"max_equity_qty": "5"})
    acct = await desk.account()
    accepted(await preview(desk, await desk.resting_buy(acct, qty=5)))
    refused(await preview(desk, await desk.resting_buy(acct, qty=6)), "max_equity_qty", 5.0, 6.0)

    body = await desk.resting_buy(acct, qty=5)
    conf = accepted(await preview(desk, body))["conf_num"]
    await limits(desk, max_equity_qty=4)  # tightened between the preview and the place
    answer = await desk.call("POST", "/orders/equity/place", json={**body, "confNum": conf})
    refused(answer, "max_equity_qty", 4.0, 5.0)
    assert await desk.open_orders() == []
    rows = [e for e in await desk.journal() if e["outcome"] == "refused"]
    assert [(e["action"], e["error_code"]) for e in rows] == [("place", "RISK_LIMIT"), ("preview", "RISK_LIMIT")]


async def test_equity_notional_at_the_limit_passes_one_cent_more_is_refused(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    body = await desk.resting_buy(acct, qty=2)
    notional = round(body["limitPrice"] * 2, 2)
    await limits(desk, max_equity_notional=notional)
    accepted(await preview(desk, body))
    await limits(desk, max_equity_notional=round(notional - 0.01, 2))
    refused(await preview(desk, body), "max_equity_notional", round(notional - 0.01, 2), notional)


async def test_a_market_order_is_valued_at_the_quote(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    last = await desk.last()
    body = {"acctNum": acct, "symbol": "AAPL", "orderActionCode": "B", "qty": 10, "priceTypeCode": "M"}
    await limits(desk, max_equity_notional=round(last * 10 - 1, 2))
    refused(await preview(desk, body), "max_equity_notional", round(last * 10 - 1, 2), round(last * 10, 2))


async def test_option_contracts_and_option_notional_count_the_multiplier(make_desk) -> None:
    desk: Desk = await make_desk(limits={"max_option_contracts": "2"})
    acct = await desk.account()
    accepted(await preview(desk, option_body(acct, 2), "option"))
    refused(await preview(desk, option_body(acct, 3), "option"), "max_option_contracts", 2, 3)

    await limits(desk, max_option_contracts=0, max_option_notional=300)  # 2 contracts x 100 x $1.50
    accepted(await preview(desk, option_body(acct, 2, 1.50), "option"))
    refused(await preview(desk, option_body(acct, 3, 1.50), "option"), "max_option_notional", 300.0, 450.0)
    spread = {
        "acct_num": acct,
        "underlying": "AAPL",
        "legs": [{"symbol": OPTION, "action": "BO", "qty": 3}, {"symbol": "AAPL261218C280", "action": "SO", "qty": 3}],
        "price_type": "L",
        "net_price": 1.25,
        "debit_credit": "DB",
    }
    refused(await preview(desk, spread, "options"), "max_option_notional", 300.0, 375.0)


async def test_a_limit_price_at_the_distance_passes_one_cent_further_is_refused(make_desk) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    mid = await desk.midpoint()  # a two-sided quote: measured from its midpoint, not the last trade
    body = await desk.resting_buy(acct, factor=0.93)
    pct = round(abs(body["limitPrice"] - mid) / mid * 100, 4)
    await limits(desk, max_price_distance_pct=pct)
    accepted(await preview(desk, body))
    further = {**body, "limitPrice": round(body["limitPrice"] - 0.01, 2)}
    further_pct = round(abs(further["limitPrice"] - mid) / mid * 100, 4)
    answer = await preview(desk, further)
    details = refused(answer, "max_price_distance_pct", pct, further_pct)
    assert details["field"] == "limit_price" and details["quote"] == mid
    assert details["quote_basis"] == "bid/ask midpoint" and "from the bid/ask midpoint" in answer[1]["error"]["message"]
    stop = {**further, "priceTypeCode": "S", "stopPrice": round(mid * 1.5, 2)}
    del stop["limitPrice"]
    stop_pct = round(abs(stop["stopPrice"] - mid) / mid * 100, 4)
    assert refused(await preview(desk, stop), "max_price_distance_pct", pct, stop_pct)["field"] == "stop_price"


async def test_places_per_minute_count_every_account_on_the_injected_clock(make_desk, clock) -> None:
    desk: Desk = await make_desk(limits={"max_orders_per_minute": "2"})
    acct = await desk.account()
    for qty in (1, 2):
        accepted(await desk.place(await desk.resting_buy(acct, qty=qty)))
    refused(await desk.place(await desk.resting_buy(acct, qty=3)), "max_orders_per_minute", 2, 3)
    await clock.advance(60)
    accepted(await desk.place(await desk.resting_buy(acct, qty=3)))
    usage = (await desk.ok("GET", "/safety/limits"))["usage"]
    assert usage["places_this_minute"] == 1


async def test_open_orders_at_the_limit_refuse_the_next_one(make_desk) -> None:
    desk: Desk = await make_desk(limits={"max_open_orders": "2"})
    acct = await desk.account()
    accepted(await desk.place(await desk.resting_buy(acct, qty=1)))
    accepted(await desk.place(await desk.resting_buy(acct, qty=2)))  # the second: two open, at the limit
    refused(await desk.place(await desk.resting_buy(acct, qty=3)), "max_open_orders", 2, 3)
    assert len(await desk.open_orders()) == 2
    assert (await desk.ok("GET", "/safety/limits"))["usage"]["open_orders"] == 2


async def test_a_burst_of_parallel_places_cannot_pass_the_open_orders_limit(make_desk) -> None:
    desk: Desk = await make_desk(limits={"max_open_orders": "5"})
    acct = await desk.account()
    bodies = [await desk.resting_buy(acct, qty=n + 1) for n in range(30)]
    previews = [accepted(await preview(desk, body))["conf_num"] for body in bodies]  # previews add no order
    places = await asyncio.gather(
        *(
            desk.call("POST", "/orders/equity/place", json={**body, "confNum": conf})
            for body, conf in zip(bodies, previews, strict=True)
        )
    )
    placed = [body for status, body in places if status == 200]
    limited = [
        body for status, body in places if status == 422 and body["error"]["details"]["limit"] == "max_open_orders"
    ]
    assert len(placed) == 5 and len(limited) == 25, [status for status, _ in places]
    assert len(await desk.open_orders()) == 5
    assert desk.control._require().context.safety.limits.places_in_flight == 0  # every slot given back


async def test_symbol_deny_and_allow_lists_cover_an_options_underlying(make_desk) -> None:
    desk: Desk = await make_desk(limits={"symbol_deny": "msft"})
    acct = await desk.account()
    refused(await preview(desk, await desk.resting_buy(acct, symbol="MSFT")), "symbol_deny", ["MSFT"], "MSFT")
    accepted(await preview(desk, await desk.resting_buy(acct)))
    await limits(desk, symbol_deny="", symbol_allow="AAPL")
    refused(await preview(desk, await desk.resting_buy(acct, symbol="MSFT")), "symbol_allow", ["AAPL"], "MSFT")
    accepted(await preview(desk, option_body(acct, 1), "option"))  # AAPL's option: its underlying is allowed


async def test_limits_and_usage_are_readable_and_a_setting_of_off_turns_a_limit_off(make_desk) -> None:
    desk: Desk = await make_desk(limits={"max_equity_qty": "off", "max_open_orders": 7})
    answer = await desk.ok("GET", "/safety/limits")
    assert answer["limits"]["max_equity_qty"] is None and answer["limits"]["max_open_orders"] == 7
    assert answer["limits"]["daily_loss_limit"] is None
    assert set(answer["usage"]) >= {"places_this_minute", "open_orders", "pnl", "loss_halted_today"}
    assert desk.control.safety().limits.max_open_orders == 7


async def test_a_daily_loss_past_the_limit_halts_trading_once_and_a_resume_lifts_it(make_desk) -> None:
    desk: Desk = await make_desk()
    accounts = [a["acct_num"] for a in await desk.ok("GET", "/accounts")]
    day_pnl = {}
    for acct in accounts:
        day_pnl[acct] = round(
            sum(p["todays_gain_loss"] for p in await desk.ok("GET", f"/accounts/{acct}/positions")), 2
        )
    losing = next(acct for acct, pnl in day_pnl.items() if pnl < 0)  # the seeded paper world has one
    loss = -day_pnl[losing]
    individual = await desk.account()
    resting = accepted(await desk.place(await desk.resting_buy(individual)))["conf_num"]

    await limits(desk, daily_loss_limit=loss)  # a loss equal to the limit has not crossed it
    accepted(await preview(desk, await desk.resting_buy(losing)))
    assert not desk.control.safety().halt.halted
    await limits(desk, daily_loss_limit=round(loss - 0.01, 2))
    details = refused(
        await preview(desk, await desk.resting_buy(losing)), "daily_loss_limit", round(loss - 0.01, 2), loss
    )
    assert details["halted"] is True and details["acct_num"] == losing

    state = await desk.ok("GET", "/safety")
    assert state["halt"]["halted"] is True and state["halt"]["by"] == "daily-loss-limit"
    assert state["live_trading"] is False and await desk.open_orders() == []
    assert state["usage"]["loss_halted_today"] == {losing: desk.control.safety().usage.pnl[0].as_of.date().isoformat()}
    pnl = {p["acct_num"]: p["total"] for p in state["usage"]["pnl"]}
    assert pnl[losing] == -loss
    halt_row = next(e for e in await desk.journal() if e["action"] == "halt")
    assert resting in halt_row["conf_nums"] and halt_row["endpoint"] == "safety (daily-loss-limit)"

    await desk.ok("POST", "/safety/resume")
    accepted(await preview(desk, await desk.resting_buy(losing)))  # resumed: the same day's loss halts no more
    assert not desk.control.safety().halt.halted


async def test_a_replace_at_the_open_orders_limit_passes_it_adds_no_order(make_desk) -> None:
    desk: Desk = await make_desk(limits={"max_open_orders": "1"})
    acct = await desk.account()
    body = await desk.resting_buy(acct, qty=1)
    conf = accepted(await desk.place(body))["conf_num"]
    refused(await desk.place(await desk.resting_buy(acct, qty=2)), "max_open_orders", 1, 2)
    replace = {**body, "qty": 2, "orig_conf_num": conf}
    preview_conf = accepted(await preview(desk, replace, "replace"))["conf_num"]
    placed = await desk.call("POST", "/orders/replace/place", json={**replace, "confNum": preview_conf})
    accepted(placed)
    assert [o["status_detail"]["qty"] for o in await desk.open_orders()] == [2.0]


async def test_a_daily_loss_halts_trading_with_no_order_sent_and_not_without_a_limit(make_desk, clock) -> None:
    desk: Desk = await make_desk()
    individual = await desk.account()
    resting = accepted(await desk.place(await desk.resting_buy(individual)))["conf_num"]
    losses = {}
    for acct in [a["acct_num"] for a in await desk.ok("GET", "/accounts")]:
        positions = await desk.ok("GET", f"/accounts/{acct}/positions")
        losses[acct] = -round(sum(p["todays_gain_loss"] for p in positions), 2)
    loss = max(losses.values())
    assert loss > 0  # the seeded paper world has a losing account

    await clock.advance(LOSS_WATCH_SECONDS)  # no limit set: a round of the watch halts nothing
    assert not desk.control.safety().halt.halted

    await limits(desk, daily_loss_limit=round(loss / 2, 2))  # crossed, but no order is sent
    await clock.advance(LOSS_WATCH_SECONDS)
    await wait_until(lambda: desk.control.safety().halt.halted)
    async with asyncio.timeout(10):  # the halt's journal row is written as it starts, completed after its cancels
        while not (halt_rows := [e for e in await desk.journal() if e["action"] == "halt" and e["finished_time"]]):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    state = await desk.ok("GET", "/safety")
    assert state["halt"]["by"] == "daily-loss-limit"
    assert any(f"account {acct} lost" in state["halt"]["reason"] for acct in losses), state["halt"]
    assert state["live_trading"] is False and await desk.open_orders() == []
    assert resting in halt_rows[0]["conf_nums"]


async def test_live_trading_turned_off_while_a_place_waits_for_the_limits_quote_refuses_that_place(
    make_desk, monkeypatch
) -> None:
    desk: Desk = await make_desk(limits={"max_price_distance_pct": "10"})
    acct = await desk.account()
    body = await desk.resting_buy(acct)
    conf = accepted(await preview(desk, body))["conf_num"]
    feed = desk.broker.quote_feed
    snapshot = feed.snapshot
    reading, go_on = asyncio.Event(), asyncio.Event()

    async def held(symbols: list[str]) -> Any:  # the quote the price-distance check reads, held back
        reading.set()
        await go_on.wait()
        return await snapshot(symbols)

    monkeypatch.setattr(feed, "snapshot", held)
    place = asyncio.create_task(desk.call("POST", "/orders/equity/place", json={**body, "confNum": conf}))
    async with asyncio.timeout(10):
        await reading.wait()
    desk.control.set_live_trading(False, source="tray")  # the trader turns live off while the place is checked
    go_on.set()
    status, answer = await place
    assert status == 403 and answer["error"]["code"] == "LIVE_TRADING_DISABLED", answer
    assert await desk.open_orders() == []
