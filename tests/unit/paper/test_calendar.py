"""The NYSE holiday calendar by rule, checked against the exchange's published calendars, and New York time."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from ftdesk.brokers.paper.calendar import (
    easter_sunday,
    holiday_calendar,
    is_trading_day,
    new_york_midnight,
    nyse_closures,
    nyse_early_closes,
    to_new_york,
)

# As published by NYSE Group (holiday and early-closing calendars for 2025-2028).
NYSE_2025_CLOSED = [
    "2025-01-01",
    "2025-01-09",  # National Day of Mourning for President Carter
    "2025-01-20",
    "2025-02-17",
    "2025-04-18",
    "2025-05-26",
    "2025-06-19",
    "2025-07-04",
    "2025-09-01",
    "2025-11-27",
    "2025-12-25",
]
NYSE_2025_EARLY = ["2025-07-03", "2025-11-28", "2025-12-24"]
NYSE_2026_CLOSED = [
    "2026-01-01",
    "2026-01-19",
    "2026-02-16",
    "2026-04-03",
    "2026-05-25",
    "2026-06-19",
    "2026-07-03",
    "2026-09-07",
    "2026-11-26",
    "2026-12-25",
]
NYSE_2026_EARLY = ["2026-11-27", "2026-12-24"]


def _dates(year: int, status: str) -> list[str]:
    return [row.date for row in holiday_calendar(year) if row.status == status]


def test_2025_matches_the_published_nyse_calendar() -> None:
    assert _dates(2025, "CLOSED") == NYSE_2025_CLOSED
    assert _dates(2025, "EARLY_CLOSE") == NYSE_2025_EARLY


def test_2026_matches_the_published_nyse_calendar() -> None:
    assert _dates(2026, "CLOSED") == NYSE_2026_CLOSED
    # July 4 is a Saturday: Friday July 3 is the holiday and Thursday July 2 is a normal day.
    assert _dates(2026, "EARLY_CLOSE") == NYSE_2026_EARLY


def test_2027_and_2028_observance_rules() -> None:
    closed_2027 = nyse_closures(2027)
    assert date(2027, 6, 18) in closed_2027  # Juneteenth on Saturday -> Friday
    assert date(2027, 7, 5) in closed_2027  # Independence Day on Sunday -> Monday
    assert date(2027, 12, 24) in closed_2027  # Christmas on Saturday -> Friday
    assert date(2027, 12, 23) not in nyse_early_closes(2027)  # no early close before an observed holiday
    # New Year's Day 2028 is a Saturday: NYSE Rule 7.2 observes nothing, not even Friday Dec 31 2027.
    assert date(2027, 12, 31) not in closed_2027
    assert not any(day.month == 1 and day.day <= 3 for day in nyse_closures(2028))
    assert date(2028, 7, 3) in nyse_early_closes(2028)


def test_juneteenth_exists_only_from_2022() -> None:
    assert not any(day.month == 6 and day.day in (18, 19, 20) for day in nyse_closures(2021))
    assert date(2022, 6, 20) in nyse_closures(2022)  # Sunday -> Monday


def test_rows_carry_names_status_and_close_time() -> None:
    rows = holiday_calendar(2025)
    good_friday = next(row for row in rows if row.date == "2025-04-18")
    assert good_friday.name == "Good Friday"
    assert good_friday.status == "CLOSED"
    assert good_friday.close_time is None
    early = [row for row in rows if row.status == "EARLY_CLOSE"]
    assert {row.close_time for row in early} == {"13:00"}
    assert [row.date for row in rows] == sorted(row.date for row in rows)
    observed = next(row for row in holiday_calendar(2026) if row.date == "2026-07-03")
    assert "observed" in observed.name


@pytest.mark.parametrize(
    ("year", "expected"),
    [(2024, date(2024, 3, 31)), (2025, date(2025, 4, 20)), (2026, date(2026, 4, 5)), (2038, date(2038, 4, 25))],
)
def test_easter(year: int, expected: date) -> None:
    assert easter_sunday(year) == expected


def test_trading_days() -> None:
    assert is_trading_day(date(2026, 11, 16))
    assert not is_trading_day(date(2026, 11, 15))  # Sunday
    assert not is_trading_day(date(2026, 11, 26))  # Thanksgiving
    assert is_trading_day(date(2026, 11, 27))  # early close is still a trading day


def test_new_york_time_follows_daylight_saving() -> None:
    spring = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # 02:00 EST becomes 03:00 EDT
    assert to_new_york(spring - timedelta(seconds=1)).strftime("%H:%M:%S %Z") == "01:59:59 EST"
    assert to_new_york(spring).strftime("%H:%M %Z") == "03:00 EDT"
    fall = datetime(2026, 11, 1, 6, 0, tzinfo=UTC)  # 02:00 EDT becomes 01:00 EST
    first, second = to_new_york(fall - timedelta(minutes=30)), to_new_york(fall + timedelta(minutes=30))
    assert first.strftime("%H:%M") == second.strftime("%H:%M") == "01:30"
    assert (first.utcoffset(), second.utcoffset()) == (timedelta(hours=-4), timedelta(hours=-5))
    assert (first.fold, second.fold) == (0, 1)
    assert first.astimezone(UTC) == fall - timedelta(minutes=30)
    assert second.astimezone(UTC) == fall + timedelta(minutes=30)
    assert new_york_midnight(date(2026, 7, 1)) == datetime(2026, 7, 1, 4, tzinfo=UTC)
    assert new_york_midnight(date(2026, 12, 1)) == datetime(2026, 12, 1, 5, tzinfo=UTC)


def test_new_york_time_agrees_with_the_tz_database() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        reference = zoneinfo.ZoneInfo("America/New_York")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time-zone database on this machine")
    moment = datetime(2019, 1, 1, tzinfo=UTC)
    while moment.year < 2031:
        ours, theirs = to_new_york(moment), moment.astimezone(reference)
        assert (ours.replace(tzinfo=None), ours.utcoffset()) == (theirs.replace(tzinfo=None), theirs.utcoffset())
        moment += timedelta(hours=7, minutes=13)
