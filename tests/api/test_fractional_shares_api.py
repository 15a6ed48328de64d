"""Fractional equity quantities through the running paper service: exact to 0.0001 share, where they are allowed.

A trader buys 2.5 shares at market, sells 1.25, and every figure the service reports (order, position, lots,
closed lot, transactions, cash, journal) agrees to the cent and to the share fraction. Precision finer than
0.0001, a fractional option contract, and a fraction on an order type that may not have one are 422s naming
``qty``. A paper world written by the previous (whole-share) version opens and reads back unchanged.
"""

from __future__ import annotations

import sqlite3
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_orders_api import individual_account, last_price, option_symbols, order_status, preview_and_place
from tests.fakes.clock import ManualClock

API = "/api/v1"
SYMBOL = "AMZN"  # not held by the seeded individual account: its position is exactly what the test trades
CENT = Decimal("0.01")
OLD_WORLD = Path(__file__).parent / "data" / "paper_world_whole_shares.sql"


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock(), live_trading="true")
    await running.login()
    return running


def money(value: float) -> Decimal:
    """Return a dollar figure of an answer as an exact Decimal."""
    return Decimal(repr(value))


def market(acct: str, action: str, qty: float, symbol: str = SYMBOL) -> dict[str, Any]:
    return {"acctNum": acct, "symbol": symbol, "orderActionCode": action, "qty": qty, "priceTypeCode": "M"}


async def get(service, path: str, **params: str) -> Any:
    status, body = await service.call("GET", f"{API}{path}", params=params or None)
    assert status == 200, body
    return body["data"]


async def position(service, acct: str, symbol: str = SYMBOL) -> dict[str, Any] | None:
    return next((p for p in await get(service, f"/accounts/{acct}/positions") if p["symbol"] == symbol), None)


async def trades(service, acct: str, symbol: str = SYMBOL) -> list[dict[str, Any]]:
    rows = await get(service, f"/accounts/{acct}/transactions")
    return [t for t in rows if t["symbol"] == symbol and t["txn_type"] in ("BUY", "SELL")]


async def refused(service, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = await service.call("POST", f"{API}/orders/{kind}/preview", json=body)
    assert status == 422, answer
    return answer["error"]


async def test_buy_two_and_a_half_sell_one_and_a_quarter_every_figure_exact(service) -> None:
    acct = await individual_account(service)
    cash_before = money((await get(service, f"/accounts/{acct}/balances"))["cash"])

    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=market(acct, "B", 2.5))
    assert status == 200, preview
    assert preview["data"]["qty"] == 2.5
    placed = await preview_and_place(service, "equity", market(acct, "B", 2.5))
    assert placed["status"] == "FILLED"
    order = next(o for o in await order_status(service, acct) if o["id_detail"]["conf_num"] == placed["conf_num"])
    detail = order["status_detail"]
    assert (detail["qty"], detail["qty_exec"], detail["qty_remaining"]) == (2.5, 2.5, 0.0)
    assert order["order_detail"]["qty"] == 2.5

    (buy,) = await trades(service, acct)
    assert buy["quantity"] == 2.5 and "YOU BOUGHT 2.5 " in buy["description"]
    cost = (money(buy["price"]) * Decimal("2.5")).quantize(CENT, rounding=ROUND_HALF_UP)
    assert money(buy["amount"]) == -cost and buy["commission"] == 0.0  # fractional equity trades are free too
    held = await position(service, acct)
    assert held is not None and held["quantity"] == 2.5 and money(held["cost_basis"]) == cost

    sold = await preview_and_place(service, "equity", market(acct, "S", 1.25))
    assert sold["status"] == "FILLED"
    held = await position(service, acct)
    assert held is not None and held["quantity"] == 1.25
    half = (cost / 2).quantize(CENT, rounding=ROUND_HALF_UP)  # the 1.25 sold carry half the lot's basis
    assert money(held["cost_basis"]) == cost - half
    (lot,) = await get(service, f"/accounts/{acct}/lots/{SYMBOL}")
    assert lot["quantity"] == 1.25 and money(lot["cost_basis"]) == cost - half

    sale = next(t for t in await trades(service, acct) if t["txn_type"] == "SELL")
    assert sale["quantity"] == -1.25
    principal = (money(sale["price"]) * Decimal("1.25")).quantize(CENT, rounding=ROUND_HALF_UP)
    assert money(sale["amount"]) == principal - money(sale["fees"])  # proceeds net of the SEC fee and FINRA TAF
    (closed,) = [c for c in await get(service, f"/accounts/{acct}/closed-positions") if c["symbol"] == SYMBOL]
    assert closed["quantity"] == 1.25
    assert money(closed["proceeds"]) == money(sale["amount"]) and money(closed["cost_basis"]) == half
    assert money(closed["gain_loss"]) == money(sale["amount"]) - half  # realised P&L to the cent

    cash_after = money((await get(service, f"/accounts/{acct}/balances"))["cash"])
    assert cash_after - cash_before == money(buy["amount"]) + money(sale["amount"])

    journal = await get(service, "/orders/journal")
    assert [e["qty"] for e in journal if e["action"] == "place"][:2] == [1.25, 2.5]


