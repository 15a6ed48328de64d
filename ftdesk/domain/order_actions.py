"""The order action table: every public action per order kind, what it means, and the upstream code it travels as.

One table per order kind (equity, single-leg option, multi-leg leg), read both ways: a request's public action
(and position intent) picks exactly one row, so one upstream code; an upstream code read back picks the row
whose public action it is, never a row that merely shares its letters. The same two letters mean different
things in different kinds (``BC`` is buy to cover for an equity, buy call for a single-leg option, buy to close
for a multi-leg leg) and upstream ``SS`` is "sell specific shares", not a short sale, so a code is only ever
looked up together with its kind.

Each row carries the provenance of its upstream code: ``CAP`` captured traffic,
``DEC`` the decompiled app's enum, ``INF`` an inference. Where the evidence disagrees (``BC``/``SC`` on a
single-leg option: "Buy Call" in captures, "Buy to Close" in the decompiled enum) the adapter checks what the
broker echoes before a preview can be placed; rows marked ``read_only`` are upstream codes the API reports
but does not send. The API guide and the OpenAPI field descriptions are rendered from these rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from ftdesk.domain.orders import LegAction, PositionIntent


class ActionKind(StrEnum):
    """The order kinds whose action codes differ."""

    EQUITY = "equity"
    OPTION = "option"
    LEG = "leg"


class Side(StrEnum):
    """Buy or sell."""

    BUY = "buy"
    SELL = "sell"


@dataclass(frozen=True)
class ActionRow:
    """One action of one order kind, both ways: the public code (with its intent) and the upstream code."""

    kind: ActionKind
    public: str
    intent: PositionIntent | None
    meaning: str
    side: Side
    upstream: str
    upstream_meaning: str
    tag: str
    qualifier: str | None = None
    read_only: bool = False
    note: str = ""


_E, _O, _L = ActionKind.EQUITY, ActionKind.OPTION, ActionKind.LEG
_B, _S = Side.BUY, Side.SELL
_OPEN, _CLOSE = PositionIntent.OPEN, PositionIntent.CLOSE

SELL_ALL = "sell_all"
SELL_SPECIFIC_SHARES = "sell_specific_shares"
BUY, SELL = "buy", "sell"

ACTION_TABLE: tuple[ActionRow, ...] = (
    # --- equity (B and S captured; the rest from the decompiled enum) ---------------------------------------
    ActionRow(_E, "B", None, "buy", _B, "B", "Buy", "CAP"),
    ActionRow(_E, "S", None, "sell", _S, "S", "Sell", "CAP"),
    ActionRow(_E, "SS", None, "sell short", _S, "SH", "Sell Short", "DEC", qualifier="short"),
    ActionRow(_E, "BC", None, "buy to cover", _B, "BH", "Buy to Cover", "DEC", qualifier="cover"),
    ActionRow(_E, SELL_ALL, None, "sell the whole position", _S, "SA", "Sell All", "DEC", "all", read_only=True),
    ActionRow(
        _E,
        SELL_SPECIFIC_SHARES,
        None,
        "sell chosen tax lots",
        _S,
        "SS",
        "Specific Shares",
        "DEC",
        "specific",
        read_only=True,
        note="upstream SS is not a short sale",
    ),
    # --- single-leg option: without an intent the captured codes; with one the decompiled open/close codes
    ActionRow(
        _O, "BC", None, "buy call", _B, "BC", "Buy Call", "CAP", note="the decompiled enum reads BC as Buy to Close"
    ),
    ActionRow(
        _O, "SC", None, "sell call", _S, "SC", "Sell Call", "CAP", note="the decompiled enum reads SC as Sell to Close"
    ),
    ActionRow(_O, "BP", None, "buy put", _B, "BP", "Buy Put", "CAP"),
    ActionRow(_O, "SP", None, "sell put", _S, "SP", "Sell Put", "DEC"),
    ActionRow(_O, "BC", _OPEN, "buy call to open", _B, "BO", "Buy to Open", "DEC"),
    ActionRow(_O, "BP", _OPEN, "buy put to open", _B, "BO", "Buy to Open", "DEC"),
    ActionRow(_O, "SC", _OPEN, "sell call to open", _S, "SO", "Sell to Open", "DEC"),
    ActionRow(_O, "SP", _OPEN, "sell put to open", _S, "SO", "Sell to Open", "DEC"),
    ActionRow(
        _O, "BC", _CLOSE, "buy call to close", _B, "BC", "Buy to Close", "DEC", note="captures read BC as Buy Call"
    ),
    ActionRow(
        _O, "BP", _CLOSE, "buy put to close", _B, "BC", "Buy to Close", "DEC", note="captures read BC as Buy Call"
    ),
    ActionRow(
        _O, "SC", _CLOSE, "sell call to close", _S, "SC", "Sell to Close", "DEC", note="captures read SC as Sell Call"
    ),
    ActionRow(
        _O, "SP", _CLOSE, "sell put to close", _S, "SC", "Sell to Close", "DEC", note="captures read SC as Sell Call"
    ),
    # --- multi-leg legs (BO/SO captured in requests; answers echoed them as BC/SC) ----------------------------
    ActionRow(_L, "BO", _OPEN, "buy to open", _B, "BO", "Buy to Open", "CAP"),
    ActionRow(_L, "SO", _OPEN, "sell to open", _S, "SO", "Sell to Open", "CAP"),
    ActionRow(_L, "BC", _CLOSE, "buy to close", _B, "BC", "Buy to Close", "DEC", note="answers use BC for any buy leg"),
    ActionRow(
        _L, "SC", _CLOSE, "sell to close", _S, "SC", "Sell to Close", "DEC", note="answers use SC for any sell leg"
    ),
    ActionRow(
        _L,
        BUY,
        None,
        "a buy leg whose intent the broker's answer does not say",
        _B,
        "BC",
        "Buy Call",
        "CAP",
        read_only=True,
    ),
    ActionRow(
        _L,
        SELL,
        None,
        "a sell leg whose intent the broker's answer does not say",
        _S,
        "SC",
        "Sell Call",
        "CAP",
        read_only=True,
    ),
)

LEG_WORDS: Mapping[str, LegAction] = MappingProxyType(
    {
        "buy_to_open": LegAction.BUY_TO_OPEN,
        "sell_to_open": LegAction.SELL_TO_OPEN,
        "buy_to_close": LegAction.BUY_TO_CLOSE,
        "sell_to_close": LegAction.SELL_TO_CLOSE,
    }
)
"""The explicit words a multi-leg leg may use instead of the codes, so a script never has to know ``BC``."""

LEG_ACTION_OF: Mapping[tuple[Side, PositionIntent], LegAction] = MappingProxyType(
    {
        (_B, _OPEN): LegAction.BUY_TO_OPEN,
        (_S, _OPEN): LegAction.SELL_TO_OPEN,
        (_B, _CLOSE): LegAction.BUY_TO_CLOSE,
        (_S, _CLOSE): LegAction.SELL_TO_CLOSE,
    }
)


def rows(kind: ActionKind) -> tuple[ActionRow, ...]:
    """Return the rows of one order kind, in table order."""
    return tuple(row for row in ACTION_TABLE if row.kind is kind)


def row_for(kind: ActionKind, public: str, intent: PositionIntent | None = None) -> ActionRow:
    """Return the one placeable row of a public action and intent (``KeyError`` when there is none)."""
    for row in ACTION_TABLE:
        if row.kind is kind and row.public == public and row.intent == intent and not row.read_only:
            return row
    raise KeyError(f"no {kind.value} action {public!r} with intent {intent}")


def leg_intent(action: LegAction) -> PositionIntent:
    """Return the intent a multi-leg leg action states."""
    return _OPEN if action in (LegAction.BUY_TO_OPEN, LegAction.SELL_TO_OPEN) else _CLOSE


def describe(kind: ActionKind) -> str:
    """Return the table of one kind as one line per action, for the OpenAPI field descriptions."""
    lines = []
    for row in rows(kind):
        intent = f" + position_intent {row.intent.value}" if row.intent and kind is ActionKind.OPTION else ""
        role = "read back from" if row.read_only else "sent as"
        upstream = f"Fidelity `{row.upstream}` '{row.upstream_meaning}' [{row.tag}]"
        lines.append(f"`{row.public}`{intent}: {row.meaning} ({role} {upstream})")
    return "; ".join(lines) + "."
