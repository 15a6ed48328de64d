"""Notifications: session expired, re-authenticated, upstream stream lost and back, order fills, errors."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest
from PySide6.QtCore import QObject, Signal

from ftdesk.domain.accounts import AccountType
from ftdesk.gui.application import UnexpectedErrors
from ftdesk.gui.notifications import Notifier
from ftdesk.logs import SecretRedactor
from tests.fakes.clock import ManualClock
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop
from tests.gui.test_tray import log_in


def titles(desktop: Desktop) -> list[str]:
    return [notification.title for notification in desktop.app.notifier.history]


async def test_expiry_is_announced_and_so_is_the_automatic_re_login(make_desktop) -> None:
    clock = ManualClock()
    desktop = await make_desktop(clock=clock, FTSERVICE_PAPER_SESSION_LIFETIME="60")
    await log_in(desktop, remember=True)
    await clock.advance(61)
    # The call that meets the expiry re-authenticates with the stored credentials and still succeeds.
    status, _body = await desktop.call("GET", "/api/v1/accounts")
    assert status == 200
    await wait_until(lambda: "Re-authenticated" in titles(desktop))
    assert titles(desktop) == ["Session expired", "Re-authenticated"]


async def test_expiry_without_re_auth_is_announced_once(make_desktop) -> None:
    clock = ManualClock()
    desktop = await make_desktop(clock=clock, FTSERVICE_PAPER_SESSION_LIFETIME="60", FTSERVICE_AUTO_REAUTH="false")
    await log_in(desktop)
    await clock.advance(61)
    for _ in range(3):
        status, _body = await desktop.call("GET", "/api/v1/accounts")
        assert status == 401
    await wait_until(lambda: "Session expired" in titles(desktop))
    assert titles(desktop) == ["Session expired"]
    assert "auto re-auth is off" in desktop.app.notifier.history[0].message


async def test_a_lost_market_data_stream_is_announced_and_so_is_its_return(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_STREAM_BACKOFF="0.3")
    await log_in(desktop)
    assert desktop.runtime.context is not None
    hub = desktop.runtime.context.quotes
    consumer = hub.open_consumer("sse")  # a symbol must be wanted for the upstream to open
    consumer.acquire(["AAPL"])
    try:
        await wait_until(lambda: desktop.bridge.status.quotes.value == "connected")
        desktop.runtime.broker.quote_feed.drop_connections()  # type: ignore[attr-defined]
        await wait_until(lambda: "Market-data stream lost" in titles(desktop))
        await wait_until(lambda: "Market-data stream back" in titles(desktop))
    finally:
        consumer.close()
    lost = desktop.app.notifier.history[0]
    assert lost.message.endswith("reconnecting")


async def test_an_order_fill_is_announced_from_the_account_event_stream(make_desktop) -> None:
    desktop = await make_desktop()
    await log_in(desktop)
    desktop.bridge.set_live_trading(True)
    accounts = await desktop.runtime.broker.accounts.get_accounts()
    acct = next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)
    order = {"acctNum": acct, "symbol": "KO", "orderActionCode": "B", "qty": 3, "priceTypeCode": "M", "tifCode": "D"}
    status, preview = await desktop.call("POST", "/api/v1/orders/equity/preview", json=order)
    assert status == 200, preview
    status, placed = await desktop.call(
        "POST", "/api/v1/orders/equity/place", json={**order, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    await wait_until(lambda: "Order filled" in titles(desktop))
    fill = next(n for n in desktop.app.notifier.history if n.title == "Order filled")
    assert fill.message.startswith("B 3 KO at ") and acct in fill.message
    # The bridge's own reader is not a client of the API.
    assert desktop.bridge.status.clients["events"] == 0


class Emitter(QObject):
    fired = Signal()


async def test_an_exception_in_a_slot_is_logged_and_shown_once_and_the_app_goes_on(caplog) -> None:
    notifier = Notifier()
    redactor = SecretRedactor(["hunter2-secret"])
    errors = UnexpectedErrors(notifier, redactor.scrub, "/data/logs")
    emitter = Emitter()

    def broken_slot() -> None:
        raise ValueError("bad value hunter2-secret")

    emitter.fired.connect(broken_slot)
    previous, sys.excepthook = sys.excepthook, errors.excepthook
    try:
        with caplog.at_level(logging.CRITICAL):
            emitter.fired.emit()
            emitter.fired.emit()
    finally:
        sys.excepthook = previous
    assert [n.title for n in notifier.history] == ["ftdesk hit an unexpected error"]
    message = notifier.history[0].message
    assert "ValueError" in message and "/data/logs" in message and "hunter2-secret" not in message
    assert sum("Unexpected error" in r.getMessage() for r in caplog.records) == 2


async def test_an_exception_in_a_loop_callback_is_shown_instead_of_lost() -> None:
    notifier = Notifier()
    errors = UnexpectedErrors(notifier, SecretRedactor().scrub, "/data/logs")
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(errors.loop_exception)
    done = asyncio.Event()

    def broken_callback() -> None:
        done.set()
        raise RuntimeError("callback broke")

    try:
        loop.call_soon(broken_callback)
        await done.wait()
        await wait_until(lambda: bool(notifier.history))
    finally:
        loop.set_exception_handler(previous)
    assert "RuntimeError: callback broke" in notifier.history[0].message


@pytest.mark.parametrize("has_tray", [False])
async def test_without_a_tray_notifications_are_listed_in_the_status_window(make_desktop, has_tray: bool) -> None:
    desktop = await make_desktop(has_tray=has_tray)
    desktop.bridge.copy_api_key()
    assert not desktop.app.notifier.uses_tray
    assert "API key copied" in desktop.app.window.messages.item(0).text()
