"""The market holiday calendar on dpservice's ``dpdirect`` GET API.

The upstream takes no year: it answers the days it knows (unix seconds at New York midnight, ``H`` closed
all day, ``A`` early close at ``earlyCloseTm``), and ftdesk keeps those of the year asked for.
"""

from __future__ import annotations

from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.domain.user_data import Holiday

HOLIDAYS_URL = f"{DPSERVICE}/ftgw/dpdirect/market/holidaycalendar/v1?countryCode=US"
CLOSED = "CLOSED"
EARLY_CLOSE = "EARLY_CLOSE"


async def fetch_holidays(http: FidelityHttp, year: int) -> list[Holiday]:
    """Return the US market holidays and early closes of ``year``, in date order."""
    payload = await http.json("GET", HOLIDAYS_URL, what="holiday calendar request")
    return map_holidays(payload, year)


def map_holidays(payload: Any, year: int) -> list[Holiday]:
    """Map the calendar answer, keeping one entry per day of ``year``, in date order."""
    by_day: dict[str, Holiday] = {}
    for raw in v.items(payload, "holidayCalendarDetails"):
        country = v.text(raw.get("countryCode"))
        day = v.day(raw.get("date"))
        if day is None or day.year != year or (country is not None and country.upper() != "US"):
            continue
        by_day.setdefault(day.isoformat(), map_holiday(raw, day.isoformat()))
    return [by_day[key] for key in sorted(by_day)]


def map_holiday(raw: dict[str, Any], iso_day: str) -> Holiday:
    """Map one calendar entry: ``A`` (or any entry with a close time) is an early close, else closed."""
    close_time = _clock_time(raw.get("earlyCloseTm"))
    kind = v.text_or(raw.get("holidayType")).upper()
    early = kind == "A" or (kind != "H" and close_time is not None)
    return Holiday(
        date=iso_day,
        name=v.text(raw.get("holidayDesc")) or ("Early close" if early else "Market closed"),
        status=EARLY_CLOSE if early else CLOSED,
        close_time=close_time if early else None,
        raw=raw,
    )


def _clock_time(value: Any) -> str | None:
    """Return ``HH:MM`` from ``"13:00:00.000"``-like text, or None."""
    text = v.text(value)
    if text is None:
        return None
    hours, _, rest = text.partition(":")
    minutes = rest[:2]
    if not (hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
        return None
    return f"{int(hours):02d}:{minutes}"
