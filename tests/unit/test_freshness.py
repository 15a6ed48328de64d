"""Freshness records: what a read answered from memory turns into on the response."""

from __future__ import annotations

import asyncio

from ftdesk.domain.freshness import collecting, report, unreported


def test_nothing_served_from_memory_means_no_headers() -> None:
    with collecting() as record:
        pass
    assert record.headers() == {}


def test_a_cached_answer_says_its_age_in_whole_seconds_and_its_lifetime() -> None:
    with collecting() as record:
        report(125.7, 43200)
    assert record.headers() == {"Age": "125", "Cache-Control": "max-age=43200"}


def test_a_fresh_answer_that_was_kept_says_only_how_long_it_may_be_reused() -> None:
    with collecting() as record:
        report(0.0, 600, fresh=True)
    assert record.headers() == {"Cache-Control": "max-age=600"}


def test_an_answer_from_memory_says_age_0_even_within_its_first_second() -> None:
    with collecting() as record:
        report(0.0, 600)
    assert record.headers() == {"Age": "0", "Cache-Control": "max-age=600"}


def test_two_answers_combine_into_the_oldest_age_and_the_shortest_remaining_life() -> None:
    with collecting() as record:
        report(100, 3600)  # 3500 s left
        report(10, 600)  # 590 s left
    assert record.headers() == {"Age": "100", "Cache-Control": "max-age=690"}


def test_reports_outside_a_collection_or_inside_unreported_work_go_nowhere() -> None:
    report(5, 60)  # nobody collects: nothing happens
    with collecting() as record, unreported():
        report(5, 60)
    assert record.headers() == {}


async def test_tasks_started_by_a_request_report_into_its_record_and_requests_stay_apart() -> None:
    async def serve(age: float) -> dict[str, str]:
        with collecting() as record:
            await asyncio.create_task(_report_later(age))
        return record.headers()

    first, second = await asyncio.gather(serve(3), serve(7))
    assert first == {"Age": "3", "Cache-Control": "max-age=60"}
    assert second == {"Age": "7", "Cache-Control": "max-age=60"}


async def _report_later(age: float) -> None:
    await asyncio.sleep(0)
    report(age, 60)
