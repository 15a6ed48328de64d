"""The cockpit's reads and cancels through the running paper service: the order book and a journaled cancel."""

from __future__ import annotations

from datetime import UTC, date, datetime

from ftdesk.domain.clock import trading_day
from ftdesk.domain.events import account_event
from ftdesk.domain.orders import OrderStatus
from ftdesk.service.cockpit_access import CockpitAccess, fill_times, order_book
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


async def test_a_gtc_order_entered_earlier_and_filled_today_is_listed_by_its_fill_event(start_service) -> None:
    # Neither broker's order status says when an order executed, only when it was entered: the fill event does.
    service = await start_service(live_trading="true")
    await service.login()
    acct = await individual_account(service)
    resting = await resting_buy(service, acct)
    resting["confNum"] = await preview(service, resting)
    assert (await place(service, resting))[0] == 200
    (listed,) = await service.context.broker.orders.get_order_status(None)
    today = trading_day(service.context.clock.now())
    filled_now = listed.model_copy(
        update={
            "order_detail": listed.order_detail.model_copy(update={"entry_time": "2026-01-05T10:00:00-05:00"}),
            "status_detail": listed.status_detail.model_copy(
                update={"status": OrderStatus.FILLED, "qty_exec": listed.status_detail.qty, "qty_remaining": 0}
            ),
        }
    )
    conf = listed.id_detail.conf_num
    assert order_book([filled_now], today).filled_today == []  # entered on another day, no longer working

    moment = service.context.clock.now()
    fill = account_event("MFCEX", {"conf_num": conf, "acct_num": acct, "fill_qty": 1.0}, time=moment.isoformat())
    other_day = account_event("MFCEX", {"conf_num": conf}, time="2026-01-05T15:00:00+00:00")
    book = order_book([filled_now], today, fill_times([other_day, fill], today))
    assert [o.id_detail.conf_num for o in book.filled_today] == [conf]
    assert book.fill_times == {conf: moment}
