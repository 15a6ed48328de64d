"""Research endpoints through the real server: earnings, dividends, search, analytics, screener, notebooks.

One logged-in paper service on a manual clock (Monday 2026-11-16 10:00 New York) serves the module;
the notebook tests work on the notes they create, so they do not depend on each other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.api.test_accounts_api import shared_service
from tests.conftest import RunningService

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningService]:
    async with shared_service(tmp_path_factory.mktemp("research"), login=True) as running:
        yield running


async def ok(service, method: str, path: str, status: int = 200, **kwargs) -> object:
    got, body = await service.call(method, path, **kwargs)
    assert got == status, body
    assert body["ok"] is True and body["error"] is None
    return body["data"]


async def error(service, method: str, path: str, status: int, code: str, **kwargs) -> dict:
    got, body = await service.call(method, path, **kwargs)
    assert got == status, body
    assert body["ok"] is False and body["data"] is None and body["error"]["code"] == code
    return body["error"]


def bad_fields(err: dict) -> set[str]:
    return {detail["field"] for detail in err["details"]}


# --- earnings and dividends ------------------------------------------------------------------------------


async def test_earnings_past_and_scheduled_per_symbol(service) -> None:
    events = await ok(service, "GET", "/api/v1/research/earnings", params={"symbols": "aapl,MSFT"})
    assert {e["symbol"] for e in events} == {"AAPL", "MSFT"}
    for symbol in ("AAPL", "MSFT"):
        own = [e for e in events if e["symbol"] == symbol]
        reported = [e for e in own if e["report_date"] < "2026-11-16"]
        scheduled = [e for e in own if e["report_date"] > "2026-11-16"]
        assert reported and scheduled
        assert all(e["eps_actual"] is not None for e in reported)
        assert all(e["eps_actual"] is None and e["eps_estimate"] is not None for e in scheduled)
        assert {e["timing"] for e in own} <= {"BMO", "AMC"}


async def test_funds_report_no_earnings(service) -> None:
    assert await ok(service, "GET", "/api/v1/research/earnings", params={"symbols": "SPY"}) == []


async def test_dividends_of_a_quarterly_payer(service) -> None:
    events = await ok(service, "GET", "/api/v1/research/dividends", params={"symbols": "ko"})
    assert events and all(e["symbol"] == "KO" and e["frequency"] == "QUARTERLY" for e in events)
    assert all(e["ex_date"] <= e["record_date"] <= e["pay_date"] and e["amount"] > 0 for e in events)
    assert any(e["ex_date"] > "2026-11-16" for e in events)  # the next declared one


@pytest.mark.parametrize("path", ["/api/v1/research/earnings", "/api/v1/research/dividends"])
async def test_earnings_and_dividends_errors(service, path: str) -> None:
    assert bad_fields(await error(service, "GET", path, 422, "VALIDATION_ERROR")) == {"symbols"}
    err = await error(service, "GET", path, 422, "VALIDATION_ERROR", params={"symbols": "A,B,C " + "D" * 40})
    assert bad_fields(err) == {"symbols.2"}
    err = await error(service, "GET", path, 404, "NOT_FOUND", params={"symbols": "AAPL,NOSUCHCO"})
    assert "NOSUCHCO" in err["message"]


# --- search ------------------------------------------------------------------------------------------------


async def test_search_finds_by_name_and_ranks_an_exact_symbol_first(service) -> None:
    found = await ok(service, "GET", "/api/v1/research/search", params={"q": "micro"})
    symbols = [s["symbol"] for s in found["suggestions"]]
    assert "MSFT" in symbols and "MU" in symbols
    assert all("MICRO" in s["description"].upper() or s["symbol"].startswith("MICRO") for s in found["suggestions"])
    exact = await ok(service, "GET", "/api/v1/research/search", params={"q": "ko"})
    assert exact["suggestions"][0] == {
        "symbol": "KO",
        "description": exact["suggestions"][0]["description"],
        "exchange": "NYSE",
        "security_type": "EQUITY",
    }


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "x" * 51}])
async def test_search_query_must_be_1_to_50_characters(service, params: dict) -> None:
    err = await error(service, "GET", "/api/v1/research/search", 422, "VALIDATION_ERROR", params=params)
    assert bad_fields(err) == {"q"}


# --- analytics -----------------------------------------------------------------------------------------------


async def near_the_money_call(service) -> tuple[str, float, float]:
    chain = await ok(service, "GET", "/api/v1/market-data/chain/AAPL")
    spot = chain["underlying_price"]
    expiration = chain["expirations"][1]
    row = min(expiration["strikes"], key=lambda r: abs(r["strike"] - spot))
    return row["call"]["symbol"], row["strike"], spot


async def test_analytics_of_a_long_call(service) -> None:
    symbol, strike, spot = await near_the_money_call(service)
    result = await ok(
        service,
        "POST",
        "/api/v1/research/analytics",
        json={"symbol": "aapl", "legs": [{"symbol": symbol.lower(), "quantity": 2, "price": 5.0}]},
    )
    assert result["symbol"] == "AAPL" and result["underlying_price"] == spot
    assert result["net_cost"] == pytest.approx(2 * 100 * 5.0)
    assert result["max_loss"] == pytest.approx(-1000.0) and result["max_profit"] is None  # unbounded upside
    assert result["breakevens"] == [pytest.approx(strike + 5.0, abs=0.01)]
    (leg,) = result["legs"]
    assert leg["symbol"] == symbol and leg["option_type"] == "CALL" and leg["strike"] == strike
    assert 0 < result["delta"] <= 200 and result["theta"] < 0
    prices = [p["underlying_price"] for p in result["pnl_curve"]]
    assert prices == sorted(prices) and prices[0] < spot < prices[-1]


async def test_analytics_of_a_covered_call_caps_the_profit(service) -> None:
    symbol, strike, _ = await near_the_money_call(service)
    result = await ok(
        service,
        "POST",
        "/api/v1/research/analytics",
        json={"symbol": "AAPL", "legs": [{"symbol": "AAPL", "quantity": 100}, {"symbol": symbol, "quantity": -1}]},
    )
    stock, call = result["legs"]
    assert stock["greeks"] is None and call["greeks"] is not None  # prices default to the current mids
    # Called away at the strike: the stock's gain up to it plus the premium kept.
    expected = 100 * (strike - stock["price"]) + 100 * call["price"]
    assert result["max_profit"] == pytest.approx(expected, abs=0.02)
    assert result["max_loss"] is not None and result["max_loss"] < 0


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"symbol": "AAPL", "legs": []}, {"legs"}),
        ({"symbol": "AAPL"}, {"legs"}),
        ({"symbol": "AAPL", "legs": [{"symbol": "AAPL", "quantity": 0}]}, {"legs.0.quantity"}),
        ({"symbol": "AAPL", "legs": [{"symbol": "AAPL", "quantity": 1, "price": -1}]}, {"legs.0.price"}),
        ({"symbol": "AAPL", "legs": [{"symbol": "AAPL", "qty": 1}]}, {"legs.0.quantity", "legs.0.qty"}),
        ({"legs": [{"symbol": "AAPL", "quantity": 1}]}, {"symbol"}),
    ],
)
async def test_analytics_bad_body_is_422_naming_the_field(service, body: dict, fields: set[str]) -> None:
    err = await error(service, "POST", "/api/v1/research/analytics", 422, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields
    assert all(d["location"] == "body" for d in err["details"])


async def test_analytics_of_an_unlisted_option_is_404(service) -> None:
    body = {"symbol": "AAPL", "legs": [{"symbol": "AAPL261218C7777", "quantity": 1}]}
    err = await error(service, "POST", "/api/v1/research/analytics", 404, "NOT_FOUND", json=body)
    assert "AAPL261218C7777" in err["message"]


async def test_analytics_with_a_leg_on_another_underlying_is_422(service) -> None:
    symbol, _, _ = await near_the_money_call(service)
    body = {"symbol": "MSFT", "legs": [{"symbol": symbol, "quantity": 1}]}
    err = await error(service, "POST", "/api/v1/research/analytics", 422, "VALIDATION_ERROR", json=body)
    assert "MSFT" in err["message"]


# --- screener ------------------------------------------------------------------------------------------------


async def test_screener_filters_sorts_and_limits(service) -> None:
    scan = {
        "criteria": [{"field": "price", "min": 20, "max": 1000}, {"field": "iv_rank", "min": 0}],
        "sort_by": "iv",
        "descending": True,
        "limit": 5,
    }
    result = await ok(service, "POST", "/api/v1/research/screener", json=scan)
    rows = result["rows"]
    assert len(rows) == 5 and result["total_matches"] >= 5
    assert all(20 <= r["price"] <= 1000 and r["iv_rank"] >= 0 for r in rows)
    assert [r["iv"] for r in rows] == sorted((r["iv"] for r in rows), reverse=True)
    everything = await ok(service, "POST", "/api/v1/research/screener", json={"limit": 500})
    assert everything["total_matches"] >= result["total_matches"]
    assert len(everything["rows"]) == everything["total_matches"]
    by_symbol = await ok(
        service, "POST", "/api/v1/research/screener", json={"sort_by": "symbol", "descending": False, "limit": 500}
    )
    symbols = [r["symbol"] for r in by_symbol["rows"]]
    assert symbols == sorted(symbols)


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"criteria": [{"field": "beta", "min": 1}]}, {"criteria.0.field"}),
        ({"criteria": [{"field": "iv", "min": 0.5, "max": 0.2}]}, {"criteria.0.max"}),
        ({"sort_by": "popularity"}, {"sort_by"}),
        ({"limit": 0}, {"limit"}),
        ({"limit": 501}, {"limit"}),
        ({"universe": "all"}, {"universe"}),
    ],
)
async def test_screener_bad_scan_is_422_naming_the_field(service, body: dict, fields: set[str]) -> None:
    err = await error(service, "POST", "/api/v1/research/screener", 422, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields


# --- notebooks -----------------------------------------------------------------------------------------------


async def test_notebook_round_trip(service) -> None:
    created = await ok(
        service,
        "POST",
        "/api/v1/research/notebooks",
        201,
        json={"note": "Services margin keeps expanding.", "symbol": "aapl", "title": "AAPL thesis"},
    )
    note_id = created["note_id"]
    assert note_id and created["symbol"] == "AAPL" and created["title"] == "AAPL thesis"
    assert created["note"] == "Services margin keeps expanding." and created["channel"] == "ATN"
    listed = await ok(service, "GET", "/api/v1/research/notebooks")
    assert listed[0] == created  # the most recently updated first

    updated = await ok(
        service,
        "PUT",
        f"/api/v1/research/notebooks/{note_id}",
        json={"note": "Moved to the ETF.", "old_symbol": "AAPL", "new_symbol": "qqq"},
    )
    assert updated["note_id"] == note_id and updated["symbol"] == "QQQ" and updated["note"] == "Moved to the ETF."
    assert updated["title"] == "AAPL thesis"  # a blank title keeps the old one
    assert updated["create_date"] == created["create_date"]
    assert next(n for n in await ok(service, "GET", "/api/v1/research/notebooks") if n["note_id"] == note_id) == updated

    deleted = await ok(service, "DELETE", f"/api/v1/research/notebooks/{note_id}", params={"symbol": "qqq"})
    assert deleted == {"deleted": True, "note_id": note_id}
    assert note_id not in {n["note_id"] for n in await ok(service, "GET", "/api/v1/research/notebooks")}


async def test_a_note_without_symbol_or_title(service) -> None:
    created = await ok(service, "POST", "/api/v1/research/notebooks", 201, json={"note": "Rates first."})
    assert created["symbol"] == "" and created["title"] == ""
    path = f"/api/v1/research/notebooks/{created['note_id']}"
    assert (await ok(service, "DELETE", path, params={"symbol": ""}))["deleted"] is True


async def test_note_symbol_guards_are_conflicts_and_change_nothing(service) -> None:
    created = await ok(service, "POST", "/api/v1/research/notebooks", 201, json={"note": "Watch GME.", "symbol": "GME"})
    path = f"/api/v1/research/notebooks/{created['note_id']}"
    err = await error(service, "PUT", path, 409, "CONFLICT", json={"note": "Changed.", "old_symbol": "AMC"})
    assert "GME" in err["message"]
    err = await error(service, "DELETE", path, 409, "CONFLICT", params={"symbol": "AMC"})
    assert "nothing was deleted" in err["message"]
    still = next(
        n for n in await ok(service, "GET", "/api/v1/research/notebooks") if n["note_id"] == created["note_id"]
    )
    assert still == created


async def test_unknown_note_is_404(service) -> None:
    await error(service, "PUT", "/api/v1/research/notebooks/N0000000000", 404, "NOT_FOUND", json={"note": "x"})
    await error(service, "DELETE", "/api/v1/research/notebooks/N0000000000", 404, "NOT_FOUND", params={"symbol": ""})
    created = await ok(service, "POST", "/api/v1/research/notebooks", 201, json={"note": "Once."})
    path = f"/api/v1/research/notebooks/{created['note_id']}"
    await ok(service, "DELETE", path, params={"symbol": ""})
    await error(service, "DELETE", path, 404, "NOT_FOUND", params={"symbol": ""})


@pytest.mark.parametrize(
    ("method", "body", "fields", "status"),
    [
        ("POST", {}, {"note"}, 422),
        ("POST", {"note": ""}, {"note"}, 422),
        ("POST", {"note": "x", "title": "t" * 201}, {"title"}, 422),
        ("POST", {"note": "x", "tags": ["a"]}, {"tags"}, 422),
        ("PUT", {"title": "only a title"}, {"note"}, 422),
        ("PUT", {"note": 42}, {"note"}, 400),  # a JSON number where text belongs: the wrong JSON type
    ],
)
async def test_bad_note_body_is_a_validation_error_naming_the_field(
    service, method: str, body: dict, fields: set[str], status: int
) -> None:
    path = "/api/v1/research/notebooks" + ("/N0000000000" if method == "PUT" else "")
    err = await error(service, method, path, status, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields


async def test_deleting_a_note_needs_its_symbol(service) -> None:
    err = await error(service, "DELETE", "/api/v1/research/notebooks/N0000000000", 422, "VALIDATION_ERROR")
    assert bad_fields(err) == {"symbol"}
