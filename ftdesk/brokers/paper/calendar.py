"""NYSE holidays and early closes computed by rule, and New York local time without a tz database.

The holiday rules are those of NYSE Rule 7.2: a holiday on a Saturday is observed the Friday before
and one on a Sunday the Monday after, except New Year's Day, which is not observed at all when it falls
on a Saturday. The exchange closes at 13:00 on the day before Independence Day and on Christmas Eve
when those are Monday to Thursday, and on the day after Thanksgiving. Unscheduled closures (national
days of mourning, storms) cannot be derived from a rule; the few since 2012 are listed explicitly.

New York time is computed from the US daylight-saving rule instead of ``zoneinfo`` because Windows has
no system time-zone database and ``tzdata`` is not a dependency.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from types import MappingProxyType

from ftdesk.domain.user_data import Holiday

EARLY_CLOSE_TIME = "13:00"
CLOSED = "CLOSED"
EARLY_CLOSE = "EARLY_CLOSE"

_UNSCHEDULED_CLOSURES: Mapping[date, str] = MappingProxyType(
    {
        date(2012, 10, 29): "Hurricane Sandy",
        date(2012, 10, 30): "Hurricane Sandy",
        date(2018, 12, 5): "National Day of Mourning for President George H. W. Bush",
        date(2025, 1, 9): "National Day of Mourning for President Jimmy Carter",
    }
)

_MON, _TUE, _WED, _THU, _FRI, _SAT, _SUN = range(7)


def easter_sunday(year: int) -> date:
    """Return Western (Gregorian) Easter Sunday of ``year`` (anonymous Gregorian algorithm)."""
    a = year % 19
    b, c = divmod(year, 100)
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    el = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * el) // 451
    month, day = divmod(h + el - 7 * m + 114, 31)
    return date(year, month, day + 1)


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """Return the ``n``-th ``weekday`` (0 = Monday) of a month; ``n = -1`` is the last one."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = (date(year + month // 12, month % 12 + 1, 1)) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: date) -> date:
    if day.weekday() == _SAT:
        return day - timedelta(days=1)
    if day.weekday() == _SUN:
        return day + timedelta(days=1)
    return day


def nyse_closures(year: int) -> dict[date, str]:
    """Return the days of ``year`` the NYSE is closed (besides weekends), with the holiday's name."""
    closures: dict[date, str] = {}

    def add(actual: date, name: str) -> None:
        observed = _observed(actual)
        if observed.year == year:
            closures[observed] = name if observed == actual else f"{name} (observed)"

    new_year = date(year, 1, 1)
    if new_year.weekday() != _SAT:  # Rule 7.2: no Friday observance of a Saturday New Year's Day
        add(new_year, "New Year's Day")
    closures[nth_weekday(year, 1, _MON, 3)] = "Martin Luther King, Jr. Day"
    closures[nth_weekday(year, 2, _MON, 3)] = "Washington's Birthday"
    closures[easter_sunday(year) - timedelta(days=2)] = "Good Friday"
    closures[nth_weekday(year, 5, _MON, -1)] = "Memorial Day"
    if year >= 2022:
        add(date(year, 6, 19), "Juneteenth National Independence Day")
    add(date(year, 7, 4), "Independence Day")
    closures[nth_weekday(year, 9, _MON, 1)] = "Labor Day"
    closures[nth_weekday(year, 11, _THU, 4)] = "Thanksgiving Day"
    add(date(year, 12, 25), "Christmas Day")
    for day, name in _UNSCHEDULED_CLOSURES.items():
        if day.year == year:
            closures[day] = name
    return dict(sorted(closures.items()))


def nyse_early_closes(year: int) -> dict[date, str]:
    """Return the days of ``year`` the NYSE closes at 13:00 New York time, with the reason."""
    early: dict[date, str] = {}
    july_third = date(year, 7, 3)
    if july_third.weekday() <= _THU:
        early[july_third] = "Day before Independence Day"
    early[nth_weekday(year, 11, _THU, 4) + timedelta(days=1)] = "Day after Thanksgiving"
    christmas_eve = date(year, 12, 24)
    if christmas_eve.weekday() <= _THU:
        early[christmas_eve] = "Christmas Eve"
    return dict(sorted(early.items()))


