"""/health's answer is written from pydantic's JSON as it is: the same bytes the envelope's json.dumps made."""

from __future__ import annotations

import json

import pytest

from ftdesk.service.routes.health import Health
from ftdesk.service.web.envelope import ok_response

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
