"""The cockpit in the status window, on a real paper service: rows follow the account events, Cancel works.

The slow P&L poll is an hour in these tests (see ``DesktopRig.build``), so every row that appears without a
click came through the service's own account events.
"""

from __future__ import annotations

from typing import Any

from ftdesk.domain.accounts import AccountType
from ftdesk.gui.cockpit_rows import ORDER_COLUMNS, POSITION_COLUMNS
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop
from tests.gui.test_tray import log_in

API = "/api/v1"


async def individual_account(desktop: Desktop) -> str:
    accounts = await desktop.runtime.broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


async def place(desktop: Desktop, body: dict[str, Any]) -> str:
    """Preview and place an equity order through the API (as a script would); return its conf_num."""
    status, answer = await desktop.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 200, answer
    status, answer = await desktop.call(
        "POST", f"{API}/orders/equity/place", json={**body, "confNum": answer["data"]["conf_num"]}
    )
    assert status == 200, answer
    return str(answer["data"]["conf_num"])


async def resting_buy(desktop: Desktop, acct: str, symbol: str = "AAPL") -> str:
    """Place a limit buy far below the market (it stays open); return its conf_num."""
    (quote,) = await desktop.runtime.broker.quote_feed.snapshot([symbol])
    body = {
        "acctNum": acct,
        "symbol": symbol,
        "orderActionCode": "B",
        "qty": 1,
        "priceTypeCode": "L",
        "limitPrice": round(quote.last * 0.95, 2),  # 5% off: stays open, inside the 10% price-distance limit
        "tifCode": "G",
    }
    return await place(desktop, body)


async def order_status(desktop: Desktop, conf_num: str) -> str:
    status, body = await desktop.call("GET", f"{API}/orders/status")
    assert status == 200, body
    return str(next(o for o in body["data"] if o["id_detail"]["conf_num"] == conf_num)["status_detail"]["status"])


def column(table: Any, name: str, columns: tuple[str, ...]) -> list[str]:
    index = columns.index(name)
    return [table.item(row, index).text() for row in range(table.rowCount()) if table.item(row, index)]


async def trading_desktop(make_desktop) -> tuple[Desktop, str]:
    desktop = await make_desktop(has_tray=False, FTSERVICE_LIVE_TRADING="true")
    await log_in(desktop)
    acct = await individual_account(desktop)
    cockpit = desktop.app.window.cockpit
    await wait_until(lambda: acct in " ".join(column(cockpit.positions, "Symbol", POSITION_COLUMNS)))
    return desktop, acct


async def test_a_new_open_order_and_a_fill_appear_without_a_refresh(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    cockpit = desktop.app.window.cockpit
    reads = desktop.app.feed.reads
    conf = await resting_buy(desktop, acct)
    await wait_until(lambda: column(cockpit.orders, "Order", ORDER_COLUMNS) == [conf])
    assert cockpit.orders_box.title() == "Open orders (1)"
    assert column(cockpit.orders, "Symbol", ORDER_COLUMNS) == ["AAPL"]
    assert cockpit.cancel_button(conf) is not None

    await place(desktop, {"acctNum": acct, "symbol": "KO", "orderActionCode": "B", "qty": 5, "priceTypeCode": "M"})
    await wait_until(lambda: cockpit.fills.rowCount() == 1)
    fill = [cockpit.fills.item(0, c).text() for c in range(cockpit.fills.columnCount())]
    assert fill[1] == acct and fill[3] == "KO" and fill[5] == "5 of 5"
    await wait_until(lambda: "KO" in column(cockpit.positions, "Symbol", POSITION_COLUMNS))
    assert desktop.app.feed.reads > reads  # read because of the events: the poll is an hour away
    assert cockpit.pnl_label.text().startswith("Day P&L ")


async def test_cancel_on_a_row_cancels_that_order_at_the_service(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    cockpit = desktop.app.window.cockpit
    keep = await resting_buy(desktop, acct, "AAPL")
    cancel = await resting_buy(desktop, acct, "MSFT")
    await wait_until(lambda: sorted(column(cockpit.orders, "Order", ORDER_COLUMNS)) == sorted([keep, cancel]))
    button = cockpit.cancel_button(cancel)
    assert button is not None
    button.click()
    await wait_until(lambda: column(cockpit.orders, "Order", ORDER_COLUMNS) == [keep])
    assert await order_status(desktop, cancel) == "CANCELED"
    assert await order_status(desktop, keep) == "OPEN"
    _status, body = await desktop.call("GET", f"{API}/orders/journal")
    (entry,) = [e for e in body["data"] if e["action"] == "cancel"]
    assert entry["conf_nums"] == [cancel] and entry["outcome"] == "accepted"
    assert entry["endpoint"] == "DESKTOP cancel (status window)"


async def test_cancel_all_cancels_every_open_order(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    cockpit = desktop.app.window.cockpit
    confs = [await resting_buy(desktop, acct, symbol) for symbol in ("AAPL", "MSFT", "KO")]
    await wait_until(lambda: cockpit.orders.rowCount() == 3)
    assert cockpit.cancel_all_button.isEnabled()
    cockpit.cancel_all_button.click()
    await wait_until(lambda: cockpit.orders.rowCount() == 0)
    assert [await order_status(desktop, conf) for conf in confs] == ["CANCELED"] * 3
    assert not cockpit.cancel_all_button.isEnabled()


async def test_the_pnl_poll_runs_only_while_the_window_is_visible(make_desktop) -> None:
    desktop, _acct = await trading_desktop(make_desktop)
    window, feed = desktop.app.window, desktop.app.feed
    assert window.isVisible() and feed.polling
    window.close()
    assert not window.isVisible() and not feed.polling
    window.bring_to_front()
    assert feed.polling


async def test_the_tray_tooltip_carries_the_days_pnl(make_desktop) -> None:
    desktop = await make_desktop(has_tray=True, FTSERVICE_LIVE_TRADING="true")
    tray = desktop.app.tray
    assert tray is not None
    assert "Day P&L" not in tray.icon.toolTip()
    await log_in(desktop)
    await wait_until(lambda: "Day P&L: " in tray.icon.toolTip())
    total = desktop.app.feed.snapshot.day_pnl()
    assert total is not None and f"Day P&L: {total:+,.2f} (as of " in tray.icon.toolTip()
    await desktop.bridge.logout()
    await wait_until(lambda: "Day P&L" not in tray.icon.toolTip())


async def test_logging_out_empties_the_cockpit(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    cockpit = desktop.app.window.cockpit
    conf = await resting_buy(desktop, acct)
    await wait_until(lambda: column(cockpit.orders, "Order", ORDER_COLUMNS) == [conf])
    await desktop.bridge.logout()
    await wait_until(lambda: cockpit.orders.rowCount() == 0 and cockpit.positions.rowCount() == 0)
    assert cockpit.freshness_label.text() == "Log in to see positions and orders"
    assert not cockpit.refresh_button.isEnabled()
