"""The cockpit's reads and cancels through the running paper service: the order book and a journaled cancel."""

from __future__ import annotations

from datetime import UTC, date, datetime

from ftdesk.domain.clock import trading_day
from ftdesk.domain.orders import OrderStatus
from ftdesk.service.cockpit_access import CockpitAccess
from tests.api.test_order_safety import individual_account, journal, orders, place, preview, resting_buy

API = "/api/v1"


async def test_open_orders_and_fills_are_read_and_a_cancel_is_journaled(start_service) -> None:
    service = await start_service(live_trading="true")
    await service.login()
    cockpit = CockpitAccess(lambda: service.context)
    acct = await individual_account(service)
    resting = await resting_buy(service, acct)
    resting["confNum"] = await preview(service, resting)
    status, answer = await place(service, resting)
    assert status == 200, answer
    conf = answer["data"]["conf_num"]
    market = {"acctNum": acct, "symbol": "KO", "orderActionCode": "B", "qty": 3, "priceTypeCode": "M"}
    market["confNum"] = await preview(service, market)
    assert (await place(service, market))[0] == 200

    book = await cockpit.order_book()
    assert [o.id_detail.conf_num for o in book.open] == [conf]
    assert [(o.order_detail.symbol, o.status_detail.qty_exec) for o in book.filled_today] == [("KO", 3)]
    positions = {p.symbol: p for p in await cockpit.positions(acct)}
    assert positions["KO"].quantity >= 3

    result = await cockpit.cancel(book.open[0], source="cockpit")
    assert result.cancel_confirm_detail[0].conf_num == conf
    assert (
        next(o for o in await orders(service) if o["id_detail"]["conf_num"] == conf)["status_detail"]["status"]
        == OrderStatus.CANCELED.value
    )
    assert (await cockpit.order_book()).open == []
    (entry,) = [entry for entry in await journal(service) if entry["action"] == "cancel"]
    assert entry["endpoint"] == "DESKTOP cancel (cockpit)" and entry["conf_nums"] == [conf]
    assert entry["outcome"] == "accepted" and entry["side"] == "B" and entry["acct_num"] == acct


def test_the_trading_day_is_the_new_york_date() -> None:
    assert trading_day(datetime(2026, 11, 26, 3, 30, tzinfo=UTC)) == date(2026, 11, 25)
    assert trading_day(datetime(2026, 11, 26, 5, 30, tzinfo=UTC)) == date(2026, 11, 26)
