"""The OpenAPI description: generated from the route table, valid 3.1, served as JSON and as a page."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from ftdesk.service.errors import ERROR_TABLE
from ftdesk.service.routes import route_tables
from tests.api import routes_for_tests


@pytest.fixture
async def service(start_service):
    return await start_service(extra_tables=[routes_for_tests.routes])


async def fetch_spec(service, path: str = "/docs/openapi.json", headers=None) -> dict:
    async with service.http.get(service.url(path), headers=headers) as response:
        assert response.status == 200
        assert response.content_type == "application/json"
        return await response.json()


async def test_description_is_valid_openapi_3_1(service) -> None:
    spec = await fetch_spec(service)
    assert spec["openapi"] == "3.1.0"
    validate(spec)


async def test_docs_returns_json_to_programs(service) -> None:
    assert await fetch_spec(service, "/docs") == await fetch_spec(service)
    assert await fetch_spec(service, "/docs", headers={"Accept": "application/json"}) == await fetch_spec(service)


async def test_every_routed_endpoint_is_documented(service) -> None:
    spec = await fetch_spec(service)
    documented = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    endpoints = [ep for table in [*route_tables(), routes_for_tests.routes] for ep in table.endpoints]
    # WebSockets are not operations (a generator would make a GET of them that cannot work): the quote
    # WebSocket is a channel of the AsyncAPI document, which the description points to.
    assert documented == {(ep.method, ep.path) for ep in endpoints if ep.kind != "websocket"}
    assert ("GET", "/api/v1/health") in documented
    assert spec["externalDocs"]["url"] == "/docs/asyncapi.json" and "/docs/asyncapi.json" in spec["info"]["description"]
    async with service.http.get(service.url("/docs/asyncapi.json")) as response:
        channels = (await response.json())["channels"].values()
    assert "/api/v1/ws/quotes" in {channel["address"] for channel in channels}


async def test_security_scheme_envelope_and_error_responses(service) -> None:
    spec = await fetch_spec(service)
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    assert spec["security"] == [{"bearerAuth": []}]
    health = spec["paths"]["/api/v1/health"]["get"]
    assert health["security"] == []
    echo = spec["paths"]["/api/v1/_test/echo"]["post"]
    ok_schema = echo["responses"]["200"]["content"]["application/json"]["schema"]
    envelope = spec["components"]["schemas"][ok_schema["$ref"].rsplit("/", 1)[-1]]
    assert set(envelope["properties"]) == {"ok", "data", "error"}
    for status, code in [
        ("400", "MALFORMED_REQUEST"),
        ("403", "API_KEY_INVALID"),
        ("413", "PAYLOAD_TOO_LARGE"),
        ("422", "VALIDATION_ERROR"),
        ("500", "INTERNAL_ERROR"),
    ]:
        response = echo["responses"][status]
        assert code in response["content"]["application/json"]["examples"], (status, code)
        assert response["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope")
    body_schema = echo["requestBody"]["content"]["application/json"]["schema"]
    body = spec["components"]["schemas"][body_schema["$ref"].rsplit("/", 1)[-1]]
    assert body["properties"]["side"]["enum"] == ["B", "S"]
    assert body["properties"]["qty"]["exclusiveMinimum"] == 0


async def test_query_parameters_are_documented_with_list_style(service) -> None:
    spec = await fetch_spec(service)
    params = {p["name"]: p for p in spec["paths"]["/api/v1/_test/items"]["get"]["parameters"]}
    assert params["symbols"]["required"] is True and params["symbols"]["in"] == "query"
    assert params["symbols"]["schema"]["type"] == "array"
    assert params["limit"]["schema"]["maximum"] == 500 and params["limit"]["required"] is False


def test_every_error_code_is_unique_and_documented_with_a_status() -> None:
    # VALIDATION_ERROR alone has two statuses: 400 for JSON of the wrong shape, 422 for a bad value.
    codes = [(spec.code, spec.status) for spec in ERROR_TABLE.values()]
    assert len(codes) == len(set(codes))
    assert sorted(status for code, status in codes if code == "VALIDATION_ERROR") == [400, 422]
    assert len({code for code, _ in codes}) == len(codes) - 1
    spec_codes = {
        "AUTH_REQUIRED": 401,
        "SESSION_EXPIRED": 401,
        "LIVE_TRADING_DISABLED": 403,
        "API_KEY_INVALID": 403,
        "ORDER_REJECTED": 422,
        "BROKER_ERROR": 502,
    }
    by_code = {spec.code: spec.status for spec in ERROR_TABLE.values()}
    assert {code: by_code[code] for code in spec_codes} == spec_codes


async def test_docs_page_for_browsers_is_served_offline(service) -> None:
    headers = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    async with service.http.get(service.url("/docs"), headers=headers) as response:
        assert response.status == 200 and response.content_type == "text/html"
        assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
        page = await response.text()
    assert "http://" not in page and "https://" not in page
    import re

    assets = re.findall(r'(?:src|href)="(/docs/[^"]+)"', page)
    assert len(assets) >= 3
    for asset in assets:
        async with service.http.get(service.url(asset)) as response:
            assert response.status == 200, asset
            assert len(await response.read()) > 100
    async with service.http.get(service.url("/docs/init.js")) as response:
        assert "/docs/openapi.json" in await response.text()
