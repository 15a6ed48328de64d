"""What one Fidelity upstream call answered, and what its errors mean (docs/fidelity-protocol.md: errors).

``UpstreamResponse`` is the answer after redirects; the functions here turn a non-2xx status or a 200 body
saying ``respTypeCode "E"`` into ``SessionExpired`` or ``BrokerError`` carrying the upstream's own message.
``http.FidelityHttp`` produces the answers; every Fidelity module that reads them maps errors through here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.domain.errors import BrokerError, SessionExpired

_UPSTREAM_CODE = re.compile(r"Code=([^,]*),\s*Text=(.*?)(?:,\s*Source=.*)?$", re.DOTALL)


@dataclass(frozen=True)
class UpstreamResponse:
    """What one upstream call answered, after redirects."""

    status: int
    content_type: str
    body: bytes
    url: str
    retry_after: str | None = None
    """The ``Retry-After`` header, as sent."""
    mapped: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)
    """What callers sharing this answer made of it (``FidelityHttp.mapped_json``), made once for all of them."""

    @property
    def ok(self) -> bool:
        """Say whether the status is 2xx."""
        return 200 <= self.status < 300

    def text(self) -> str:
        """Return the body as text."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """Return the body as JSON (None when empty); raise ``SessionExpired`` for HTML, ``BrokerError`` else."""
        stripped = self.body.strip()
        if not stripped:
            return None
        if "html" in self.content_type or stripped[:1] == b"<":
            # A login page where JSON was expected is how an expired session most likely looks (never captured).
            raise SessionExpired("Fidelity answered with a web page instead of data: the session has expired")
        try:
            return json.loads(stripped)
        except ValueError:
            raise BrokerError(f"Fidelity sent a body that is not JSON (HTTP {self.status})") from None


def raise_for_status(response: UpstreamResponse, what: str) -> None:
    """Raise ``SessionExpired`` for 401/403 and ``BrokerError`` (with the upstream message) for other non-2xx."""
    if response.ok:
        return
    if response.status in (401, 403):
        raise SessionExpired(f"Fidelity refused the session (HTTP {response.status}): log in again")
    if response.status == 429:
        # Only writes get here (a read is retried, then answered UPSTREAM_BUSY): a write is never retried.
        raise BrokerError(
            f"Fidelity asked ftdesk to slow down (HTTP 429) and did not take the {what}; ftdesk never "
            "sends a write twice: check whether it took effect (for an order, its status) before sending it again",
            details={"upstream_status": 429, "reason": "UPSTREAM_BUSY", "retried": False},
        )
    message = upstream_message(response)
    suffix = f": {message}" if message else ""
    raise BrokerError(
        f"Fidelity {what} failed (HTTP {response.status}){suffix}",
        details={"upstream_status": response.status},
    )


def upstream_message(response: UpstreamResponse) -> str | None:
    """Return the human message an error body carries, if any (JSON messages, else a short text body)."""
    try:
        payload = json.loads(response.body) if response.body.strip() else None
    except ValueError:
        payload = None
    if payload is None:
        text = response.text().strip()
        return text[:200] if text and "html" not in response.content_type and not text.startswith("<") else None
    for record in v.walk_dicts(payload):
        for key in ("message", "errorMessage", "error_description", "detail", "text"):
            value = v.text(record.get(key))
            if value:
                return value[:300]
    return None


def parse_upstream_detail(detail: str) -> tuple[str | None, str]:
    """Split ``Code=<X>,Text=<msg>,Source=<s>`` into the code and the message; other text is the message."""
    match = _UPSTREAM_CODE.search(detail.strip())
    if match is None:
        return None, detail.strip()
    return match.group(1).strip() or None, match.group(2).strip()


def raise_for_business_error(payload: Any, what: str) -> None:
    """Raise ``BrokerError`` when a 200 body says ``respTypeCode "E"``, with the upstream's message."""
    failed = [record for record in v.walk_dicts(payload) if v.text(record.get("respTypeCode")) == "E"]
    if not failed:
        return
    messages: list[str] = []
    codes: list[str] = []
    for record in v.walk_dicts(payload):
        kind = (v.text(record.get("type")) or v.text(record.get("severity")) or "").lower()
        detail = v.text(record.get("detail")) or v.text(record.get("message"))
        if kind != "error" or not detail:
            continue
        code, message = parse_upstream_detail(detail)
        if message and message not in messages:
            messages.append(message)
            codes.append(code or v.text_or(record.get("code")))
    text = "; ".join(messages) or "the request was refused"
    raise BrokerError(
        f"Fidelity refused the {what}: {text}",
        details={"upstream_codes": [code for code in codes if code]},
    )
