"""The HTTP core's pure parts: error mapping, header profiles and the token bucket."""

from __future__ import annotations

import asyncio
import re

import pytest

from ftdesk.brokers.fidelity.http import Profile, new_request_id, profile_headers
from ftdesk.brokers.fidelity.politeness import TokenBucket
from ftdesk.brokers.fidelity.upstream_answer import (
    UpstreamResponse,
    parse_upstream_detail,
    raise_for_business_error,
    raise_for_status,
)
from ftdesk.domain.errors import BrokerError, SessionExpired
from tests.fakes.clock import ManualClock

CANCEL_REPLACE_ERROR = {
    "cancelandreplace": {
        "acctNum": "Z21772945",
        "orderNumOrig": "24C0SZD3",
        "orderConfirmMsgs": {
            "orderConfirmMessage": [
                {
                    "message": "other",
                    "detail": "Code=MA5010,Text=The limit price entered is too far away from the last trade for "
                    "this security. Please correct and re-submit your order.,Source=",
                    "source": "EquityOptionPreview",
                    "code": "2999",
                    "type": "error",
                }
            ]
        },
        "orderConfirmDetail": {"respTypeCode": "E", "errorCategories": ["UNKNOWN"], "confNum": "24C0SZF5"},
    }
}


def response(status: int, body: bytes = b"", content_type: str = "application/json") -> UpstreamResponse:
    return UpstreamResponse(status, content_type, body, "https://dpservice.fidelity.com/x")


def test_a_resp_type_e_body_becomes_a_broker_error_with_the_upstream_text() -> None:
    with pytest.raises(BrokerError, match=r"limit price entered is too far away") as caught:
        raise_for_business_error(CANCEL_REPLACE_ERROR, "replace preview")
    assert caught.value.details == {"upstream_codes": ["MA5010"]}
    assert "Code=" not in caught.value.message


def test_accepted_and_warning_bodies_pass() -> None:
    raise_for_business_error({"place": {"orderConfirmDetail": {"respTypeCode": "A"}}}, "place")
    warning = {
        "respTypeCode": "V",
        "sysMsgs": {"sysMsg": [{"detail": "Code=354020,Text=day trade", "type": "warning"}]},
    }
    raise_for_business_error(warning, "preview")


def test_parse_upstream_detail() -> None:
    assert parse_upstream_detail("Code=000000,Text=Success,Source=ConditionalOrder") == ("000000", "Success")
    assert parse_upstream_detail("plain words") == (None, "plain words")


@pytest.mark.parametrize("status", [401, 403])
def test_auth_statuses_mean_expiry(status: int) -> None:
    with pytest.raises(SessionExpired):
        raise_for_status(response(status), "positions request")


def test_other_statuses_are_broker_errors_with_the_upstream_message() -> None:
    with pytest.raises(BrokerError, match=r"HTTP 503\): Service Unavailable") as caught:
        raise_for_status(response(503, b"Service Unavailable", "text/plain"), "positions request")
    assert not isinstance(caught.value, SessionExpired)
    raise_for_status(response(204), "x")


def test_html_where_json_was_expected_means_expiry() -> None:
    with pytest.raises(SessionExpired):
        response(200, b"<!DOCTYPE html><html></html>", "text/html").json()
    with pytest.raises(BrokerError):
        response(200, b"{not json").json()
    assert response(200, b"").json() is None


def test_header_profiles() -> None:
    login = profile_headers(Profile.LOGIN, "4.5.1.4")
    data = profile_headers(Profile.DATA, "4.5.1.4")
    assert login["AppId"] == "RETAIL-CC-LOGIN-SDK" and login["Accept-Token-Type"] == "ET"
    assert data["AppId"] == "AP149323" and data["User-Agent"] == "ATPNext/4.5.1.4 FTPlusDesktop/4.5.1.4"
    ids = {new_request_id() for _ in range(50)}
    assert len(ids) == 50 and all(re.fullmatch(r"REQ[0-9a-f]{32}", i) for i in ids)


async def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    for _ in range(3):
        await asyncio.wait_for(bucket.acquire(), 1)
    fourth = asyncio.create_task(bucket.acquire())
    await clock.advance(0.4)
    assert not fourth.done()
    await clock.advance(0.1)
    await asyncio.wait_for(fourth, 1)
    await clock.advance(10)  # refill is capped at the burst
    for _ in range(3):
        await asyncio.wait_for(bucket.acquire(), 1)
    fifth = asyncio.create_task(bucket.acquire())
    await clock.advance(0.1)
    assert not fifth.done()
    fifth.cancel()
    with pytest.raises(asyncio.CancelledError):
        await fifth
    sixth = asyncio.create_task(bucket.acquire())  # the cancelled waiter took nothing
    await clock.advance(0.4)
    await asyncio.wait_for(sixth, 1)
