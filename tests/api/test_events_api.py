"""Account events over SSE through the real server on paper: fills with ids, resume, status and the 503 path."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ftdesk.brokers.paper.feeds import PaperAccountEventFeed
from ftdesk.domain.accounts import AccountType
from ftdesk.streaming.event_consumer import NumberedEvent
from ftdesk.streaming.event_hub import first_event_id
from tests.api.test_streaming_api import SseFrame, SseReader
from tests.conftest import RunningService
from tests.fakes.clock import ManualClock
from tests.fakes.waiting import wait_until

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
    clock = ManualClock()
    service = await start_service(clock=clock, live_trading="true")
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
        first_id = first_event_id(clock.now())  # the run started at the clock's wall time; it has not moved
        assert got == list(range(first_id, first_id + len(got))), "ids start at the run's first id, one more each"
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
    assert beps["last_event_id"] >= got[-1] and beps["buffered"] == beps["last_event_id"] - first_id + 1


async def read_missed_status(stream: SseReader) -> SseFrame:
    """Read the opening status and the events_missed status after it; return the latter."""
    assert (await opening_status(stream)).data["events_missed"] is False
    missed = await stream.next()
    assert missed is not None and missed.event == "status" and "id" not in missed.fields
    assert missed.data["events_missed"] is True
    return missed


async def test_an_id_this_run_never_gave_out_is_reported_missed_and_everything_buffered_follows(
    start_service,
) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    await service.login()
    conf = await buy_at_market(service, await individual_account(service))
    beyond = service.context.events.first_id + 5000
    async with open_events(service, params={"last_event_id": str(beyond)}) as stream:
        assert "newer than any event" in (await read_missed_status(stream)).data["message"]
        replayed = await stream.until(fill_of(conf))
        assert ids(replayed)[0] == service.context.events.first_id, "every buffered event is replayed"


async def test_a_resume_across_a_restart_gets_every_event_of_the_new_run_and_the_missed_signal(
    start_service,
) -> None:
    clock = ManualClock()
    first_run = await start_service(clock=clock, live_trading="true")
    await first_run.login()
    acct = await individual_account(first_run)
    async with open_events(first_run) as stream:
        await opening_status(stream)
        conf = await buy_at_market(first_run, acct)
        last_seen = ids(await stream.until(fill_of(conf)))[-1]
    position_in_run = last_seen - first_run.context.events.first_id + 1
    await first_run.runtime.stop()

    await clock.advance(20)  # quitting and relaunching takes a moment
    second_run = await start_service(clock=clock, live_trading="true")  # the same data dir and clock
    await second_run.login()
    hub = second_run.context.events
    confs = [await buy_at_market(second_run, acct) for _ in range(2)]
    await wait_until(lambda: {c for item in hub.buffered() for c in confs if is_fill_of(item, c)} == set(confs))
    buffered = [item.id for item in hub.buffered()]
    assert len(buffered) > position_in_run, "the new run has given out more events than the client had seen"
    assert min(buffered) > last_seen, "ids keep increasing across the restart"

    async with open_events(second_run, headers={"Last-Event-ID": str(last_seen)}) as resumed:
        missed = await read_missed_status(resumed)
        assert "before the service last started" in missed.data["message"]
        replayed = await resumed.until(lambda f: f.event == "beps" and int(f.fields["id"]) == buffered[-1])
    assert ids(replayed) == buffered == list(range(hub.first_id, hub.first_id + len(buffered))), (
        "every event of the new run, from its first, none skipped"
    )
    assert all(any(fill_of(c)(f) for f in replayed) for c in confs)

    _, body = await second_run.call("GET", f"{API}/streaming/status")
    assert body["data"]["beps"]["last_event_id"] == hub.last_event_id >= buffered[-1]


def is_fill_of(item: NumberedEvent, conf_num: str) -> bool:
    """Say whether a buffered event is the fill of an order."""
    return item.event.event_type == "ORDER_FILL" and item.event.desc.get("conf_num") == conf_num


async def test_a_malformed_last_event_id_is_a_validation_error(start_service) -> None:
    service = await start_service()
    status, body = await service.call("GET", f"{API}/streaming/events", headers={"Last-Event-ID": "abc"})
    assert status == 422 and body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"][0]["field"] == "Last-Event-ID"
    # Longer than any id (and than int() takes): the same clear refusal, not an internal error.
    status, body = await service.call("GET", f"{API}/streaming/events", headers={"Last-Event-ID": "9" * 5000})
    assert status == 422 and body["error"]["details"][0]["field"] == "Last-Event-ID"
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