async def test_the_smallest_fraction_is_kept_exactly_and_a_sale_of_all_of_it_closes_the_position(service) -> None:
    acct = await individual_account(service)
    for qty in (0.0001, 0.1, 0.2):  # 0.1 + 0.2 is 0.30000000000000004 in floats: the paper ledger keeps 0.3001
        await preview_and_place(service, "equity", market(acct, "B", qty))
    held = await position(service, acct)
    assert held is not None and held["quantity"] == 0.3001
    await preview_and_place(service, "equity", market(acct, "S", 0.3001))
    assert await position(service, acct) is None
    assert [t["quantity"] for t in await trades(service, acct)] == [-0.3001, 0.2, 0.1, 0.0001]  # newest first
    closed = await get(service, f"/accounts/{acct}/closed-lots/{SYMBOL}")
    assert sorted(lot["quantity"] for lot in closed) == [0.0001, 0.1, 0.2]  # one sale closes the three lots FIFO


async def test_a_limit_day_order_may_be_fractional_and_a_replace_may_change_it_to_a_fraction(service) -> None:
    acct = await individual_account(service)
    limit = round(await last_price(service, SYMBOL) * 0.8, 2)  # rests OPEN
    body = {**market(acct, "B", 1.5), "priceTypeCode": "L", "limitPrice": limit, "tifCode": "D"}
    placed = await preview_and_place(service, "equity", body)
    assert placed["status"] == "OPEN"
    replace = {**body, "qty": 0.75, "orig_conf_num": placed["conf_num"]}
    status, preview = await service.call("POST", f"{API}/orders/replace/preview", json=replace)
    assert status == 200, preview
    status, replaced = await service.call(
        "POST", f"{API}/orders/replace/place", json={**replace, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, replaced
    new = next(
        o for o in await order_status(service, acct) if o["id_detail"]["conf_num"] == replaced["data"]["conf_num"]
    )
    assert (new["status_detail"]["status"], new["order_detail"]["qty"]) == ("OPEN", 0.75)


async def test_a_precision_finer_than_a_ten_thousandth_of_a_share_is_refused_naming_qty(service) -> None:
    acct = await individual_account(service)
    error = await refused(service, "equity", market(acct, "B", 2.00005))
    assert error["code"] == "VALIDATION_ERROR"
    (problem,) = error["details"]
    assert problem["field"] == "qty" and "at most 4 decimal places" in problem["message"]
    assert "0.0001" in problem["message"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"priceTypeCode": "S", "stopPrice": 9999.0}, "market (M) and limit (L) orders only"),
        ({"priceTypeCode": "L", "limitPrice": 100.0, "tifCode": "G"}, "day (D) orders only"),
        ({"orderActionCode": "SS"}, "never with SS"),
        ({"orderActionCode": "BC"}, "never with BC"),
    ],
)
async def test_a_fraction_on_an_order_that_may_not_have_one_is_refused_naming_qty(
    service, change: dict[str, Any], words: str
) -> None:
    acct = await individual_account(service)
    error = await refused(service, "equity", {**market(acct, "B", 2.5), **change})
    assert error["code"] == "VALIDATION_ERROR"
    (problem,) = error["details"]
    assert problem["field"] == "qty" and words in problem["message"], problem
    _, whole = await service.call("POST", f"{API}/orders/equity/preview", json={**market(acct, "B", 2), **change})
    assert whole["error"] is None or whole["error"]["code"] != "VALIDATION_ERROR", whole  # the same order, whole


