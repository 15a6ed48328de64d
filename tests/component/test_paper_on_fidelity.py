"""Paper trading on Fidelity's market: the whole service with FTSERVICE_PAPER_MARKET=fidelity on the fake upstreams.

A Fidelity login, quotes and streams from the fake's MDDS, paper orders filled by the fill rules on those
quotes (marketable at the ask within the displayed size, a resting limit on the streamed quote that crosses
it, a stop on the live last, options on their own bid/ask, nothing outside the session, no quote -> refused),
positions valued on them, session expiry and re-auth as in Fidelity mode, and not one order call upstream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

import pyotp
import pytest

from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.clock import Clock
from ftdesk.domain.day_pnl import account_day_pnl, day_gain
from ftdesk.gui.cockpit_rows import DeskSnapshot, rows_of
from tests.api.test_streaming_api import SseFrame
from tests.component.test_fidelity_service import API, TOTP_SECRET, Upstream, login, open_sse
from tests.conftest import RunningService
from tests.fakes.clock import AnchoredClock, ManualClock
from tests.fakes.mdds_server import RKLB_SNAPSHOT, snapshot_fields
from tests.fakes.waiting import wait_until

RKLB_ASK, RKLB_BID, RKLB_LAST, RKLB_ASK_SIZE = 56.73, 56.6, 57.38, 200
OPTION = "RKLB261218C60"
# Saturday 2026-11-21, noon in New York: no session.
SATURDAY = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)

StartPaperOnFidelity = Callable[..., Coroutine[Any, Any, tuple[RunningService, Upstream]]]


@pytest.fixture
async def start_paper_on_fidelity(start_service: Callable[..., Any]) -> AsyncIterator[StartPaperOnFidelity]:
    """Start the fakes and a paper service trading on their market, live trading on (paper money only)."""
    upstreams: list[Upstream] = []

    async def start(
        *, start_at: datetime | None = None, clock: Clock | None = None, totp_secret: str | None = None, **env: str
    ) -> tuple[RunningService, Upstream]:
        upstream = Upstream(totp_secret=totp_secret)
        if start_at is not None:
            upstream.fidelity.clock = AnchoredClock(start_at)
        await upstream.start()
        upstreams.append(upstream)
        settings = upstream.env(broker="paper", paper_market="fidelity", live_trading="true", **env)
        service = await start_service(clock=clock or upstream.fidelity.clock, **settings)
        return service, upstream

    yield start
    for upstream in upstreams:
        await upstream.close()


def order_calls(upstream: Upstream) -> list[str]:
    """Return every request the fake Fidelity got on an order-entry path (preview, place, replace, cancel)."""
    return [
        request.path
        for request in upstream.fidelity.requests
        if "/orderentry/" in request.path or "condition-replace" in request.path
    ]


async def richest_account(service: RunningService) -> str:
    """Return the paper account with the most cash (the seeded world has several)."""
    status, accounts = await service.call("GET", f"{API}/accounts")
    assert status == 200, accounts
    best, best_cash = "", -1.0
    for account in accounts["data"]:
        status, balances = await service.call("GET", f"{API}/accounts/{account['acct_num']}/balances")
        if status == 200 and balances["data"]["cash"] > best_cash:
            best, best_cash = account["acct_num"], balances["data"]["cash"]
    return best


async def place(service: RunningService, kind: str, order: dict[str, Any]) -> dict[str, Any]:
    """Preview then place an order; return the placement."""
    status, preview = await service.call("POST", f"{API}/orders/{kind}/preview", json=order)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/{kind}/place", json={**order, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    return dict(placed["data"])


async def order_detail(service: RunningService, acct: str, conf_num: str) -> dict[str, Any]:
    """Return one order's status detail."""
    status, detail = await service.call("GET", f"{API}/orders/{conf_num}/detail?acct={acct}")
    assert status == 200, detail
    return dict(detail["data"]["order"]["status_detail"])


def equity(acct: str, action: str, qty: int, price_type: str = "M", **extra: Any) -> dict[str, Any]:
    return {
        "acctNum": acct,
        "symbol": "RKLB",
        "orderActionCode": action,
        "qty": qty,
        "priceTypeCode": price_type,
        "tifCode": "G" if price_type != "M" else "D",
        **extra,
    }


