"""Lenient reading of upstream values.

Fidelity sends numbers as JSON numbers or strings (``"133784.61"``, ``"1,234.56"``), uses ``""``, ``"--"``
and ``"N/A"`` for "no value", timestamps in Unix seconds or milliseconds, dates in several text forms, and
wraps lists as ``{"xxxDetails": {"xxxDetail": [...]}}`` (sometimes a lone object instead of a list). Every
mapper reads upstream values through these helpers, so a surprise becomes ``None``, never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from ftdesk.domain.accounts import OptionContract, OptionType

NEW_YORK = ZoneInfo("America/New_York")
_NULLS = frozenset({"", "--", "-", "N/A", "NA", "n/a", "null", "None"})
# A Unix time above this many seconds (year 5138) must be milliseconds.
_MILLIS_THRESHOLD = 100_000_000_000
_DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%m/%d/%y", "%Y%m%d", "%Y/%m/%d")
_DATETIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d-%H:%M:%S", "%Y-%m-%d-%H.%M.%S.%f")
# A compact option symbol: root, YYMMDD expiration, C or P, strike (``UNH260618C350``).
_OPTION_SYMBOL = re.compile(r"^-?(?P<root>[A-Z][A-Z0-9.]{0,5}?)(?P<ymd>\d{6})(?P<cp>[CP])(?P<strike>\d+(?:\.\d+)?)$")


def is_null(value: Any) -> bool:
    """Say whether an upstream value means "no value"."""
    return value is None or (isinstance(value, str) and value.strip() in _NULLS)


def number(value: Any) -> float | None:
    """Return a float from a JSON number or a numeric string (thousands separators, %, $ allowed), else None."""
    kind = type(value)
    if kind is float or kind is int:  # most values: skip the text checks (bool is not int here)
        result = float(value)
        return result if math.isfinite(result) else None
    if isinstance(value, bool) or is_null(value):
        return None
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("$", "").rstrip("%")
        negative = text.startswith("(") and text.endswith(")")  # accounting style (12.50)
        try:
            result = float(text.strip("()"))
        except ValueError:
            return None
        if negative:
            result = -result
    else:
        return None
    return result if math.isfinite(result) else None


def number_or(value: Any, default: float = 0.0) -> float:
    """Return ``number(value)``, or ``default`` when there is none."""
    result = number(value)
    return default if result is None else result


def integer(value: Any) -> int | None:
    """Return an int from a JSON number or numeric string (truncating a fraction), else None."""
    result = number(value)
    return None if result is None else int(result)


def flag(value: Any) -> bool | None:
    """Return a bool from a JSON boolean or a text/number form ("true", "Y", "1"), else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str) and not is_null(value):
        text = value.strip().lower()
        if text in ("true", "y", "yes", "1"):
            return True
        if text in ("false", "n", "no", "0"):
            return False
    return None


def flag_or(value: Any, default: bool = False) -> bool:
    """Return ``flag(value)``, or ``default`` when there is none."""
    result = flag(value)
    return default if result is None else result


def text(value: Any) -> str | None:
    """Return a stripped string (numbers printed), or None for a null sentinel."""
    if is_null(value) or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def text_or(value: Any, default: str = "") -> str:
    """Return ``text(value)``, or ``default`` when there is none."""
    result = text(value)
    return default if result is None else result


def timestamp(value: Any) -> datetime | None:
    """Return an aware UTC datetime from Unix seconds or milliseconds, or from a date/time string."""
    if isinstance(value, bool) or is_null(value):
        return None
    seconds = number(value) if isinstance(value, int | float) or _looks_numeric(value) else None
    if seconds is not None:
        if abs(seconds) >= _MILLIS_THRESHOLD:
            seconds /= 1000
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    raw = value.strip()
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
        for fmt in _DATETIME_FORMATS + _DATE_FORMATS:
            try:
                parsed = datetime.strptime(raw, fmt)
                break
            except ValueError:
                continue
    if parsed is None:
        return None
    # Wall times without a zone are New York exchange times.
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=NEW_YORK)).astimezone(UTC)


