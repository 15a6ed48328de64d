"""The real session paper orders on Fidelity's market fill in: NYSE days and hours, New York time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ftdesk.brokers.paper_on_fidelity.hours import session_open


@pytest.mark.parametrize(
    ("moment", "open_"),
    [
        (datetime(2026, 11, 16, 14, 30, tzinfo=UTC), True),  # Monday 09:30 New York (EST): the open
        (datetime(2026, 11, 16, 14, 29, 59, tzinfo=UTC), False),  # a second before
        (datetime(2026, 11, 16, 20, 59, tzinfo=UTC), True),  # 15:59
        (datetime(2026, 11, 16, 21, 0, tzinfo=UTC), False),  # 16:00: closed
        (datetime(2026, 11, 21, 17, 0, tzinfo=UTC), False),  # Saturday noon
        (datetime(2026, 11, 26, 17, 0, tzinfo=UTC), False),  # Thanksgiving
        (datetime(2026, 11, 27, 17, 59, tzinfo=UTC), True),  # the day after: 12:59, before the early close
        (datetime(2026, 11, 27, 18, 0, tzinfo=UTC), False),  # 13:00: closed early
        (datetime(2026, 7, 6, 13, 30, tzinfo=UTC), True),  # 09:30 EDT in summer
        (datetime(2028, 2, 29, 15, 0, tzinfo=UTC), True),  # a leap day, Tuesday 10:00
        (datetime(2027, 3, 26, 15, 0, tzinfo=UTC), False),  # Good Friday 2027
    ],
)
def test_the_session_is_open_exactly_in_regular_hours_on_trading_days(moment: datetime, open_: bool) -> None:
    assert session_open(moment) is open_