async def carried(upstream: Upstream, symbol: str) -> None:
    """Wait until the service's one MDDS connection carries a symbol (the paper market held it)."""
    await wait_until(lambda: upstream.mdds.current is not None and symbol in upstream.mdds.current.subscribed)


def fill_of(conf_num: str) -> Callable[[SseFrame], bool]:
    def accepts(frame: SseFrame) -> bool:
        if "data" not in frame.fields:
            return False
        desc = frame.data.get("desc") if isinstance(frame.data, dict) else None
        return (
            isinstance(desc, dict)
            and frame.data.get("event_type") in ("ORDER_FILL", "ORDER_PARTIAL_FILL")
            and desc.get("conf_num") == conf_num
        )

    return accepts


async def test_a_fidelity_login_real_quotes_a_fill_at_the_ask_a_valuation_and_no_order_upstream(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    status, body = await login(service)
    assert status == 200 and body["data"]["state"] == "logged_in" and body["data"]["broker"] == "paper", body
    assert upstream.fidelity.logins == 1  # Fidelity's credentials, checked by Fidelity
    assert service.runtime.broker.fidelity.has_order_entry is False  # type: ignore[attr-defined]

    status, health = await service.call("GET", f"{API}/health")
    assert (health["data"]["broker"], health["data"]["mode"]) == ("paper", "paper on Fidelity's market")
    status, quotes = await service.call("GET", f"{API}/market-data/quotes?symbols=RKLB")
    assert status == 200 and quotes["data"]["quotes"][0]["last"] == RKLB_LAST, quotes  # the upstream's price

    acct = await richest_account(service)
    placed = await place(service, "equity", equity(acct, "B", 10))
    detail = await order_detail(service, acct, placed["conf_num"])
    assert (detail["status"], detail["avg_exec_price"]) == ("FILLED", RKLB_ASK)
    status, positions = await service.call("GET", f"{API}/accounts/{acct}/positions")
    rklb = next(p for p in positions["data"] if p["symbol"] == "RKLB")
    assert (rklb["quantity"], rklb["last_price"]) == (10, RKLB_LAST)  # valued on Fidelity's last

    resting = await place(service, "equity", equity(acct, "B", 5, "L", limitPrice=50.0))
    status, canceled = await service.call(
        "POST", f"{API}/orders/{resting['conf_num']}/cancel", json={"acct_num": acct, "action_code": "B"}
    )
    assert status == 200 and canceled["data"]["is_accepted"] is True, canceled
    status, journal = await service.call("GET", f"{API}/orders/journal?limit=500")
    assert any(e["action"] == "market" and e["message"] == "paper on Fidelity's market" for e in journal["data"])
    assert order_calls(upstream) == []  # placed, filled and canceled: not one order call reached Fidelity


async def test_a_resting_limit_fills_on_the_streamed_quote_that_crosses_it(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)
    async with open_sse(service, f"{API}/streaming/events") as stream:
        placed = await place(service, "equity", equity(acct, "B", 10, "L", limitPrice=56.0))
        assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "OPEN"
        await carried(upstream, "RKLB")
        assert await upstream.mdds.publish("RKLB", {"18": "56.40"}) == 1  # still above the limit
        assert await upstream.mdds.publish("RKLB", {"18": "55.95", "19": "100"}) == 1  # crosses it
        frames = await stream.until(fill_of(placed["conf_num"]))
    assert frames[-1].data["desc"]["price"] == 55.95
    assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "FILLED"
    assert order_calls(upstream) == []


async def test_a_stop_triggers_on_the_live_last(start_paper_on_fidelity: StartPaperOnFidelity) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)
    async with open_sse(service, f"{API}/streaming/events") as stream:
        placed = await place(service, "equity", equity(acct, "B", 10, "S", stopPrice=58.0))
        assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "OPEN"
        await carried(upstream, "RKLB")
        assert await upstream.mdds.publish("RKLB", {"18": "58.20"}) == 1  # the ask moves, the last does not
        assert await upstream.mdds.publish("RKLB", {"29": "58.05", "18": "58.25"}) == 1  # the last reaches 58
        frames = await stream.until(fill_of(placed["conf_num"]))
    assert frames[-1].data["desc"]["price"] == 58.25  # triggered on the last, filled at the ask


