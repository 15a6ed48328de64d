"""Accounts and portfolio endpoints through the real server on the seeded paper brokerage.

The clock is manual, so prices stand still between calls and sums across endpoints match to the cent;
and since every endpoint here only reads, one logged-in service serves the whole module. The last tests
check that all 41 read, research and user-data endpoints need a brokerage session.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from ftdesk.app import ServiceRuntime
from ftdesk.config import load_settings
from ftdesk.logs import SecretRedactor
from tests.conftest import TEST_API_KEY, RunningService
from tests.fakes.clock import ManualClock
from tests.fakes.keyring import InMemoryKeyring

pytestmark = pytest.mark.asyncio(loop_scope="module")

TODAY = date(2026, 11, 16)  # ManualClock's default day


@contextlib.asynccontextmanager
async def shared_service(data_dir: Path, *, login: bool) -> AsyncIterator[RunningService]:
    """Run one paper service on a manual clock for a whole module of read-only tests."""
    settings = load_settings(
        {
            "FTSERVICE_DATA_DIR": str(data_dir),
            "FTSERVICE_PORT": "0",
            "FTSERVICE_API_KEY": TEST_API_KEY,
            "FTSERVICE_PAPER_SEED": "20261121",
        }
    )
    runtime = ServiceRuntime(
        settings, clock=ManualClock(), keyring_backend=InMemoryKeyring(), redactor=SecretRedactor()
    )
    await runtime.start()
    try:
        async with aiohttp.ClientSession() as http:
            service = RunningService(base_url=runtime.url, api_key=TEST_API_KEY, http=http, runtime=runtime)
            if login:
                await service.login()
            yield service
    finally:
        await runtime.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningService]:
    async with shared_service(tmp_path_factory.mktemp("accounts"), login=True) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def logged_out(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningService]:
    async with shared_service(tmp_path_factory.mktemp("logged-out"), login=False) as running:
        yield running


async def accounts_by_type(service) -> dict[str, str]:
    status, body = await service.call("GET", "/api/v1/accounts")
    assert status == 200, body
    return {account["acct_type"]: account["acct_num"] for account in body["data"]}


async def get_ok(service, path: str, **params) -> object:
    status, body = await service.call("GET", path, params=params or None)
    assert status == 200, body
    assert body["ok"] is True and body["error"] is None
    return body["data"]


async def get_error(service, path: str, status: int, code: str, **params) -> dict:
    got, body = await service.call("GET", path, params=params or None)
    assert got == status, body
    assert body["ok"] is False and body["error"]["code"] == code
    return body["error"]


def bad_fields(error: dict) -> set[str]:
    return {detail["field"] for detail in error["details"]}


# --- accounts, positions, balances -------------------------------------------------------------------


async def test_accounts_lists_the_three_paper_accounts_default_first(service) -> None:
    accounts = await get_ok(service, "/api/v1/accounts")
    assert [a["acct_type"] for a in accounts] == ["INDIVIDUAL", "IRA", "JOINT"]
    assert accounts[0]["is_default"] is True and not any(a["is_default"] for a in accounts[1:])
    assert len({a["acct_num"] for a in accounts}) == 3
    assert [a["margin_ind"] for a in accounts] == [True, False, True]


async def test_one_account_is_the_listed_record(service) -> None:
    accounts = await get_ok(service, "/api/v1/accounts")
    ira = accounts[1]
    assert await get_ok(service, f"/api/v1/accounts/{ira['acct_num']}") == ira


async def test_unknown_account_is_404(service) -> None:
    error = await get_error(service, "/api/v1/accounts/NOPE123", 404, "NOT_FOUND")
    assert "NOPE123" in error["message"]


async def test_positions_belong_to_the_account_and_add_up_to_the_balances(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    positions = await get_ok(service, f"/api/v1/accounts/{acct}/positions")
    balances = await get_ok(service, f"/api/v1/accounts/{acct}/balances")
    assert {p["symbol"] for p in positions} >= {"AAPL", "MSFT", "NVDA", "SPY"}
    assert all(p["acct_num"] == acct for p in positions)
    net_value = sum(p["market_value"] for p in positions)
    assert net_value == pytest.approx(balances["long_market_value"] - balances["short_market_value"], abs=0.02)
    assert sum(p["holding_pct"] for p in positions) == pytest.approx(100, abs=0.1)
    # A short option is a negative quantity with a negative market value.
    assert any(p["security_type"] == "OPTION" and p["quantity"] < 0 and p["market_value"] < 0 for p in positions)


async def test_balances_net_worth_is_cash_plus_long_minus_short(service) -> None:
    accounts = await accounts_by_type(service)
    for acct_type, acct in accounts.items():
        balances = await get_ok(service, f"/api/v1/accounts/{acct}/balances")
        assert balances["acct_num"] == acct
        expected = balances["cash"] + balances["long_market_value"] - balances["short_market_value"]
        assert balances["net_worth"] == pytest.approx(expected, abs=0.02), acct_type
    ira = await get_ok(service, f"/api/v1/accounts/{accounts['IRA']}/balances")
    assert ira["margin_buying_power"] is None and ira["margin_equity"] is None


@pytest.mark.parametrize(
    "suffix",
    [
        "positions",
        "balances",
        "transactions",
        "options-summary",
        "closed-positions",
        "loaned-securities",
        "tax-lots/AAPL",
        "features",
        "hard-to-borrow?symbols=AAPL",
        "lots/AAPL",
        "short-insights?symbols=AAPL",
        "short-insights/AAPL/timeseries",
        "accruals",
        "cash-accruals",
        "closed-lots/AAPL",
    ],
)
async def test_every_account_path_answers_404_for_an_unknown_account(service, suffix: str) -> None:
    error = await get_error(service, f"/api/v1/accounts/ZZ0000000/{suffix}", 404, "NOT_FOUND")
    assert "ZZ0000000" in error["message"]


# --- history ------------------------------------------------------------------------------------------


async def test_transactions_between_two_dates_newest_first(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    everything = await get_ok(service, f"/api/v1/accounts/{acct}/transactions")
    window = await get_ok(
        service, f"/api/v1/accounts/{acct}/transactions", start_date="2026-09-01", end_date="2026-10-31"
    )
    assert window and len(window) < len(everything)
    dates = [t["date"] for t in window]
    assert all("2026-09-01" <= d <= "2026-10-31" for d in dates)
    assert dates == sorted(dates, reverse=True)
    assert {t["txn_id"] for t in window} == {
        t["txn_id"] for t in everything if "2026-09-01" <= t["date"] <= "2026-10-31"
    }
    assert all(t["acct_num"] == acct for t in everything)
    assert any(t["txn_type"] == "BUY" and t["amount"] < 0 for t in everything)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start_date": "2026-09-02", "end_date": "2026-09-01"}, "end_date"),
        ({"start_date": "2026/09/01"}, "start_date"),
        ({"start_date": "0"}, "start_date"),  # a unix timestamp is not an ISO date
        ({"end_date": "2026-02-30"}, "end_date"),
        ({"end_date": "9999-12-31"}, "end_date"),
        ({"from": "2026-09-01"}, "from"),
    ],
)
async def test_transactions_bad_dates_are_422_naming_the_field(service, params: dict, field: str) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    error = await get_error(service, f"/api/v1/accounts/{acct}/transactions", 422, "VALIDATION_ERROR", **params)
    assert bad_fields(error) == {field}
    assert all(d["location"] == "query" for d in error["details"])


async def test_closed_positions_match_their_closed_lots(service) -> None:
    acct = (await accounts_by_type(service))["JOINT"]
    closed = await get_ok(service, f"/api/v1/accounts/{acct}/closed-positions")
    qqq = next(c for c in closed if c["symbol"] == "QQQ")
    lots = await get_ok(service, f"/api/v1/accounts/{acct}/closed-lots/qqq")
    assert lots and all(lot["symbol"] == "QQQ" for lot in lots)
    assert qqq["quantity"] == sum(lot["quantity"] for lot in lots)
    assert qqq["proceeds"] == pytest.approx(sum(lot["proceeds"] for lot in lots), abs=0.01)
    assert qqq["gain_loss"] == pytest.approx(sum(lot["gain_loss"] for lot in lots), abs=0.01)
    # The joint account's QQQ history holds a wash sale.
    assert qqq["wash_sale_disallowed"] > 0
    assert any(lot["wash_sale_ind"] and lot["is_wash_sale"] for lot in lots)


async def test_closed_positions_and_lots_respect_the_date_range(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    everything = await get_ok(service, f"/api/v1/accounts/{acct}/closed-positions")
    last = max(c["last_closed_date"] for c in everything)
    after = await get_ok(service, f"/api/v1/accounts/{acct}/closed-positions", start_date=last)
    assert after and all(c["last_closed_date"] == last for c in after)
    assert await get_ok(service, f"/api/v1/accounts/{acct}/closed-positions", end_date="2020-01-01") == []
    nvda = await get_ok(service, f"/api/v1/accounts/{acct}/closed-lots/NVDA")
    sold = nvda[0]["sold_date"]
    assert await get_ok(service, f"/api/v1/accounts/{acct}/closed-lots/NVDA", start_date=sold, end_date=sold) == [
        lot for lot in nvda if lot["sold_date"] == sold
    ]
    error = await get_error(
        service,
        f"/api/v1/accounts/{acct}/closed-lots/NVDA",
        422,
        "VALIDATION_ERROR",
        start_date="2026-01-02",
        end_date="2026-01-01",
    )
    assert bad_fields(error) == {"end_date"}
    error = await get_error(
        service, f"/api/v1/accounts/{acct}/closed-positions", 422, "VALIDATION_ERROR", end_date="yesterday"
    )
    assert bad_fields(error) == {"end_date"}


# --- options, loans, lots -------------------------------------------------------------------------------


async def test_options_summary_groups_the_option_positions(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    positions = await get_ok(service, f"/api/v1/accounts/{acct}/positions")
    options = {p["symbol"]: p for p in positions if p["security_type"] == "OPTION"}
    summary = await get_ok(service, f"/api/v1/accounts/{acct}/options-summary")
    assert summary["acct_num"] == acct
    legs = {leg["symbol"]: leg for u in summary["underlyings"] for leg in u["legs"]}
    assert set(legs) == set(options)
    for underlying in summary["underlyings"]:
        assert all(leg["symbol"].startswith(underlying["underlying"]) for leg in underlying["legs"])
    assert summary["total_market_value"] == pytest.approx(sum(p["market_value"] for p in options.values()), abs=0.01)
    ira_summary = await get_ok(service, f"/api/v1/accounts/{(await accounts_by_type(service))['IRA']}/options-summary")
    assert ira_summary["underlyings"] == [] and ira_summary["total_market_value"] == 0


async def test_loaned_securities_are_held_shares(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    loans = await get_ok(service, f"/api/v1/accounts/{acct}/loaned-securities")
    positions = {p["symbol"]: p for p in await get_ok(service, f"/api/v1/accounts/{acct}/positions")}
    assert [loan["symbol"] for loan in loans] == ["NVDA"]
    loan = loans[0]
    assert loan["acct_num"] == acct and loan["quantity"] == 40 and loan["rate"] > 0
    assert loan["quantity"] <= positions["NVDA"]["quantity"]
    assert loan["market_value"] == pytest.approx(40 * positions["NVDA"]["last_price"], abs=0.01)


async def test_open_lots_add_up_to_the_position(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    positions = {p["symbol"]: p for p in await get_ok(service, f"/api/v1/accounts/{acct}/positions")}
    for symbol in ("AAPL", "MSFT", "NVDA"):
        lots = await get_ok(service, f"/api/v1/accounts/{acct}/lots/{symbol.lower()}")
        position = positions[symbol]
        assert all(lot["symbol"] == symbol for lot in lots)
        assert sum(lot["quantity"] for lot in lots) == position["quantity"]
        assert sum(lot["market_value"] for lot in lots) == pytest.approx(position["market_value"], abs=0.01)
        assert sum(lot["cost_basis"] for lot in lots) == pytest.approx(position["cost_basis"], abs=0.01)
        acquired = [lot["acquired_date"] for lot in lots]
        assert acquired == sorted(acquired)  # oldest first, the order a sale draws from
        for lot in lots:
            held_over_a_year = (TODAY - date.fromisoformat(lot["acquired_date"])).days > 365
            assert lot["is_long_term"] is held_over_a_year and lot["term"] == ("LONG" if held_over_a_year else "SHORT")


async def test_tax_lots_are_the_lots_a_sale_draws_from(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    lots = await get_ok(service, f"/api/v1/accounts/{acct}/lots/AAPL")
    assert await get_ok(service, f"/api/v1/accounts/{acct}/tax-lots/aapl") == lots
    assert await get_ok(service, f"/api/v1/accounts/{acct}/tax-lots/KO") == []  # not held here


async def test_a_malformed_path_symbol_is_422_naming_it(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    error = await get_error(service, f"/api/v1/accounts/{acct}/lots/A%20B", 422, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "symbol" and error["details"][0]["location"] == "path"
    error = await get_error(service, f"/api/v1/accounts/{acct}/short-insights/A;B/timeseries", 422, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "sym"


# --- features, borrow, short interest ---------------------------------------------------------------------


async def test_features_reflect_the_account(service) -> None:
    accounts = await get_ok(service, "/api/v1/accounts")
    for account in accounts:
        features = await get_ok(service, f"/api/v1/accounts/{account['acct_num']}/features")
        assert len(features) == 1
        feature = features[0]
        assert feature["acct_num"] == account["acct_num"] and feature["acct_type"] == account["acct_type"]
        # One type on both endpoints: the spec's string, "0" to "5"
        assert feature["option_level"] == account["option_level"] and account["option_level"] in "012345"
        assert isinstance(account["option_level"], str) and len(account["option_level"]) == 1
        assert feature["margin_ind"] is account["margin_ind"]
    ira = next(a for a in accounts if a["acct_type"] == "IRA")
    assert (await get_ok(service, f"/api/v1/accounts/{ira['acct_num']}/features"))[0]["short_sell_ind"] is False


async def test_hard_to_borrow_in_the_order_asked_and_upper_cased(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    rows = await get_ok(service, f"/api/v1/accounts/{acct}/hard-to-borrow?symbols=gme,aapl&symbols=SPY")
    assert [r["symbol"] for r in rows] == ["GME", "AAPL", "SPY"]
    gme, aapl, _ = rows
    assert gme["htb_ind"] is True and gme["is_hard_to_borrow"] is True
    assert aapl["htb_ind"] is False and aapl["status"] == "ETB"
    assert gme["borrow_rate"] > aapl["borrow_rate"] and all(r["available_qty"] > 0 for r in rows)


@pytest.mark.parametrize("path", ["hard-to-borrow", "short-insights"])
async def test_symbol_lists_are_required_and_bounded(service, path: str) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    url = f"/api/v1/accounts/{acct}/{path}"
    assert bad_fields(await get_error(service, url, 422, "VALIDATION_ERROR")) == {"symbols"}
    too_many = ",".join(f"S{i}" for i in range(51))
    assert bad_fields(await get_error(service, url, 422, "VALIDATION_ERROR", symbols=too_many)) == {"symbols"}
    assert bad_fields(await get_error(service, url, 422, "VALIDATION_ERROR", symbols="AAPL,B@D")) == {"symbols.1"}
    error = await get_error(service, url, 404, "NOT_FOUND", symbols="AAPL,NOSUCHCO")
    assert "NOSUCHCO" in error["message"]


async def test_short_insights_latest_figures(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    rows = await get_ok(service, f"/api/v1/accounts/{acct}/short-insights", symbols="aapl,GME")
    assert [r["symbol"] for r in rows] == ["AAPL", "GME"]
    for row in rows:
        assert row["short_interest"] > 0 and row["days_to_cover"] > 0
        assert row["settlement_date"] < TODAY.isoformat()
    assert rows[1]["short_pct_of_float"] > rows[0]["short_pct_of_float"]


async def test_short_insight_series_defaults_to_short_interest_over_the_last_year(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    latest = (await get_ok(service, f"/api/v1/accounts/{acct}/short-insights", symbols="AAPL"))[0]
    series = await get_ok(service, f"/api/v1/accounts/{acct}/short-insights/aapl/timeseries")
    assert series["symbol"] == "AAPL" and series["metric"] == "shortInterest"
    dates = [p["date"] for p in series["points"]]
    assert dates == sorted(dates) and len(dates) >= 20
    assert dates[0] >= "2025-11-16" and dates[-1] == latest["settlement_date"]
    assert series["points"][-1]["value"] == latest["short_interest"]


async def test_short_insight_series_of_another_metric_in_a_range(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    series = await get_ok(
        service,
        f"/api/v1/accounts/{acct}/short-insights/GME/timeseries",
        metric="daysToCover",
        start_date="2026-06-01",
        end_date="2026-08-31",
    )
    assert series["metric"] == "daysToCover"
    assert series["points"] and all("2026-06-01" <= p["date"] <= "2026-08-31" for p in series["points"])


async def test_short_insight_series_errors(service) -> None:
    acct = (await accounts_by_type(service))["INDIVIDUAL"]
    url = f"/api/v1/accounts/{acct}/short-insights/AAPL/timeseries"
    error = await get_error(service, url, 422, "VALIDATION_ERROR", metric="shortSqueeze")
    assert error["details"][0]["field"] == "metric" and error["details"][0]["location"] == "query"
    assert "shortInterest" in error["details"][0]["allowed"]
    error = await get_error(service, url, 422, "VALIDATION_ERROR", start_date="2026-06-02", end_date="2026-06-01")
    assert bad_fields(error) == {"end_date"}
    await get_error(service, f"/api/v1/accounts/{acct}/short-insights/NOSUCHCO/timeseries", 404, "NOT_FOUND")


# --- accruals -----------------------------------------------------------------------------------------------


async def test_accruals_are_margin_interest_or_dividends_on_held_shares(service) -> None:
    accounts = await accounts_by_type(service)
    seen_types = set()
    for acct in accounts.values():
        held = {p["symbol"] for p in await get_ok(service, f"/api/v1/accounts/{acct}/positions")}
        for accrual in await get_ok(service, f"/api/v1/accounts/{acct}/accruals"):
            assert accrual["acct_num"] == acct and accrual["accrual_amount"] > 0
            seen_types.add(accrual["accrual_type"])
            if accrual["accrual_type"] == "DIVIDEND":
                assert accrual["symbol"] in held
    assert seen_types <= {"DIVIDEND", "MARGIN_INTEREST"} and seen_types
    # The joint account carries a margin debit, so it accrues margin interest.
    joint = await get_ok(service, f"/api/v1/accounts/{accounts['JOINT']}/accruals")
    assert any(a["accrual_type"] == "MARGIN_INTEREST" for a in joint)


async def test_cash_accruals_are_this_months_daily_core_interest(service) -> None:
    accounts = await accounts_by_type(service)
    rows = await get_ok(service, f"/api/v1/accounts/{accounts['INDIVIDUAL']}/cash-accruals")
    assert rows
    days = [r["accrual_date"] for r in rows]
    assert days == sorted(days) and all("2026-11-01" <= d <= TODAY.isoformat() for d in days)
    assert all(r["acct_num"] == accounts["INDIVIDUAL"] and r["cash_accrual_amount"] > 0 for r in rows)
    # A margin debit earns no core interest.
    assert await get_ok(service, f"/api/v1/accounts/{accounts['JOINT']}/cash-accruals") == []


# --- every endpoint of this piece needs a brokerage session -----------------------------------------------

ACCT = "PAP000000"  # never reached: the session check comes first
SESSION_ENDPOINTS: list[tuple[str, str, dict | None]] = [
    ("GET", "/api/v1/accounts", None),
    ("GET", f"/api/v1/accounts/{ACCT}", None),
    ("GET", f"/api/v1/accounts/{ACCT}/positions", None),
    ("GET", f"/api/v1/accounts/{ACCT}/balances", None),
    ("GET", f"/api/v1/accounts/{ACCT}/transactions", None),
    ("GET", f"/api/v1/accounts/{ACCT}/options-summary", None),
    ("GET", f"/api/v1/accounts/{ACCT}/closed-positions", None),
    ("GET", f"/api/v1/accounts/{ACCT}/loaned-securities", None),
    ("GET", f"/api/v1/accounts/{ACCT}/tax-lots/AAPL", None),
    ("GET", f"/api/v1/accounts/{ACCT}/features", None),
    ("GET", f"/api/v1/accounts/{ACCT}/hard-to-borrow?symbols=AAPL", None),
    ("GET", f"/api/v1/accounts/{ACCT}/lots/AAPL", None),
    ("GET", f"/api/v1/accounts/{ACCT}/short-insights?symbols=AAPL", None),
    ("GET", f"/api/v1/accounts/{ACCT}/short-insights/AAPL/timeseries", None),
    ("GET", f"/api/v1/accounts/{ACCT}/accruals", None),
    ("GET", f"/api/v1/accounts/{ACCT}/cash-accruals", None),
    ("GET", f"/api/v1/accounts/{ACCT}/closed-lots/AAPL", None),
    ("GET", "/api/v1/market-data/chain/AAPL", None),
    ("GET", "/api/v1/market-data/montage/AAPL", None),
    ("GET", "/api/v1/market-data/chart/AAPL", None),
    ("GET", "/api/v1/market-data/time-and-sales/AAPL", None),
    ("GET", "/api/v1/market-data/markets/AAPL", None),
    ("GET", "/api/v1/research/earnings?symbols=AAPL", None),
    ("GET", "/api/v1/research/dividends?symbols=AAPL", None),
    ("GET", "/api/v1/research/search?q=apple", None),
    ("POST", "/api/v1/research/analytics", {"symbol": "AAPL", "legs": [{"symbol": "AAPL", "quantity": 100}]}),
    ("POST", "/api/v1/research/screener", {}),
    ("GET", "/api/v1/research/notebooks", None),
    ("POST", "/api/v1/research/notebooks", {"note": "buy the dip"}),
    ("PUT", "/api/v1/research/notebooks/N1", {"note": "sell the rip"}),
    ("DELETE", "/api/v1/research/notebooks/N1?symbol=AAPL", None),
    ("GET", "/api/v1/watchlists", None),
    ("POST", "/api/v1/watchlists/save", {"name": "Tech", "symbols": ["AAPL"]}),
    ("POST", "/api/v1/alerts/subscribe", None),
    ("GET", "/api/v1/alerts/price-triggers", None),
    ("POST", "/api/v1/alerts/price-triggers", {"symbol": "AAPL", "direction": "ABOVE", "price": 1000}),
    ("DELETE", "/api/v1/alerts/price-triggers/T1", None),
    ("GET", "/api/v1/preferences", None),
    ("PUT", "/api/v1/preferences", {"values": {"theme": "dark"}}),
    ("DELETE", "/api/v1/preferences", None),
    ("GET", "/api/v1/reference/holiday-calendar", None),
]


async def test_the_session_list_covers_the_41_endpoints_of_this_piece() -> None:
    assert len({(method, path.split("?")[0]) for method, path, _ in SESSION_ENDPOINTS}) == 41


@pytest.mark.parametrize(
    ("method", "path", "body"), SESSION_ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in SESSION_ENDPOINTS]
)
async def test_every_endpoint_answers_auth_required_when_logged_out(
    logged_out, method: str, path: str, body: dict | None
) -> None:
    status, envelope = await logged_out.call(method, path, json=body)
    assert status == 401, envelope
    assert envelope["ok"] is False and envelope["error"]["code"] == "AUTH_REQUIRED"
    assert "/api/v1/auth/login" in envelope["error"]["message"]
