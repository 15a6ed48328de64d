"""How the status window's journal tab reads: one row per journaled action, in words rather than identifiers.

Pure functions over the journal's entries, so what the trader reads can be checked without widgets. The
kill switch's rows are there too: who halted or resumed, and what the halt canceled.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from ftdesk.service.control import JournalAction, JournalEntry, Outcome

JOURNAL_COLUMNS = ("Time", "Action", "Account", "Symbol", "Side", "Qty", "Price", "Outcome", "Details")
ACTION_WORDS = MappingProxyType(
    {
        JournalAction.PREVIEW: "Preview",
        JournalAction.PLACE: "Place",
        JournalAction.CANCEL_PREVIEW: "Cancel preview",
        JournalAction.CANCEL: "Cancel",
        JournalAction.HALT: "Trading halted",
        JournalAction.RESUME: "Trading resumed",
        JournalAction.LIVE_SWITCH: "Live trading switched",
        JournalAction.MARKET: "Market",
    }
)
KIND_WORDS = MappingProxyType(
    {
        "equity": "stock order",
        "option": "option order",
        "multi_leg": "multi-leg order",
        "replace": "replacement",
        "conditional": "conditional order",
        "conditional_replace": "conditional replacement",
    }
)
EQUITY_SIDES = MappingProxyType({"B": "Buy", "S": "Sell", "SS": "Sell short", "BC": "Buy to cover"})
OUTCOME_WORDS = MappingProxyType(
    {
        Outcome.PENDING: "Waiting for the broker",
        Outcome.ACCEPTED: "Done",
        Outcome.REJECTED: "Rejected by the broker",
        Outcome.REFUSED: "Refused by ftdesk",
        Outcome.ERROR: "Failed",
        Outcome.UNKNOWN: "Unknown: check the broker",
    }
)
_SAFETY = frozenset({JournalAction.HALT, JournalAction.RESUME, JournalAction.LIVE_SWITCH, JournalAction.MARKET})
_WHO = re.compile(r"\((?P<who>[^)]*)\)\s*$")


def action_text(entry: JournalEntry) -> str:
    """Return what was done, in words ("Place stock order", "Cancel by the halt", "Trading halted")."""
    words = ACTION_WORDS.get(entry.action, entry.action.value)
    if entry.order_kind:
        words += f" {KIND_WORDS.get(entry.order_kind, entry.order_kind.replace('_', ' '))}"
    if entry.action is JournalAction.CANCEL and entry.endpoint.startswith("HALT"):
        words += " by the halt"
    return words


def side_text(entry: JournalEntry) -> str:
    """Return the side in words for a stock order (option and multi-leg codes are shown as sent)."""
    side = entry.side or ""
    return EQUITY_SIDES.get(side, side) if entry.order_kind in ("equity", "replace", None) else side


def details_text(entry: JournalEntry) -> str:
    """Return the rest a trader needs: the order, who acted on the switches, the broker's or ftdesk's words."""
    parts: list[str] = []
    if entry.action in _SAFETY:
        found = _WHO.search(entry.endpoint)
        if found and entry.action is not JournalAction.MARKET and "by " not in (entry.message or ""):
            parts.append(f"by {found.group('who')}")
    elif entry.conf_nums:
        parts.append(f"order {', '.join(entry.conf_nums)}")
    if entry.message:
        parts.append(entry.message)
    return "; ".join(parts)


def journal_row(entry: JournalEntry) -> list[str]:
    """Return the cells of one journal entry."""
    qty = "" if entry.qty is None else f"{entry.qty:,g}"
    price = "" if entry.price is None else f"{entry.price:,.2f}"
    outcome = OUTCOME_WORDS.get(entry.outcome, entry.outcome.value)
    if entry.error_code:
        outcome += f" ({entry.error_code})"
    time = entry.time.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return [
        time,
        action_text(entry),
        entry.acct_num or "",
        entry.symbol or "",
        side_text(entry),
        qty,
        price,
        outcome,
        details_text(entry),
    ]