def holiday_calendar(year: int) -> list[Holiday]:
    """Return the NYSE holidays and early closes of ``year``, in date order."""
    rows = [Holiday(date=day.isoformat(), name=name, status=CLOSED) for day, name in nyse_closures(year).items()]
    rows += [
        Holiday(date=day.isoformat(), name=name, status=EARLY_CLOSE, close_time=EARLY_CLOSE_TIME)
        for day, name in nyse_early_closes(year).items()
    ]
    return sorted(rows, key=lambda row: row.date)


@functools.lru_cache(maxsize=64)
def _closed_days(year: int) -> frozenset[date]:
    # Asked on every priced read (the quoted session); a year's holidays never change.
    return frozenset(nyse_closures(year))


def is_trading_day(day: date) -> bool:
    """Return True when the NYSE is open (at least part of) ``day``."""
    return day.weekday() < _SAT and day not in _closed_days(day.year)


def previous_trading_day(day: date) -> date:
    """Return the last NYSE trading day on or before ``day``."""
    while not is_trading_day(day):
        day -= timedelta(days=1)
    return day


# --- New York local time ---------------------------------------------------------------------

_STANDARD = timedelta(hours=-5)
_DAYLIGHT = timedelta(hours=-4)
_HOUR = timedelta(hours=1)


@functools.lru_cache(maxsize=64)  # pure, and asked on every conversion to New York time (every priced read)
def _dst_local_bounds(year: int) -> tuple[datetime, datetime]:
    """Return the naive local start and end (both at 02:00 on the clock then in force) of DST."""
    if year >= 2007:
        start, end = nth_weekday(year, 3, _SUN, 2), nth_weekday(year, 11, _SUN, 1)
    else:
        start, end = nth_weekday(year, 4, _SUN, 1), nth_weekday(year, 10, _SUN, -1)
    return datetime(start.year, start.month, start.day, 2), datetime(end.year, end.month, end.day, 2)


class _NewYorkTime(tzinfo):
    """America/New_York from the US daylight-saving rule (valid from 1987 on)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        if dt is None:
            return _STANDARD
        start, end = _dst_local_bounds(dt.year)
        naive = dt.replace(tzinfo=None, fold=0)
        if start <= naive < end - _HOUR:
            return _DAYLIGHT
        if end - _HOUR <= naive < end:  # the repeated hour: fold=0 is the first (daylight) pass
            return _STANDARD if dt.fold else _DAYLIGHT
        return _STANDARD

    def dst(self, dt: datetime | None) -> timedelta:
        return self.utcoffset(dt) - _STANDARD

    def tzname(self, dt: datetime | None) -> str:
        return "EDT" if self.utcoffset(dt) == _DAYLIGHT else "EST"

    def fromutc(self, dt: datetime) -> datetime:
        utc = dt.replace(tzinfo=None)
        start, end = _dst_local_bounds(utc.year)
        start_utc, end_utc = start - _STANDARD, end - _DAYLIGHT
        if start_utc <= utc < end_utc:
            return (utc + _DAYLIGHT).replace(tzinfo=self)
        fold = 1 if end_utc <= utc < end_utc + _HOUR else 0
        return (utc + _STANDARD).replace(tzinfo=self, fold=fold)

    def __repr__(self) -> str:
        return "America/New_York"


NEW_YORK: tzinfo = _NewYorkTime()
"""New York local time (stateless, so one shared instance is safe)."""


def to_new_york(moment: datetime) -> datetime:
    """Return an aware ``moment`` as New York local time."""
    return moment.astimezone(NEW_YORK)


def new_york_datetime(day: date, hour: int = 0, minute: int = 0) -> datetime:
    """Return the UTC instant of a New York wall-clock time on ``day``."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=NEW_YORK).astimezone(UTC)


def new_york_midnight(day: date) -> datetime:
    """Return the UTC instant at which ``day`` begins in New York."""
    return new_york_datetime(day)
