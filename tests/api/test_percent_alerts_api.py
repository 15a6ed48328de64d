"""Percent price alerts through the real server on the paper broker: made, listed, refused when impossible."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningService
from tests.fakes.clock import ManualClock

TRIGGERS = "/api/v1/alerts/price-triggers"


@pytest.fixture
async def service(start_service: Any) -> RunningService:
    running: RunningService = await start_service(clock=ManualClock())
    await running.login()
    return running


async def test_a_percent_alert_round_trip(service: RunningService) -> None:
    status, made = await service.call(
        "POST", TRIGGERS, json={"symbol": "MSFT", "direction": "BELOW", "price": 10, "basis": "PERCENT"}
    )
    assert status == 201, made
    assert (made["data"]["basis"], made["data"]["price"], made["data"]["direction"]) == ("PERCENT", 10.0, "BELOW")
    status, listed = await service.call("GET", TRIGGERS)
    assert [t["basis"] for t in listed["data"]] == ["PERCENT"]
    status, level = await service.call("POST", TRIGGERS, json={"symbol": "MSFT", "direction": "ABOVE", "price": 9999})
    assert status == 201 and level["data"]["basis"] == "PRICE"  # the default: a price level


async def test_a_fall_of_100_percent_or_more_is_refused(service: RunningService) -> None:
    status, refused = await service.call(
        "POST", TRIGGERS, json={"symbol": "MSFT", "direction": "BELOW", "price": 100, "basis": "PERCENT"}
    )
    assert status == 422 and refused["error"]["code"] == "VALIDATION_ERROR", refused
    assert "cannot fall 100%" in refused["error"]["message"] + str(refused["error"]["details"])