async def test_a_large_order_fills_the_displayed_size_then_the_rest_as_the_quote_moves(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)
    async with open_sse(service, f"{API}/streaming/events") as stream:
        placed = await place(service, "equity", equity(acct, "B", 500, "L", limitPrice=57.0))
        first = await order_detail(service, acct, placed["conf_num"])
        assert (first["status"], first["qty_exec"]) == ("PARTIALLY_FILLED", RKLB_ASK_SIZE)  # what the ask shows
        await carried(upstream, "RKLB")
        assert await upstream.mdds.publish("RKLB", {"18": "56.80", "19": "300"}) == 1
        frames = await stream.until(lambda f: fill_of(placed["conf_num"])(f) and f.data["desc"]["cum_qty"] == 500)
    assert frames[-1].data["desc"]["fill_qty"] == 300 and frames[-1].data["desc"]["price"] == 56.80


async def test_an_option_fills_on_its_own_ask(start_paper_on_fidelity: StartPaperOnFidelity) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)
    order = {"acctNum": acct, "symbol": OPTION, "orderActionCode": "BC", "qty": 1, "priceTypeCode": "M", "tifCode": "D"}
    status, preview = await service.call("POST", f"{API}/orders/option/preview", json=order)
    if status != 200 and preview["error"].get("details", {}).get("reason") == "OPTION_LEVEL":
        pytest.skip("the richest seeded account trades no options")  # pragma: no cover - seed-dependent
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/option/place", json={**order, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    option_ask = float(snapshot_fields(f"-{OPTION}")["18"])
    detail = await order_detail(service, acct, placed["data"]["conf_num"])
    assert (detail["status"], detail["avg_exec_price"]) == ("FILLED", option_ask)
    assert option_ask != RKLB_ASK
    assert order_calls(upstream) == []


async def test_orders_rest_while_the_real_session_is_closed(start_paper_on_fidelity: StartPaperOnFidelity) -> None:
    service, upstream = await start_paper_on_fidelity(start_at=SATURDAY)
    await login(service)
    acct = await richest_account(service)
    placed = await place(service, "equity", equity(acct, "B", 10, "L", limitPrice=60.0))  # marketable
    assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "OPEN"
    service.runtime.broker.paper.tick()  # type: ignore[attr-defined]  # a tick changes nothing on a Saturday
    assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "OPEN"
    assert order_calls(upstream) == []


