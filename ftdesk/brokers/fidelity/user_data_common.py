"""What the user-data endpoints share: the ``sysMsgs`` verdict of watchlists and preferences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.upstream_answer import parse_upstream_detail
from ftdesk.domain.errors import BrokerError


def sys_msgs(payload: Any) -> list[dict[str, Any]]:
    """Return the ``sysMsgs.sysMsg`` entries of an answer (a list or a lone object)."""
    return v.items(payload, "sysMsgs")


def check_sys_msgs(payload: Any, what: str, succeeded: Callable[[dict[str, Any]], bool]) -> None:
    """Raise ``BrokerError`` with the upstream's message unless some ``sysMsg`` says the call succeeded.

    An answer without any ``sysMsg`` passes: only the success messages were captured, so silence is not
    taken for a refusal.
    """
    messages = sys_msgs(payload)
    if not messages or any(succeeded(message) for message in messages):
        return
    texts: list[str] = []
    codes: list[str] = []
    for message in messages:
        code, text = parse_upstream_detail(v.text(message.get("detail")) or v.text_or(message.get("message")))
        if text and text not in texts:
            texts.append(text)
        upstream_code = code or v.text(message.get("code"))
        if upstream_code:
            codes.append(upstream_code)
    raise BrokerError(
        f"Fidelity refused the {what}: {'; '.join(texts) or 'no reason given'}",
        details={"upstream_codes": codes},
    )
