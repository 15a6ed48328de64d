"""Account events over SSE through the real server on paper: fills with ids, resume, status and the 503 path."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ftdesk.brokers.paper.feeds import PaperAccountEventFeed
from ftdesk.domain.accounts import AccountType
from tests.api.test_streaming_api import SseFrame, SseReader
from tests.conftest import RunningService
from tests.fakes.clock import ManualClock

API = "/api/v1"


@contextlib.asynccontextmanager
async def open_events(
    service: RunningService, headers: dict[str, str] | None = None, params: dict[str, str] | None = None
) -> AsyncIterator[SseReader]:
    """Open the event stream; leaving the block drops the connection."""
    response = await service.http.get(
        service.url(f"{API}/streaming/events"), headers={**service.auth, **(headers or {})}, params=params
    )
    assert response.status == 200, await response.text()
    try:
        yield SseReader(response)
    finally:
        response.close()  # release() would read the never-ending body


async def opening_status(stream: SseReader) -> SseFrame:
    """Read the retry block and the first status frame; return the status frame."""
    retry = await stream.next()
    assert retry is not None and retry.fields == {"retry": "3000"}
    status = await stream.next()
    assert status is not None and status.event == "status"
    return status


def fill_of(conf_num: str) -> Any:
    return lambda f: (
        f.event == "beps" and f.data["event_type"] == "ORDER_FILL" and f.data["desc"]["conf_num"] == conf_num
    )


async def buy_at_market(service: RunningService, acct: str, qty: int = 1) -> str:
    """Preview and place an equity market buy of AAPL; return its confirmation number."""
    body = {"acctNum": acct, "symbol": "AAPL", "orderActionCode": "B", "qty": qty, "priceTypeCode": "M", "tifCode": "D"}
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 200, preview
    conf = preview["data"]["conf_num"]
    status, placed = await service.call("POST", f"{API}/orders/equity/place", json={**body, "confNum": conf})
    assert status == 200, placed
    return str(conf)


async def individual_account(service: RunningService) -> str:
    accounts = await service.context.broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


def ids(frames: list[SseFrame]) -> list[int]:
    return [int(f.fields["id"]) for f in frames if f.event == "beps"]


async def test_fills_arrive_with_ids_and_a_resume_replays_only_the_later_events(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    async with open_events(service) as stream:
        # No session is needed to connect: the stream says it waits for one.
        assert (await opening_status(stream)).data["state"] == "waiting_for_session"
        await service.login()
        acct = await individual_account(service)
        conf1 = await buy_at_market(service, acct)
        seen = await stream.until(fill_of(conf1))
        fill = seen[-1]
        # The spec's name on paper too; the code of the Fidelity event it stands for kept beside it.
        assert (fill.data["category"], fill.data["source"], fill.data["desc"]["upstream_code"]) == (
            "order",
            "paper",
            "MFCEX",
        )
        assert set(fill.data) == {"event_type", "category", "desc", "time", "source"}
        assert fill.data["desc"]["symbol"] == "AAPL" and fill.data["desc"]["acct_num"] == acct
        got = ids(seen)
        assert got == list(range(1, len(got) + 1)), "ids start at 1 and increase by one"
        assert all("id" not in f.fields for f in seen if f.event == "status"), "status frames carry no id"
        last_id = got[-1]

    conf2 = await buy_at_market(service, acct)  # placed while no stream is open
    async with open_events(service, headers={"Last-Event-ID": str(last_id)}) as resumed:
        await opening_status(resumed)
        replayed = await resumed.until(fill_of(conf2))
        got = ids(replayed)
        assert got == list(range(last_id + 1, last_id + 1 + len(got))), "only the events after the id, in order"
        assert not any(fill_of(conf1)(f) for f in replayed)
        assert not any(f.event == "status" and f.data["events_missed"] for f in replayed)

    _, body = await service.call("GET", f"{API}/streaming/status")
    beps = body["data"]["beps"]
    assert beps["state"] == "connected" and beps["unavailable_reason"] is None
    assert beps["last_event_id"] >= got[-1] and beps["buffered"] == beps["last_event_id"]


async def test_an_id_from_before_a_restart_is_reported_missed_and_everything_buffered_follows(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    await service.login()
    conf = await buy_at_market(service, await individual_account(service))
    async with open_events(service, params={"last_event_id": "5000"}) as stream:
        assert (await opening_status(stream)).data["events_missed"] is False
        missed = await stream.next()
        assert missed is not None and missed.event == "status"
        assert missed.data["events_missed"] is True and missed.data["message"]
        replayed = await stream.until(fill_of(conf))
        assert ids(replayed)[0] == 1, "every buffered event is replayed"


async def test_a_malformed_last_event_id_is_a_validation_error(start_service) -> None:
    service = await start_service()
    status, body = await service.call("GET", f"{API}/streaming/events", headers={"Last-Event-ID": "abc"})
    assert status == 422 and body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"][0]["field"] == "Last-Event-ID"
    status, body = await service.call("GET", f"{API}/streaming/events", params={"last_event_id": "-1"})
    assert status == 422 and body["error"]["details"][0]["field"] == "last_event_id"


async def test_the_key_may_come_in_the_query_for_browsers(start_service) -> None:
    service = await start_service()
    url = service.url(f"{API}/streaming/events")
    response = await service.http.get(url, params={"api_key": service.api_key})
    try:
        assert response.status == 200 and response.content_type == "text/event-stream"
        assert (await response.content.readline()).decode() == "retry: 3000\n"
    finally:
        response.close()
    async with service.http.get(url) as refused:
        assert refused.status == 403


async def test_a_feed_that_cannot_run_answers_503_with_its_reason(start_service, monkeypatch) -> None:
    reason = "Account events need FTSERVICE_BEPS_TOKEN, FTSERVICE_BEPS_HOST and FTSERVICE_BEPS_MID"
    monkeypatch.setattr(PaperAccountEventFeed, "unavailable_reason", lambda self: reason)
    service = await start_service()
    await service.login()
    status, body = await service.call("GET", f"{API}/streaming/events")
    assert status == 503 and body["ok"] is False
    assert body["error"]["code"] == "STREAMING_UNAVAILABLE" and body["error"]["message"] == reason
    _, body = await service.call("GET", f"{API}/streaming/status")
    assert body["data"]["beps"]["state"] == "disabled" and body["data"]["beps"]["unavailable_reason"] == reason


async def test_the_event_names_and_their_upstream_codes_are_documented_on_the_operation(start_service) -> None:
    service = await start_service()
    async with service.http.get(service.url("/docs/openapi.json")) as response:
        spec = await response.json()
    described = spec["paths"]["/api/v1/streaming/events"]["get"]["responses"]["200"]["description"]
    for line in ("`ORDER_FILL` (order): `MFCEX`", "`ORDER_CANCELED` (order): `CXL01`", "`PRICE_ALERT_ABOVE` (alert)"):
        assert line in described
    assert "ORDER_PARTIAL_FILL" in described and "`OTHER`" in described and "desc.upstream_code" in described