def day(value: Any) -> date | None:
    """Return the New York calendar date of a Unix time or of a date string in any of the upstream forms."""
    if isinstance(value, str):
        raw = value.strip()
        for fmt in _DATE_FORMATS:
            try:
                return datetime.strptime(raw, fmt).date()
            except ValueError:
                continue
    moment = timestamp(value)
    return None if moment is None else moment.astimezone(NEW_YORK).date()


def iso_day(value: Any) -> str | None:
    """Return ``day(value)`` as ISO ``YYYY-MM-DD``, or None."""
    result = day(value)
    return None if result is None else result.isoformat()


def iso_time(value: Any) -> str | None:
    """Return ``timestamp(value)`` as ISO 8601, or None."""
    result = timestamp(value)
    return None if result is None else result.isoformat()


def unix_seconds(moment: date) -> int:
    """Return the Unix time of New York midnight at the start of a date (how the upstream sends dates)."""
    return int(datetime(moment.year, moment.month, moment.day, tzinfo=NEW_YORK).timestamp())


def _looks_numeric(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lstrip("-").replace(".", "", 1).isdigit()


# --- structure ------------------------------------------------------------------------------


def obj(value: Any, *path: str) -> dict[str, Any]:
    """Return the dict at ``path`` inside ``value`` (a lone-element list is unwrapped), or an empty dict."""
    current = value
    for key in path:
        if isinstance(current, list) and len(current) == 1:
            current = current[0]
        current = current.get(key) if isinstance(current, dict) else None
    if isinstance(current, list) and len(current) == 1:
        current = current[0]
    return current if isinstance(current, dict) else {}


def items(value: Any, *path: str) -> list[dict[str, Any]]:
    """Return the list of dicts at ``path``: a list, a lone object, or a ``{"xDetails": {"xDetail": [...]}}``.

    The last path element may name the wrapper (``positionDetails``); its singular inner key is unwrapped.
    """
    current = value
    for key in path:
        if isinstance(current, list) and len(current) == 1:
            current = current[0]
        current = current.get(key) if isinstance(current, dict) else None
    if isinstance(current, dict) and path:
        inner_key = path[-1][:-1] if path[-1].endswith("s") else None
        if inner_key is not None and inner_key in current:
            current = current[inner_key]
    if isinstance(current, dict):
        return [current]
    if isinstance(current, list):
        return [item for item in current if isinstance(item, dict)]
    return []


def walk_dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Yield every dict inside a JSON value, depth first (for shapes only partly known)."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from walk_dicts(child)
    elif isinstance(value, list):
        for child in value:
            yield from walk_dicts(child)


def records_with(value: Any, *markers: str) -> list[dict[str, Any]]:
    """Return the dicts inside ``value`` that carry any of the marker keys (outermost matches only)."""
    found: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if any(marker in node for marker in markers):
                found.append(node)
                return
            for child in node.values():
                visit(child)
        elif isinstance(node, list):
            for child in node:
                visit(child)

    visit(value)
    return found


def first(record: Mapping[str, Any], *keys: str) -> Any:
    """Return the first non-null value among ``keys`` (dotted paths allowed), or None."""
    for key in keys:
        current: Any = record
        for part in key.split("."):
            current = current.get(part) if isinstance(current, Mapping) else None
        if not is_null(current):
            return current
    return None


def option_contract(symbol: str) -> OptionContract | None:
    """Parse the compact option symbol of positions and orders (``UNH260618C350``), or None."""
    match = _OPTION_SYMBOL.match(symbol.strip().upper())
    if match is None:
        return None
    ymd = match.group("ymd")
    try:
        expiration = date(2000 + int(ymd[:2]), int(ymd[2:4]), int(ymd[4:]))
    except ValueError:
        return None
    return OptionContract(
        underlying=match.group("root"),
        option_type=OptionType.CALL if match.group("cp") == "C" else OptionType.PUT,
        strike=float(match.group("strike")),
        expiration=expiration,
    )


def new_york_date(moment: datetime) -> date:
    """Return the date of a moment in New York: the upstream's business day."""
    return moment.astimezone(NEW_YORK).date()
