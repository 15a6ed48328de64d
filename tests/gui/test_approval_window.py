"""The tray's approval window on a real paper service: a place from the assistant waits for the trader.

Approve places it; Reject, no answer in time, a halt meanwhile or the preview expiring meanwhile place nothing,
and the window says which. The service's clock is a test clock, so time-outs and expiries need no waiting.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ftdesk.gui.approval_window import ApprovalWindow
from tests.fakes.clock import ManualClock
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop
from tests.gui.test_cockpit import individual_account
from tests.gui.test_tray import log_in

API = "/api/v1"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "approval-window.png"


async def held_place(desktop: Desktop, acct: str, **headers: str) -> asyncio.Task[tuple[int, dict[str, Any]]]:
    """Preview a KO limit buy and start its place as the assistant's client does; the task ends with the answer."""
    (quote,) = await desktop.runtime.broker.quote_feed.snapshot(["KO"])
    body = {"acctNum": acct, "symbol": "KO", "orderActionCode": "B", "qty": 1200, "priceTypeCode": "L",
            "limitPrice": round(quote.last * 0.95, 2), "tifCode": "D"}  # fmt: skip
    status, preview = await desktop.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 200, preview
    sent = {"Authorization": f"Bearer {desktop.api_key}", "X-Ftdesk-Client": "mcp", **headers}

    async def place() -> tuple[int, dict[str, Any]]:
        url = desktop.runtime.url + f"{API}/orders/equity/place"
        json_body = {**body, "confNum": preview["data"]["conf_num"]}
        async with desktop.http.post(url, json=json_body, headers=sent) as response:
            return response.status, await response.json()

    return asyncio.create_task(place())


async def the_window(desktop: Desktop) -> ApprovalWindow:
    windows = desktop.app.approvals.windows
    await wait_until(lambda: len(windows) == 1)
    (window,) = windows.values()
    assert window.isVisible()
    return window


async def started(make_desktop, clock: ManualClock) -> tuple[Desktop, str]:
    desktop = await make_desktop(has_tray=False, clock=clock, FTSERVICE_LIVE_TRADING="true")
    await log_in(desktop)
    return desktop, await individual_account(desktop)


async def journal(desktop: Desktop, action: str) -> list[dict[str, Any]]:
    status, body = await desktop.call("GET", f"{API}/orders/journal")
    assert status == 200
    return [row for row in body["data"] if row["action"] == action]


async def test_approve_places_the_order_as_the_broker_understood_it(make_desktop) -> None:
    desktop, acct = await started(make_desktop, ManualClock())
    answer = await held_place(desktop, acct)
    window = await the_window(desktop)
    text = window.asker.text() + window.order.text()
    assert "the assistant (ftdesk mcp)" in text and "Buy 1,200 KO limit" in text and f"account {acct}" in text
    assert "The broker understood:" in text and "Estimated cost" in text
    assert "Nothing is placed unless you approve. It waits 60 s more." in window.state.text()
    assert window.reject_button.isDefault() and not window.approve_button.isDefault()
    if os.environ.get("FTDESK_SCREENSHOTS"):
        window.adjustSize()
        assert window.grab().save(str(SCREENSHOT))
    window.approve_button.click()
    status, body = await answer
    assert status == 200 and body["data"]["status"] == "OPEN", body
    assert desktop.app.approvals.windows == {} and not window.isVisible()
    [row] = await journal(desktop, "approval")
    assert row["outcome"] == "accepted" and "asked by the assistant (ftdesk mcp)" in row["message"]


async def test_reject_places_nothing(make_desktop) -> None:
    desktop, acct = await started(make_desktop, ManualClock())
    answer = await held_place(desktop, acct)
    window = await the_window(desktop)
    window.reject_button.click()
    status, body = await answer
    assert status == 403 and body["error"]["code"] == "APPROVAL_REJECTED"
    assert "The trader rejected this order in the tray" in body["error"]["message"]
    assert not window.isVisible()
    assert [row["error_code"] for row in await journal(desktop, "place")] == ["APPROVAL_REJECTED"]


async def test_no_answer_in_time_places_nothing_and_the_window_says_so(make_desktop) -> None:
    clock = ManualClock()
    desktop, acct = await started(make_desktop, clock)
    answer = await held_place(desktop, acct, **{"X-Ftdesk-Approval-Timeout": "20"})
    window = await the_window(desktop)
    await clock.advance(21)
    status, body = await answer
    assert status == 409 and body["error"]["code"] == "APPROVAL_TIMEOUT"
    assert window.state.text() == "No answer in time: nothing was placed." and not window.answerable
    window.approve_button.click()  # disabled: nothing happens
    assert [row["outcome"] for row in await journal(desktop, "approval")] == ["refused"]


async def test_a_halt_meanwhile_withdraws_it(make_desktop) -> None:
    desktop, acct = await started(make_desktop, ManualClock())
    answer = await held_place(desktop, acct)
    window = await the_window(desktop)
    desktop.app.window.halt_button.click()
    status, body = await answer
    assert status == 409 and body["error"]["code"] == "TRADING_HALTED"
    assert "can no longer be approved: trading was halted" in window.state.text() and not window.answerable
    assert [row["error_code"] for row in await journal(desktop, "place")] == ["TRADING_HALTED"]


async def test_a_preview_expiring_meanwhile_withdraws_it(make_desktop) -> None:
    clock = ManualClock()
    desktop, acct = await started(make_desktop, clock)
    answer = await held_place(desktop, acct, **{"X-Ftdesk-Approval-Timeout": "600"})
    window = await the_window(desktop)
    await clock.advance(301)  # the preview lives 300 s
    status, body = await answer
    assert status == 409 and body["error"]["code"] == "PREVIEW_REQUIRED", body
    assert body["error"]["details"]["reason"] == "expired"
    assert "the preview expired while it waited for approval" in window.state.text() and not window.answerable
