"""Market-data endpoints through the real server: chain, montage, chart, time and sales, markets.

The paper market runs on a manual clock stopped at Monday 2026-11-16 10:00 New York, so the market is
open and every call sees the same instant; one logged-in service serves the module (all reads).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, datetime, timedelta

import pytest
import pytest_asyncio

from tests.api.test_accounts_api import shared_service
from tests.conftest import RunningService

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningService]:
    async with shared_service(tmp_path_factory.mktemp("market-data"), login=True) as running:
        yield running


async def get_ok(service, path: str, **params) -> dict:
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


# --- option chain -------------------------------------------------------------------------------------


async def test_chain_lists_calls_and_puts_by_expiration_and_strike(service) -> None:
    chain = await get_ok(service, "/api/v1/market-data/chain/aapl")
    assert chain["symbol"] == "AAPL" and chain["underlying_price"] > 0
    expirations = [e["expiration"] for e in chain["expirations"]]
    assert expirations == sorted(expirations) and len(expirations) >= 4
    assert all(e["expiration"] >= "2026-11-16" and e["days_to_expiration"] >= 0 for e in chain["expirations"])
    first = chain["expirations"][0]
    strikes = [row["strike"] for row in first["strikes"]]
    assert strikes == sorted(strikes)
    assert strikes[0] < chain["underlying_price"] < strikes[-1]
    yymmdd = date.fromisoformat(first["expiration"]).strftime("%y%m%d")
    for row in first["strikes"]:
        call, put = row["call"], row["put"]
        assert call["option_type"] == "CALL" and put["option_type"] == "PUT"
        assert call["strike"] == put["strike"] == row["strike"]
        assert call["symbol"].startswith(f"AAPL{yymmdd}C") and put["symbol"].startswith(f"AAPL{yymmdd}P")
        assert 0 <= call["bid"] <= call["ask"] and 0 <= call["greeks"]["delta"] <= 1
        assert -1 <= put["greeks"]["delta"] <= 0


async def test_chain_of_an_unknown_symbol_is_404(service) -> None:
    error = await get_error(service, "/api/v1/market-data/chain/NOSUCHCO", 404, "NOT_FOUND")
    assert "NOSUCHCO" in error["message"]


# --- montage --------------------------------------------------------------------------------------------


async def test_montage_rows_are_exchanges_best_bid_first(service) -> None:
    montage = await get_ok(service, "/api/v1/market-data/montage/msft")
    assert montage["symbol"] == "MSFT"
    rows = montage["quotes"]
    assert len(rows) >= 5 and len({r["exchange"] for r in rows}) == len(rows)
    bids = [r["bid"] for r in rows]
    assert bids == sorted(bids, reverse=True)
    assert all(r["bid"] < r["ask"] and r["bid_size"] > 0 and r["ask_size"] > 0 for r in rows)
    assert min(r["ask"] for r in rows) > max(bids)  # the book is not crossed


async def test_montage_of_an_unknown_symbol_is_404(service) -> None:
    await get_error(service, "/api/v1/market-data/montage/NOSUCHCO", 404, "NOT_FOUND")


# --- chart ----------------------------------------------------------------------------------------------


def assert_sane_bars(bars: list[dict]) -> None:
    for bar in bars:
        assert bar["low"] <= min(bar["open"], bar["close"]) <= max(bar["open"], bar["close"]) <= bar["high"]
        assert bar["volume"] > 0


async def test_daily_chart_bars_lie_within_the_requested_range(service) -> None:
    chart = await get_ok(
        service, "/api/v1/market-data/chart/spy", start_date="2026-10-01", end_date="2026-10-31", bar_width="D"
    )
    assert chart["symbol"] == "SPY" and chart["bar_width"] == "D"
    dates = [bar["date"] for bar in chart["bars"]]
    assert dates == sorted(dates) and len(dates) >= 20
    assert all("2026-10-01" <= d <= "2026-10-31" for d in dates)
    assert dates[0] == "2026-10-01" and dates[-1] >= "2026-10-30"  # a Thursday and a Friday: both trading days
    assert_sane_bars(chart["bars"])
    assert chart["symbol_info"]["previous_close"] > 0


async def test_default_chart_is_a_year_of_daily_bars_ending_today(service) -> None:
    chart = await get_ok(service, "/api/v1/market-data/chart/AAPL")
    assert chart["bar_width"] == "D"
    assert "2025-11-16" <= chart["bars"][0]["date"] <= "2025-11-17"  # one year back (a Sunday, then Monday)
    assert chart["bars"][-1]["date"] == "2026-11-16"


async def test_weekly_bars_cover_the_daily_ones(service) -> None:
    daily = await get_ok(service, "/api/v1/market-data/chart/AAPL", start_date="2026-09-01", end_date="2026-10-31")
    weekly = await get_ok(
        service, "/api/v1/market-data/chart/AAPL", start_date="2026-09-01", end_date="2026-10-31", bar_width="w"
    )
    assert weekly["bar_width"] == "W"
    assert 8 <= len(weekly["bars"]) <= 10
    assert all("2026-09-01" <= bar["date"] <= "2026-10-31" for bar in weekly["bars"])
    assert sum(bar["volume"] for bar in weekly["bars"]) == sum(bar["volume"] for bar in daily["bars"])
    assert max(bar["high"] for bar in weekly["bars"]) == max(bar["high"] for bar in daily["bars"])
    assert_sane_bars(weekly["bars"])


async def test_minute_bars_keep_to_regular_hours_unless_extended(service) -> None:
    regular = await get_ok(
        service, "/api/v1/market-data/chart/AAPL", start_date="2026-11-13", end_date="2026-11-13", bar_width="60"
    )
    extended = await get_ok(
        service,
        "/api/v1/market-data/chart/AAPL",
        start_date="2026-11-13",
        end_date="2026-11-13",
        bar_width="60",
        extended_hours="true",
    )
    starts = [datetime.fromisoformat(bar["date"]) for bar in regular["bars"]]
    assert [t.strftime("%H:%M") for t in starts] == [f"{h:02d}:30" for h in range(9, 16)]
    assert all(t.date() == date(2026, 11, 13) for t in starts)
    assert len(extended["bars"]) > len(regular["bars"])
    assert any(datetime.fromisoformat(bar["date"]).hour < 9 for bar in extended["bars"])
    assert_sane_bars(regular["bars"])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"bar_width": "H"}, "bar_width"),
        ({"bar_width": "30"}, "bar_width"),
        ({"extended_hours": "maybe"}, "extended_hours"),
        ({"start_date": "2026-10-02", "end_date": "2026-10-01"}, "end_date"),
        ({"start_date": "10/01/2026"}, "start_date"),
        ({"width": "D"}, "width"),
    ],
)
async def test_chart_bad_query_is_422_naming_the_field(service, params: dict, field: str) -> None:
    error = await get_error(service, "/api/v1/market-data/chart/AAPL", 422, "VALIDATION_ERROR", **params)
    assert bad_fields(error) == {field}


async def test_chart_of_an_unknown_symbol_is_404(service) -> None:
    await get_error(service, "/api/v1/market-data/chart/NOSUCHCO", 404, "NOT_FOUND")


# --- time and sales ---------------------------------------------------------------------------------------


async def test_time_and_sales_returns_max_rows_newest_first(service) -> None:
    tape = await get_ok(service, "/api/v1/market-data/time-and-sales/aapl", max_rows=25)
    assert tape["symbol"] == "AAPL"
    trades = tape["trades"]
    assert len(trades) == 25
    times = [datetime.fromisoformat(t["time"]) for t in trades]
    assert times == sorted(times, reverse=True)
    assert times[0] <= datetime.fromisoformat("2026-11-16T15:00:00+00:00")
    assert times[0] - times[-1] < timedelta(hours=1)
    assert {t["condition"] for t in trades} <= {"F", "I"}  # regular hours: regular and odd-lot trades
    assert all((t["condition"] == "I") == (t["size"] < 100) for t in trades)


async def test_default_time_and_sales_is_100_rows_and_500_is_the_cap(service) -> None:
    assert len((await get_ok(service, "/api/v1/market-data/time-and-sales/AAPL"))["trades"]) == 100
    capped = (await get_ok(service, "/api/v1/market-data/time-and-sales/AAPL", max_rows=500))["trades"]
    assert len(capped) == 500
    # Asking for more is not an error: the server caps the answer at 500 trades, the same 500.
    for more in (501, 1000, 10**12):
        assert (await get_ok(service, "/api/v1/market-data/time-and-sales/AAPL", max_rows=more))["trades"] == capped


async def test_time_and_sales_filters_by_price_and_size(service) -> None:
    recent = (await get_ok(service, "/api/v1/market-data/time-and-sales/AAPL", max_rows=200))["trades"]
    prices = sorted(t["price"] for t in recent)
    low, high = prices[len(prices) // 4], prices[3 * len(prices) // 4]
    filtered = await get_ok(
        service,
        "/api/v1/market-data/time-and-sales/AAPL",
        max_rows=50,
        low_price=low,
        high_price=high,
        low_size=300,
    )
    trades = filtered["trades"]
    assert trades and len(trades) <= 50
    assert all(low <= t["price"] <= high and t["size"] >= 300 for t in trades)
    # The filter drops trades rather than returning fewer: every matching recent trade is there.
    expected = [t for t in recent if low <= t["price"] <= high and t["size"] >= 300][: len(trades)]
    assert trades[: len(expected)] == expected


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"max_rows": 0}, "max_rows"),
        ({"max_rows": -3}, "max_rows"),
        ({"max_rows": "ten"}, "max_rows"),
        ({"max_rows": "2.5"}, "max_rows"),
        ({"low_price": 0}, "low_price"),
        ({"high_price": -5}, "high_price"),
        ({"low_price": 300, "high_price": 200}, "high_price"),
        ({"low_size": 0}, "low_size"),
        ({"low_price": "nan"}, "low_price"),
    ],
)
async def test_time_and_sales_bad_query_is_422_naming_the_field(service, params: dict, field: str) -> None:
    error = await get_error(service, "/api/v1/market-data/time-and-sales/AAPL", 422, "VALIDATION_ERROR", **params)
    assert bad_fields(error) == {field}


async def test_time_and_sales_of_an_unknown_symbol_is_404(service) -> None:
    await get_error(service, "/api/v1/market-data/time-and-sales/NOSUCHCO", 404, "NOT_FOUND")


# --- available markets --------------------------------------------------------------------------------------


async def test_markets_list_auto_as_the_one_default(service) -> None:
    markets = await get_ok(service, "/api/v1/market-data/markets/nvda")
    assert markets["symbol"] == "NVDA"
    defaults = [m for m in markets["markets"] if m["default"]]
    assert [m["routing_code"] for m in defaults] == ["AUTO"]
    assert {"EXCHANGE", "MARKET_MAKER"} <= {m["market_type"] for m in markets["markets"]}
    codes = [m["routing_code"] for m in markets["markets"]]
    assert len(codes) == len(set(codes))


async def test_markets_of_an_unknown_symbol_is_404(service) -> None:
    await get_error(service, "/api/v1/market-data/markets/NOSUCHCO", 404, "NOT_FOUND")


async def test_a_malformed_path_symbol_is_422(service) -> None:
    error = await get_error(service, "/api/v1/market-data/montage/AAPL%22%3B", 422, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "symbol" and error["details"][0]["location"] == "path"
