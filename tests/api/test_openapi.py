"""The OpenAPI description: generated from the route table, valid 3.1, served as JSON and as a page."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate

from ftdesk.service.routes import route_tables
from ftdesk.service.web.errors import ERROR_TABLE
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
    # The constant null member (error on success, data on failure) is sent but not described: generators fail
    # on a property of JSON type null.
    assert set(envelope["properties"]) == set(envelope["required"]) == {"ok", "data"}
    failure = spec["components"]["schemas"]["ErrorEnvelope"]
    assert set(failure["properties"]) == set(failure["required"]) == {"ok", "error"}
    for name, schema in spec["components"]["schemas"].items():
        for prop, prop_schema in schema.get("properties", {}).items():
            assert prop_schema.get("type") != "null", (name, prop)
            assert "title" not in prop_schema, (name, prop)  # generators make a model of a titled property
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


# --- what generators need --------------------------------------------------------------------------------------


def component(spec: dict, ref_or_schema: dict) -> dict:
    """Return the component a schema refers to (or the schema itself)."""
    ref = ref_or_schema.get("$ref")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else ref_or_schema


def operations(spec: dict) -> list[dict]:
    return [op for item in spec["paths"].values() for op in item.values()]


@pytest.fixture
async def product(start_service):
    """The service with the product's routes only (no test routes)."""
    return await start_service()


async def test_operation_ids_are_short_unique_snake_case_verbs(product) -> None:
    ids = [op["operationId"] for op in operations(await fetch_spec(product))]
    assert len(ids) == len(set(ids))
    verbs = {"get", "list", "preview", "place", "cancel", "replace", "save", "delete", "create", "update", "put",
             "store", "accept", "login", "logout", "subscribe", "unsubscribe", "stream", "search", "analyze", "run",
             "show", "halt", "resume"}  # fmt: skip
    for operation_id in ids:
        assert re.fullmatch(r"[a-z]+(_[a-z0-9]+)*", operation_id), operation_id
        assert operation_id.split("_")[0] in verbs, operation_id
    assert {"get_positions", "preview_equity_order", "place_equity_order", "cancel_order", "get_quotes"} <= set(ids)


async def test_errors_are_one_envelope_and_each_operation_lists_its_codes(product) -> None:
    spec = await fetch_spec(product)
    for op in operations(spec):
        errors = {status: response for status, response in op["responses"].items() if status[0] in "45"}
        assert errors, op["operationId"]
        for response in errors.values():
            assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}
            for code in response["content"]["application/json"]["examples"]:
                assert f"`{code}`" in op["description"].split("**Errors**")[-1], (op["operationId"], code)


async def test_response_fields_are_required_and_raw_payloads_one_object_schema(product) -> None:
    spec = await fetch_spec(product)
    schemas = spec["components"]["schemas"]
    for name in ("Position", "Balance", "OrderPreview", "Quote"):
        properties = set(schemas[name]["properties"])
        assert set(schemas[name]["required"]) == properties - {"raw"}, name
    # raw is left out when there is none (paper): an object when present, never null.
    assert schemas["Position"]["properties"]["raw"]["$ref"] == "#/components/schemas/RawPayload"
    assert schemas["RawPayload"] == {
        "type": "object",
        "additionalProperties": True,
        "description": schemas["RawPayload"]["description"],
    }
    # No record declares its own free-form object: every raw payload is the one RawPayload.
    inline_objects = [
        f"{name}.{field}"
        for name, schema in schemas.items()
        for field, prop in schema.get("properties", {}).items()
        for branch in prop.get("anyOf", [prop])
        if (branch.get("type") == "object" and "properties" not in branch and "additionalProperties" not in branch)
        or branch.get("additionalProperties") is True
    ]
    assert inline_objects == []


async def test_enums_are_named_and_dates_carry_their_format(product) -> None:
    spec = await fetch_spec(product)
    schemas = spec["components"]["schemas"]

    def inline_enums(node: object, path: str) -> list[str]:
        if isinstance(node, dict):
            found = [path] if "enum" in node and path.count("/") > 1 else []
            return found + [hit for key, value in node.items() for hit in inline_enums(value, f"{path}/{key}")]
        if isinstance(node, list):
            return [hit for value in node for hit in inline_enums(value, path)]
        return []

    assert inline_enums(schemas, "") == []
    assert schemas["Holiday"]["properties"]["date"]["format"] == "date"
    assert schemas["OptionQuote"]["properties"]["expiration"]["format"] == "date"
    entry_time = schemas["OrderBaseDetail"]["properties"]["entry_time"]["anyOf"]
    assert {"type": "string", "format": "date-time"} in entry_time
    assert "US dollars" in schemas["Position"]["properties"]["market_value"]["description"]
    assert "contracts" in schemas["Position"]["properties"]["quantity"]["description"]


async def test_every_place_body_requires_the_preview_conf_num(product) -> None:
    spec = await fetch_spec(product)
    places = [op for op in operations(spec) if op["operationId"].startswith(("place_", "replace_"))]
    assert len(places) == 6
    for op in places:
        body = component(spec, op["requestBody"]["content"]["application/json"]["schema"])
        assert {"confNum", "conf_num", "conf_nums"} & set(body["required"]), op["operationId"]


PLACE_OPERATIONS = (
    "/api/v1/orders/equity/place",
    "/api/v1/orders/option/place",
    "/api/v1/orders/options/place",
    "/api/v1/orders/conditional/place",
    "/api/v1/orders/replace/place",
    "/api/v1/orders/conditional/replace/place",
)


async def test_each_place_operation_states_every_rule_the_desk_applies_in_its_order(service) -> None:
    from ftdesk.service.orders.desk import OrderDesk

    spec = await fetch_spec(service)
    for path in PLACE_OPERATIONS:
        description = spec["paths"][path]["post"]["description"]
        positions = [description.index(f"**{rule.name}**") for rule in OrderDesk.PLACE_RULES]
        assert positions == sorted(positions), path  # in the order the desk applies them
        codes = ("IDEMPOTENCY_KEY_REUSED", "TRADING_HALTED", "RISK_LIMIT", "LIVE_TRADING_DISABLED", "STORAGE_FULL")
        for code in codes:
            assert f"`{code}`" in description, (path, code)
        assert "`PREVIEW_REQUIRED`" in description and "`PREVIEW_MISMATCH`" in description
        assert "{preview}" not in description and "{s}" not in description
        preview_path = path.removesuffix("/place") + "/preview"
        assert f"POST {preview_path}" in description
