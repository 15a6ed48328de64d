"""Lenient reading of upstream values."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from ftdesk.brokers.fidelity import values as v


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (133784.61, 133784.61),
        ("133784.61", 133784.61),
        ("0.000", 0.0),
        ("1,234.56", 1234.56),
        ("-3.17", -3.17),
        ("(12.50)", -12.5),
        ("$1,000", 1000.0),
        ("4.49%", 4.49),
        (7, 7.0),
        ("", None),
        ("--", None),
        ("N/A", None),
        (None, None),
        ("abc", None),
        (True, None),
        ("Infinity", None),
        ({"a": 1}, None),
    ],
)
def test_numbers_arrive_as_numbers_or_strings_with_null_sentinels(raw: object, expected: float | None) -> None:
    assert v.number(raw) == expected


def test_defaults_and_integers() -> None:
    assert v.number_or("--", 5.0) == 5.0
    assert v.integer("4") == 4 and v.integer("4.9") == 4 and v.integer("N/A") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(True, True), ("false", False), ("TRUE", True), ("Y", True), ("N", False), (0, False), ("--", None), ("x", None)],
)
def test_flags(raw: object, expected: bool | None) -> None:
    assert v.flag(raw) is expected


def test_unix_seconds_and_milliseconds_are_both_read() -> None:
    seconds = v.timestamp(1774912387)
    assert seconds == datetime(2026, 3, 30, 23, 13, 7, tzinfo=UTC)
    assert v.timestamp(1774912387000) == seconds
    assert v.timestamp("1774912387") == seconds
    assert v.timestamp("--") is None


@pytest.mark.parametrize(
    "raw", ["2026-03-30", "03/30/2026", "03/30/26", "20260330", "2026/03/30", 1774843200, "2024-09-12 18:14:41.5"]
)
def test_dates_in_every_upstream_form(raw: object) -> None:
    expected = date(2024, 9, 12) if isinstance(raw, str) and raw.startswith("2024") else date(2026, 3, 30)
    assert v.day(raw) == expected


def test_unix_dates_are_new_york_days() -> None:
    # 2026-03-31 02:00 UTC is still March 30 in New York.
    assert v.iso_day(int(datetime(2026, 3, 31, 2, 0, tzinfo=UTC).timestamp())) == "2026-03-30"
    assert v.iso_day(v.unix_seconds(date(2026, 3, 23))) == "2026-03-23"


def test_text() -> None:
    assert v.text(" AAPL ") == "AAPL" and v.text(2.0) == "2" and v.text("--") is None and v.text_or(None, "x") == "x"


def test_items_unwrap_the_nesting_idiom_and_lone_objects() -> None:
    payload = {"position": {"acctDetails": {"acctDetail": [{"acctNum": "A"}, {"acctNum": "B"}]}}}
    assert [a["acctNum"] for a in v.items(payload, "position", "acctDetails")] == ["A", "B"]
    lone = {"acctDetails": {"acctDetail": {"acctNum": "A"}}}
    assert v.items(lone, "acctDetails") == [{"acctNum": "A"}]
    assert v.items({"acctDetails": [{"acctNum": "A"}, "junk"]}, "acctDetails") == [{"acctNum": "A"}]
    assert v.items({}, "missing", "deeper") == []
    assert v.obj({"a": [{"b": {"c": 1}}]}, "a", "b") == {"c": 1}


def test_records_with_and_first() -> None:
    payload = {"x": {"rows": [{"symbol": "A", "inner": {"symbol": "nested"}}, {"symbol": "B"}]}}
    assert [r["symbol"] for r in v.records_with(payload, "symbol")] == ["A", "B"]
    assert v.first({"a": "--", "b": {"c": 3}}, "a", "b.c") == 3