async def test_a_symbol_fidelity_cannot_quote_is_refused_never_priced_from_the_simulation(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    upstream.mdds.unknown.add("AAPL")  # the simulation knows AAPL; Fidelity gives no quote for it here
    await login(service)
    acct = await richest_account(service)
    order = {**equity(acct, "B", 10), "symbol": "AAPL"}
    status, body = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    assert status == 422, body
    assert "No real quote for AAPL from Fidelity's market" in body["error"]["message"]
    assert body["error"]["details"]["reason"] == "NO_QUOTE"


async def test_an_expired_fidelity_session_is_renewed_and_paper_calls_go_on(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    status, body = await login(service, remember=True)
    assert status == 200, body
    acct = await richest_account(service)

    upstream.fidelity.expire()
    status, chain = await service.call("GET", f"{API}/market-data/chain/AAPL")
    assert status == 200, chain
    assert upstream.fidelity.logins == 2
    status, session = await service.call("GET", f"{API}/auth/status")
    assert session["data"]["state"] == "logged_in" and session["data"]["reauth_count"] == 1
    placed = await place(service, "equity", equity(acct, "B", 1))
    assert (await order_detail(service, acct, placed["conf_num"]))["status"] == "FILLED"
    assert order_calls(upstream) == []


async def test_without_stored_credentials_an_expiry_stops_paper_calls_as_in_fidelity_mode(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)

    upstream.fidelity.expire()
    status, body = await service.call("GET", f"{API}/market-data/chain/AAPL")
    assert status == 401 and body["error"]["code"] == "SESSION_EXPIRED", body
    status, body = await service.call("GET", f"{API}/accounts/{acct}/positions")
    assert status == 401 and body["error"]["code"] == "SESSION_EXPIRED", body
    assert RKLB_SNAPSHOT["29"] == str(RKLB_LAST)


async def test_switching_markets_keeps_the_world_values_it_on_the_new_market_and_is_journaled(
    start_service: Callable[..., Any], start_paper_on_fidelity: StartPaperOnFidelity
) -> None:
    simulated = await start_service(live_trading="true")
    await simulated.login()
    acct = await richest_account(simulated)
    placed = await place(simulated, "equity", {**equity(acct, "B", 3), "symbol": "AAPL"})  # on the simulated market
    assert (await order_detail(simulated, acct, placed["conf_num"]))["status"] == "FILLED"
    status, before = await simulated.call("GET", f"{API}/accounts/{acct}/positions")
    simulated_aapl = next(p for p in before["data"] if p["symbol"] == "AAPL")
    await simulated.runtime.stop()

    service, upstream = await start_paper_on_fidelity()  # the same data dir: the same paper world
    await login(service)
    status, positions = await service.call("GET", f"{API}/accounts/{acct}/positions")
    assert status == 200, positions
    aapl = next(p for p in positions["data"] if p["symbol"] == "AAPL")
    fidelity_last = float(snapshot_fields("AAPL")["29"])
    assert aapl["quantity"] == simulated_aapl["quantity"]  # the same holding, seeded shares and the 3 bought
    assert aapl["last_price"] == fidelity_last != simulated_aapl["last_price"]  # valued on Fidelity's quote
    status, journal = await service.call("GET", f"{API}/orders/journal?limit=500")
    markets = [e for e in journal["data"] if e["action"] == "market"]
    assert [m["message"] for m in markets] == ["paper on Fidelity's market"]
    await service.runtime.stop()

    back = await start_service(live_trading="true")
    status, journal = await back.call("GET", f"{API}/orders/journal?limit=500")
    markets = [e for e in journal["data"] if e["action"] == "market"]
    assert (markets[0]["message"], markets[0]["endpoint"]) == (
        "paper on the simulated market",
        "service start (was: paper on Fidelity's market)",
    )
    assert order_calls(upstream) == []


async def test_the_world_keeps_ticking_while_logged_out_of_fidelity(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    clock = ManualClock()  # the service's: moved by the test, so the quotes it took go stale
    service, upstream = await start_paper_on_fidelity(clock=clock)
    await login(service)
    acct = await richest_account(service)
    resting = await place(service, "equity", equity(acct, "B", 5, "L", limitPrice=50.0))
    status, _ = await service.call("POST", f"{API}/auth/logout")
    assert status == 200
    await clock.advance(10)  # the quote the order was priced on is stale now, and no snapshot can be taken
    paper = service.runtime.broker.paper  # type: ignore[attr-defined]
    assert await paper.prepared_tick() == 0  # nothing fills, and the tick does not fail
    await login(service)
    assert (await order_detail(service, acct, resting["conf_num"]))["status"] == "OPEN"
    assert order_calls(upstream) == []


async def test_the_login_asks_for_fidelitys_six_digit_code(start_paper_on_fidelity: StartPaperOnFidelity) -> None:
    service, upstream = await start_paper_on_fidelity(totp_secret=TOTP_SECRET)
    status, body = await login(service)
    assert status == 401 and body["error"]["code"] == "TOTP_REQUIRED", body
    code = pyotp.TOTP(TOTP_SECRET).at(upstream.fidelity.now())
    status, body = await login(service, totp_code=code)
    assert status == 200 and body["data"]["state"] == "logged_in" and body["data"]["broker"] == "paper", body


async def test_a_symbol_nothing_needs_any_more_leaves_mdds_unless_a_client_stream_holds_it(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    clock = ManualClock()  # the service's: drives the market's linger and the hub's unsubscribe delay
    service, upstream = await start_paper_on_fidelity(clock=clock)
    await login(service)
    acct = await richest_account(service)

    def subscribed() -> set[str]:
        return upstream.mdds.current.subscribed if upstream.mdds.current is not None else set()

    async with open_sse(service, f"{API}/streaming/quotes?symbols=F"):  # a client also watches F
        await wait_until(lambda: "F" in subscribed())
        resting = [
            await place(service, "equity", equity(acct, "B", 5, "L", limitPrice=limit, symbol=symbol))
            for symbol, limit in (("RKLB", 50.0), ("F", 340.0))  # neither is held by the seeded world
        ]
        await carried(upstream, "RKLB")
        for order in resting:
            status, canceled = await service.call(
                "POST", f"{API}/orders/{order['conf_num']}/cancel", json={"acct_num": acct, "action_code": "B"}
            )
            assert status == 200 and canceled["data"]["is_accepted"] is True, canceled
        assert "RKLB" in subscribed()  # nothing needs it now, but it was read moments ago: it lingers

        for _ in range(120):  # the market's linger (30 s), then the hub's unsubscribe delay (10 s)
            if "RKLB" not in subscribed():
                break
            await clock.advance(1)
        await wait_until(lambda: "RKLB" not in subscribed())
        assert upstream.mdds.current is not None and upstream.mdds.current.commands_named("unsubscribe")
        assert "F" in subscribed()  # the client's stream still holds F: the market's release did not end it
    assert order_calls(upstream) == []


async def test_borrow_and_short_figures_are_refused_rather_than_served_from_the_simulation(
    start_paper_on_fidelity: StartPaperOnFidelity,
) -> None:
    service, upstream = await start_paper_on_fidelity()
    await login(service)
    acct = await richest_account(service)
    for path in ("hard-to-borrow?symbols=RKLB", "short-insights?symbols=RKLB", "short-insights/RKLB/timeseries"):
        status, body = await service.call("GET", f"{API}/accounts/{acct}/{path}")
        assert status == 409 and body["error"]["code"] == "CONFLICT", body
        assert body["error"]["details"]["reason"] == "SIMULATED_ONLY"
        assert "not Fidelity's" in body["error"]["message"]
    assert not [r.path for r in upstream.fidelity.requests if "borrow" in r.path or "short" in r.path.lower()]


async def test_a_position_fidelity_cannot_price_says_so_and_stays_out_of_the_pnl_sums(
    start_service: Callable[..., Any], start_paper_on_fidelity: StartPaperOnFidelity
) -> None:
    simulated = await start_service(live_trading="true")  # the seeded world, with option series it invented
    await simulated.login()
    status, accounts = await simulated.call("GET", f"{API}/accounts")
    seeded: dict[str, dict[str, Any]] = {}
    for account in accounts["data"]:
        status, held = await simulated.call("GET", f"{API}/accounts/{account['acct_num']}/positions")
        options = [p for p in held["data"] if p["security_type"] == "OPTION"]
        if options:
            seeded[account["acct_num"]] = options[0]
    await simulated.runtime.stop()
    acct, option = next(iter(seeded.items()))

    service, upstream = await start_paper_on_fidelity()  # the same world, on Fidelity's market
    upstream.mdds.unknown.add(f"-{option['symbol']}")  # a series Fidelity does not list
    await login(service)
    status, positions = await service.call("GET", f"{API}/accounts/{acct}/positions")
    assert status == 200, positions
    unpriced = next(p for p in positions["data"] if p["symbol"] == option["symbol"])
    assert "no quote for " + option["symbol"] in unpriced["unpriced_reason"]
    booked = option["avg_cost_per_share"]
    assert unpriced["last_price"] == booked and unpriced["market_value"] == option["cost_basis"]  # not 0
    assert unpriced["total_gain_loss"] == unpriced["todays_gain_loss"] == 0
    priced = [p for p in positions["data"] if p["symbol"] != option["symbol"]]
    assert priced and all(p["unpriced_reason"] is None for p in priced)

    held = [Position.model_validate(p) for p in positions["data"]]
    day = account_day_pnl(acct, held, [], {})
    assert option["symbol"] in day.uncounted  # the daily loss limit names it rather than count it
    assert day.held == round(sum(day_gain(p, []) for p in held if p.unpriced_reason is None), 2)
    desk = DeskSnapshot(
        accounts=tuple(Account.model_validate(a) for a in accounts["data"] if a["acct_num"] == acct),
        positions={acct: tuple(held)},
    )
    (pnl,) = desk.account_pnl()
    assert pnl.total == sum(p.total_gain_loss for p in held if p.unpriced_reason is None)
    (row,) = [cells for _, cells, _ in rows_of(desk) if cells[0] == option["symbol"]]
    assert row[2] == "no quote" and row[4] == row[5] == "-"
    assert order_calls(upstream) == []
