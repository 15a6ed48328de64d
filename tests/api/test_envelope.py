"""Every response uses the envelope and carries X-Request-ID, whatever goes wrong."""

from __future__ import annotations

import logging

import pytest

from tests.api import routes_for_tests


@pytest.fixture
async def service(start_service):
    return await start_service(extra_tables=[routes_for_tests.routes])


async def assert_error(response, status: int, code: str) -> dict:
    assert response.status == status
    assert response.headers["X-Request-ID"]
    assert response.content_type == "application/json"
    body = await response.json()
    assert body["ok"] is False and body["data"] is None
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body


async def test_success_envelope_and_request_id(service) -> None:
    async with service.http.get(service.url("/api/v1/health")) as response:
        assert response.status == 200
        assert len(response.headers["X-Request-ID"]) >= 16
        body = await response.json()
    assert body["ok"] is True and body["error"] is None
    assert body["data"]["status"] == "ok" and body["data"]["broker"] == "paper"


async def test_request_id_offered_by_the_client_is_echoed_and_bad_ones_replaced(service) -> None:
    async with service.http.get(service.url("/api/v1/health"), headers={"X-Request-ID": "my-script.42"}) as r:
        assert r.headers["X-Request-ID"] == "my-script.42"
    async with service.http.get(service.url("/api/v1/health"), headers={"X-Request-ID": "bad id\twith spaces"}) as r:
        assert r.headers["X-Request-ID"] != "bad id\twith spaces"


async def test_unknown_path_is_404_not_found(service) -> None:
    async with service.http.get(service.url("/api/v1/does-not-exist"), headers=service.auth) as response:
        body = await assert_error(response, 404, "NOT_FOUND")
    assert "/api/v1/does-not-exist" in body["error"]["message"]


async def test_wrong_method_is_405_with_allowed_methods(service) -> None:
    async with service.http.delete(service.url("/api/v1/health"), headers=service.auth) as response:
        body = await assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers["Allow"] == "GET"  # RFC 9110 asks for it on every 405
    assert body["error"]["details"] == {"allowed_methods": ["GET"]}


@pytest.mark.parametrize(
    ("data", "content_type", "fragment"),
    [
        ('{"name": "a", ', "application/json", "not valid JSON at line 1"),
        ("", "application/json", "body is empty"),
        ("name=a", "application/x-www-form-urlencoded", "not valid JSON"),
        ("--x--", "multipart/form-data; boundary=x", "not supported"),
    ],
)
async def test_malformed_body_is_400(service, data: str, content_type: str, fragment: str) -> None:
    headers = {**service.auth, "Content-Type": content_type}
    async with service.http.post(service.url("/api/v1/_test/echo"), data=data, headers=headers) as response:
        body = await assert_error(response, 400, "MALFORMED_REQUEST")
    assert fragment in body["error"]["message"]


async def test_validation_failure_is_422_naming_each_bad_field(service) -> None:
    payload = {"name": "", "qty": -1, "side": "X", "extra": 1}
    async with service.http.post(service.url("/api/v1/_test/echo"), json=payload, headers=service.auth) as response:
        body = await assert_error(response, 422, "VALIDATION_ERROR")
    fields = {detail["field"] for detail in body["error"]["details"]}
    assert fields == {"name", "qty", "side", "extra"}
    assert all(detail["location"] == "body" for detail in body["error"]["details"])
    assert "name" in body["error"]["message"] and "qty" in body["error"]["message"]


async def test_json_labelled_as_form_data_is_read_as_json(service) -> None:
    headers = {**service.auth, "Content-Type": "application/x-www-form-urlencoded"}  # what `curl -d` sends
    payload = '{"name": "a", "qty": 1, "side": "S"}'
    async with service.http.post(service.url("/api/v1/_test/echo"), data=payload, headers=headers) as response:
        assert response.status == 200
        assert (await response.json())["data"]["side"] == "S"


async def test_valid_body_passes(service) -> None:
    payload = {"name": "a", "qty": 2, "side": "B"}
    async with service.http.post(service.url("/api/v1/_test/echo"), json=payload, headers=service.auth) as response:
        assert response.status == 200
        assert (await response.json())["data"] == {"name": "a", "qty": 2.0, "side": "B"}


async def test_list_query_accepts_commas_and_repeats_and_rejects_unknown_parameters(service) -> None:
    url = service.url("/api/v1/_test/items?symbols=AAPL,MSFT&symbols=SPY&limit=5")
    async with service.http.get(url, headers=service.auth) as response:
        assert (await response.json())["data"] == {"symbols": ["AAPL", "MSFT", "SPY"], "limit": 5}
    async with service.http.get(service.url("/api/v1/_test/items?symbol=AAPL"), headers=service.auth) as response:
        body = await assert_error(response, 422, "VALIDATION_ERROR")
    assert {d["field"] for d in body["error"]["details"]} == {"symbols", "symbol"}
    async with service.http.get(service.url("/api/v1/health?verbose=1")) as response:
        await assert_error(response, 422, "VALIDATION_ERROR")


async def test_unexpected_exception_is_500_without_traceback(service, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    async with service.http.get(service.url("/api/v1/_test/boom"), headers=service.auth) as response:
        body = await assert_error(response, 500, "INTERNAL_ERROR")
        request_id = response.headers["X-Request-ID"]
        text = str(body)
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert request_id in body["error"]["message"]
    assert any(request_id in record.getMessage() and record.exc_info for record in caplog.records)


async def test_body_over_the_limit_is_413(start_service) -> None:
    service = await start_service(extra_tables=[routes_for_tests.routes], max_body_bytes="2048")
    payload = '{"name": "' + "x" * 4000 + '", "qty": 1, "side": "B"}'
    headers = {**service.auth, "Content-Type": "application/json"}
    async with service.http.post(service.url("/api/v1/_test/echo"), data=payload, headers=headers) as response:
        body = await assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert "2048" in body["error"]["message"]


async def test_chunked_body_over_the_limit_is_413(start_service) -> None:
    service = await start_service(extra_tables=[routes_for_tests.routes], max_body_bytes="2048")

    async def chunks():
        yield b'{"name": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'", "qty": 1, "side": "B"}'

    headers = {**service.auth, "Content-Type": "application/json"}
    async with service.http.post(service.url("/api/v1/_test/echo"), data=chunks(), headers=headers) as response:
        await assert_error(response, 413, "PAYLOAD_TOO_LARGE")


async def test_health_follows_the_live_trading_switch(service) -> None:
    async with service.http.get(service.url("/api/v1/health")) as response:
        assert (await response.json())["data"]["live_trading"] is False
    service.context.live.set(True, "test")
    async with service.http.get(service.url("/api/v1/health")) as response:
        assert (await response.json())["data"]["live_trading"] is True
