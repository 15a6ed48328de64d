"""Paper answers are computed when asked: no read carries Cache-Control or Age (Fidelity's cached reads do)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import RunningService
from tests.fakes.clock import ManualClock

READS = (
    "/api/v1/reference/holiday-calendar",
    "/api/v1/market-data/markets/AAPL",
    "/api/v1/research/search?q=AAP",
    "/api/v1/accounts",
)


async def test_paper_reads_say_nothing_about_caching_even_when_repeated(start_service: Callable[..., Any]) -> None:
    service: RunningService = await start_service(clock=ManualClock())
    await service.login()
    for path in READS:
        for _ in range(2):
            async with service.http.get(service.url(path), headers=service.auth) as response:
                assert response.status == 200, await response.text()
                assert "Cache-Control" not in response.headers and "Age" not in response.headers