async def test_a_fractional_option_contract_is_refused_naming_qty(service) -> None:
    acct = await individual_account(service)
    call, _, _, _ = await option_symbols(service)
    body = {"acctNum": acct, "symbol": call, "orderActionCode": "BC", "qty": 1.5, "priceTypeCode": "M"}
    error = await refused(service, "option", body)
    assert error["code"] == "VALIDATION_ERROR" and [d["field"] for d in error["details"]] == ["qty"]


async def test_a_conditional_leg_stays_whole_shares(service) -> None:
    acct = await individual_account(service)
    price = await last_price(service, SYMBOL)
    leg = {"symbol": SYMBOL, "order_action_code": "B", "price_type_code": "L", "limit_price": round(price * 0.8, 2)}
    body = {
        "acct_num": acct,
        "cond_order_type_code": "OCO",
        "legs": [{**leg, "qty": 1.5}, {**leg, "qty": 1, "limit_price": round(price * 0.7, 2)}],
    }
    error = await refused(service, "conditional", body)
    assert error["code"] == "VALIDATION_ERROR" and [d["field"] for d in error["details"]] == ["legs.0.qty"]


async def test_a_world_written_by_the_whole_share_version_opens_unchanged_and_takes_fractions(
    start_service, tmp_path: Path
) -> None:
    # The dump is what the previous version wrote: the seeded world, then 10 MSFT bought and 3 sold at market.
    paper = tmp_path / "data" / "paper"
    paper.mkdir(mode=0o700, parents=True)
    database = paper / "paper.sqlite3"
    with sqlite3.connect(database) as conn:
        conn.executescript(OLD_WORLD.read_text())
    database.chmod(0o600)
    service = await start_service(clock=ManualClock(), live_trading="true")
    await service.login()
    acct = await individual_account(service)
    held = {p["symbol"]: (p["quantity"], p["cost_basis"]) for p in await get(service, f"/accounts/{acct}/positions")}
    assert held == {
        "AAPL": (180.0, 38415.2),
        "MSFT": (62.0, 24949.58),
        "NVDA": (250.0, 23598.0),
        "SPY": (60.0, 33597.6),
        "AAPL261218C295": (-1.0, -268.33),
        "SPY261218P635": (2.0, 929.3),
    }
    old_orders = [
        (o["order_detail"]["action"], o["status_detail"]["qty_exec"]) for o in await order_status(service, acct)
    ]
    assert sorted(old_orders) == [("B", 10.0), ("S", 3.0)]

    await preview_and_place(service, "equity", market(acct, "S", 0.5, "MSFT"))
    msft = await position(service, acct, "MSFT")
    assert msft is not None and msft["quantity"] == 61.5


async def test_the_openapi_says_an_equity_qty_is_a_number_with_its_precision_and_where_fractions_go(service) -> None:
    status, spec = await service.call("GET", "/docs/openapi.json")
    assert status == 200
    schemas = spec["components"]["schemas"]
    for path in ("/api/v1/orders/equity/preview", "/api/v1/orders/equity/place", "/api/v1/orders/replace/preview"):
        ref = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        qty = schemas[ref.rsplit("/", 1)[-1]]["properties"]["qty"]
        assert qty["type"] == "number" and qty["exclusiveMinimum"] == 0, path
        for words in ("4 decimal places", "0.0001", "market (M)", "limit (L)", "day (D)", "Fidelity: whole shares"):
            assert words in qty["description"], (path, words)
    ref = spec["paths"]["/api/v1/orders/option/preview"]["post"]["requestBody"]["content"]["application/json"]
    option_qty = schemas[ref["schema"]["$ref"].rsplit("/", 1)[-1]]["properties"]["qty"]
    assert option_qty["type"] == "integer"  # contracts stay whole
