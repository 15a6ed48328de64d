"""/health's answer is written from pydantic's JSON as it is: the same bytes the envelope's json.dumps made."""

from __future__ import annotations

import json

import pytest

from ftdesk.service.routes.health import Health, health_json_around_uptime
from ftdesk.service.web.envelope import JsonText, ok_response

AWKWARD_TEXT = [
    "",
    'a "quoted" \\ path',
    "\x00\x01\x1f\x7f\x80\x9f",
    "\u2028\u2029",
    "é 漢字 🙂",
    "</script>",
    "tab\tnl\n",
]


@pytest.mark.parametrize("uptime", [0.0, 0.001, 0.005, 0.1, 2.675, 59.999, 86_399.999, 31_536_000.123, 999_999_999.5])
@pytest.mark.parametrize("text", AWKWARD_TEXT)
def test_health_body_is_what_json_dumps_of_the_dump_was(uptime: float, text: str) -> None:
    health = Health(
        status="ok",
        service="ftdesk",
        version=text or "0.1.0",
        broker="paper",
        paper_market=None if text else "simulated",
        mode=text,
        live_trading=bool(text),
        halted=not text,
        api_key_required=True,
        uptime_seconds=round(uptime, 3),
        problems=[text, "the data dir is full"] if text else [],
    )
    before = json.dumps(
        {"ok": True, "data": health.model_dump(mode="json"), "error": None},
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    response = ok_response(health)
    assert response.text == before
    assert response.content_type == "application/json"


@pytest.mark.parametrize("uptime", [0.0, 0.0004, 0.001, 0.005, 0.1, 2.675, 59.999, 86_399.9996, 999_999_999.5])
@pytest.mark.parametrize("text", AWKWARD_TEXT)
def test_health_answer_written_around_the_uptime_is_the_models(uptime: float, text: str) -> None:
    # The answer /health serves is made once per state and only its uptime written per request; it must be
    # the bytes the Health model itself makes, whatever the strings hold (a problem naming "uptime_seconds").
    problems = [text, '"uptime_seconds":0.0,', "the data dir is full"] if text else []
    state = (text or "0.1.0", "paper", None if text else "simulated", text, bool(text), not text, True, tuple(problems))
    before, after = health_json_around_uptime(*state)
    served = ok_response(JsonText(before + repr(round(uptime, 3)) + after))
    model = Health(
        status="ok",
        service="ftdesk",
        version=state[0],
        broker=state[1],
        paper_market=state[2],
        mode=state[3],
        live_trading=state[4],
        halted=state[5],
        api_key_required=state[6],
        uptime_seconds=round(uptime, 3),
        problems=problems,
    )
    assert served.text == ok_response(model).text
    assert served.content_type == "application/json"
