"""ftdesk.client stays a client: no Qt, no server, no broker; its mirrors of service answers match the service."""

from __future__ import annotations

import json
import subprocess
import sys

from pydantic import BaseModel

from ftdesk.client import AsyncClient, Client, models
from ftdesk.client.discovery import API_KEY_ENTRY, KEYCHAIN_SERVICE
from ftdesk.client.errors import ERROR_FAMILIES, RiskLimitError, TradingDisabledError
from ftdesk.service import keys
from ftdesk.service.routes.health import Health
from ftdesk.service.routes.market_data import QuotesAnswer
from ftdesk.service.session import SessionStatus
from ftdesk.service.web.errors import ERROR_TABLE

FORBIDDEN = ("PySide6", "qasync", "ftdesk.service", "ftdesk.brokers", "ftdesk.gui", "ftdesk.streaming", "ftdesk.app")


def test_importing_the_client_imports_no_qt_server_or_broker() -> None:
    # Every public name (each loads its module on first use) and the streams' modules.
    code = (
        "import sys, json, ftdesk.client, ftdesk.client.sse, ftdesk.client.ws\n"
        "for name in ftdesk.client.__all__: getattr(ftdesk.client, name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = json.loads(result.stdout)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert offending == []
    assert "ftdesk.domain.orders" in loaded and "websockets" in loaded


def fields(model: type[BaseModel]) -> dict[str, str]:
    schema = model.model_json_schema()
    return {
        name: json.dumps(spec.get("type") or spec.get("anyOf") or spec.get("$ref"))
        for name, spec in schema["properties"].items()
    }


def test_the_mirrored_answers_have_the_services_fields() -> None:
    assert models.Health.model_fields.keys() == Health.model_fields.keys()
    assert models.SessionStatus.model_fields.keys() == SessionStatus.model_fields.keys()
    assert models.QuotesAnswer.model_fields.keys() == QuotesAnswer.model_fields.keys()
    for mine, theirs in ((models.Health, Health), (models.SessionStatus, SessionStatus)):
        assert fields(mine) == fields(theirs)


def test_the_key_is_looked_up_where_the_service_stores_it() -> None:
    assert (KEYCHAIN_SERVICE, API_KEY_ENTRY) == (keys.KEYCHAIN_SERVICE, keys.API_KEY_ENTRY)
    assert API_KEY_ENTRY == keys.API_KEY_FILE_NAME


def test_every_error_code_of_the_service_raises_a_named_family() -> None:
    # A code the service adds later must be given its family here, or a script catching, say,
    # TradingDisabledError would miss it: only the service's own failures fall to ServiceError.
    codes = {spec.code for spec in ERROR_TABLE.values()}
    assert ERROR_FAMILIES.keys() <= codes
    assert codes - ERROR_FAMILIES.keys() == {"INTERNAL_ERROR", "CREDENTIAL_STORE_UNAVAILABLE", "STREAMING_UNAVAILABLE"}


def test_a_risk_limit_is_its_own_family_outside_trading_disabled() -> None:
    # Trading is on when a limit refuses one order: a script catching TradingDisabledError ("we are in
    # dry-run or halted, stop") must not mistake a too-large order for that.
    assert ERROR_FAMILIES["RISK_LIMIT"] is RiskLimitError
    assert not issubclass(RiskLimitError, TradingDisabledError)
    assert {code for code, family in ERROR_FAMILIES.items() if family is TradingDisabledError} == {
        "LIVE_TRADING_DISABLED",
        "TRADING_HALTED",
    }


CLIENT_OPERATIONS = (
    ("get_health", "get", "/api/v1/health"),
    ("login", "post", "/api/v1/auth/login"),
    ("logout", "post", "/api/v1/auth/logout"),
    ("get_auth_status", "get", "/api/v1/auth/status"),
    ("list_accounts", "get", "/api/v1/accounts"),
    ("get_account", "get", "/api/v1/accounts/{acct}"),
    ("get_positions", "get", "/api/v1/accounts/{acct}/positions"),
    ("get_balances", "get", "/api/v1/accounts/{acct}/balances"),
    ("get_transactions", "get", "/api/v1/accounts/{acct}/transactions"),
    ("get_order_status", "get", "/api/v1/orders/status"),
    ("get_order_detail", "get", "/api/v1/orders/{order_id}/detail"),
    ("preview_equity_order", "post", "/api/v1/orders/equity/preview"),
    ("place_equity_order", "post", "/api/v1/orders/equity/place"),
    ("preview_option_order", "post", "/api/v1/orders/option/preview"),
    ("place_option_order", "post", "/api/v1/orders/option/place"),
    ("preview_multileg_order", "post", "/api/v1/orders/options/preview"),
    ("place_multileg_order", "post", "/api/v1/orders/options/place"),
    ("preview_cancel_order", "post", "/api/v1/orders/{conf_num}/cancel/preview"),
    ("cancel_order", "post", "/api/v1/orders/{conf_num}/cancel"),
    ("halt", "post", "/api/v1/safety/halt"),
    ("resume", "post", "/api/v1/safety/resume"),
    ("get_safety", "get", "/api/v1/safety"),
    ("get_quotes", "get", "/api/v1/market-data/quotes"),
    ("get_option_chain", "get", "/api/v1/market-data/chain/{symbol}"),
    ("search_symbols", "get", "/api/v1/research/search"),
    ("stream_quotes", "get", "/api/v1/streaming/quotes"),
    ("stream_events", "get", "/api/v1/streaming/events"),
)


async def test_client_methods_are_named_after_the_operations_they_call(start_service) -> None:
    service = await start_service()
    async with service.http.get(service.url("/docs/openapi.json")) as response:
        spec = await response.json()
    for name, method, path in CLIENT_OPERATIONS:
        assert spec["paths"][path][method]["operationId"] == name
        assert callable(getattr(AsyncClient, name)) and callable(getattr(Client, name))
