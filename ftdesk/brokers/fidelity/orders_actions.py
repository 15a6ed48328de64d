"""Fidelity's action codes through the one action table: what to send, how to read codes back, what was understood.

The table itself is ``ftdesk.domain.order_actions`` (public action and intent <-> upstream code, with provenance).
This module adds what only the Fidelity answers need:

* ``read_back`` names the public action of an upstream code read from an answer, using the order kind, the
  contract's call/put and the broker's own words, never the bare letters (upstream ``SS`` is "specific
  shares"; an answer's ``BC`` is "Buy Call" in captures and "Buy to Close" in the decompiled enum). A code
  outside the table is reported as itself, with the broker's words, and flagged.
* ``check_preview`` compares what a preview answer says the broker understood (``orderActionCode``,
  ``actionCodeDesc``, symbol, quantity, price type) with what was asked, before the preview can bind. Any
  contradiction raises ``ActionMismatch``: a side, a short sale or cover, a call/put, an open/close intent
  the request did not state or stated otherwise, another symbol or quantity. An answer that names no action
  at all is refused too. A stated intent the broker's words neither confirm nor contradict binds with a
  warning, so the trader reads that the broker did not say it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.domain.errors import ActionMismatch
from ftdesk.domain.order_actions import (
    BUY,
    LEG_ACTION_OF,
    SELL,
    ActionKind,
    ActionRow,
    Side,
    leg_intent,
    rows,
)
from ftdesk.domain.orders import LegAction, PositionIntent, PreviewLeg

log = logging.getLogger(__name__)

PLAIN = ""
"""An equity action that is neither a short sale, a cover, a sell-all nor a specific-shares sale."""

_EQUITY_QUALIFIER = MappingProxyType(
    {"B": PLAIN, "S": PLAIN, "SH": "short", "BH": "cover", "SA": "all", "SS": "specific"}
)
_OPTION_CODES = frozenset({"BO", "SO", "BC", "SC", "BP", "SP"})
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Understood:
    """An action as the broker's code and words state it; ``None`` where both are silent."""

    code: str
    desc: str
    side: Side | None = None
    intent: PositionIntent | None = None
    qualifier: str | None = None
    option_type: str | None = None
    conflicts: tuple[str, ...] = ()
    known_code: bool = True


def _code_facets(kind: ActionKind, code: str) -> dict[str, Any]:
    facets: dict[str, Any] = {}
    if code[:1] in ("B", "S"):
        facets["side"] = Side.BUY if code[0] == "B" else Side.SELL
    if kind is ActionKind.EQUITY:
        if code in _EQUITY_QUALIFIER:
            facets["qualifier"] = _EQUITY_QUALIFIER[code]
    elif code in ("BO", "SO"):
        facets["intent"] = PositionIntent.OPEN
    elif code in ("BP", "SP"):
        facets["option_type"] = "put"
    return facets


def _desc_facets(kind: ActionKind, desc: str) -> dict[str, Any]:
    words = _WORD.findall(desc.lower())
    facets: dict[str, Any] = {}
    if not words:
        return facets
    if words[0] in ("buy", "sell"):
        facets["side"] = Side.BUY if words[0] == "buy" else Side.SELL
    text = " ".join(words)
    if "to open" in text:
        facets["intent"] = PositionIntent.OPEN
    elif "to close" in text:
        facets["intent"] = PositionIntent.CLOSE
    if "call" in words:
        facets["option_type"] = "call"
    elif "put" in words:
        facets["option_type"] = "put"
    if kind is ActionKind.EQUITY:
        if "short" in words:
            facets["qualifier"] = "short"
        elif "cover" in words:
            facets["qualifier"] = "cover"
        elif "specific" in words:
            facets["qualifier"] = "specific"
        elif text.startswith("sell all"):
            facets["qualifier"] = "all"
        elif text in ("buy", "sell"):
            facets["qualifier"] = PLAIN
    return facets


def understood(kind: ActionKind, code: str | None, desc: str | None) -> Understood:
    """Return what an echoed action code and description state together, noting where they disagree."""
    code = (code or "").strip().upper()
    desc = (desc or "").strip()
    from_code, from_desc = _code_facets(kind, code), _desc_facets(kind, desc)
    merged: dict[str, Any] = {}
    conflicts: list[str] = []
    for name in ("side", "intent", "qualifier", "option_type"):
        a, b = from_code.get(name), from_desc.get(name)
        if a is not None and b is not None and a != b:
            conflicts.append(f"the code {code} and the words {desc!r} disagree on the {name.replace('_', ' ')}")
        merged[name] = b if b is not None else a
    table = _EQUITY_QUALIFIER if kind is ActionKind.EQUITY else _OPTION_CODES
    return Understood(code=code, desc=desc, conflicts=tuple(conflicts), known_code=code in table, **merged)


# --- reading codes back -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadBack:
    """The public action of an upstream code read from an answer."""

    action: str
    intent: PositionIntent | None = None
    unrecognized: bool = False
    desc: str = ""


def _by_upstream(kind: ActionKind, code: str) -> ActionRow | None:
    found = [row for row in rows(kind) if row.upstream == code]
    return found[0] if len(found) == 1 else None


def read_back(kind: ActionKind, code: str | None, desc: str | None, option_type: str | None = None) -> ReadBack:
    """Return the public action (and intent) an upstream code stands for in an answer of this kind."""
    said = understood(kind, code, desc)
    raw = said.code
    words = said.desc
    unknown = ReadBack(raw, None, True, words or raw)
    if not raw or not said.known_code or said.conflicts or said.side is None:
        return unknown
    if kind is ActionKind.EQUITY:
        row = _by_upstream(kind, raw)
        if row is None or (said.qualifier is not None and said.qualifier != _EQUITY_QUALIFIER[raw]):
            return unknown
        return ReadBack(row.public, None, False, words or row.upstream_meaning)
    if kind is ActionKind.LEG:
        if said.intent is not None:
            action = LEG_ACTION_OF[(said.side, said.intent)]
            return ReadBack(action.value, said.intent, False, words or action.value)
        if raw in ("BO", "SO"):
            return ReadBack(raw, PositionIntent.OPEN, False, words or raw)
        # An answer's BC/SC names only the side: captured answers echo opening legs as BC/SC.
        return ReadBack(BUY if said.side is Side.BUY else SELL, None, False, words or raw)
    contract = option_type or said.option_type
    if contract is None or (said.option_type is not None and said.option_type != contract):
        return unknown
    intent = said.intent
    if intent is None and raw in ("BC", "SC") and contract == "put":
        intent = PositionIntent.CLOSE  # BC/SC on a put cannot be "Buy Call"/"Sell Call": only "to Close" fits
    public = ("B" if said.side is Side.BUY else "S") + ("C" if contract == "call" else "P")
    return ReadBack(public, intent, False, words or raw)


# --- checking a preview answer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """One order (or leg) as the request meant it, for the comparison with the broker's answer."""

    kind: ActionKind
    row: ActionRow
    symbol: str
    qty: float
    price_type: str | None = None
    option_type: str | None = None
    intent: PositionIntent | None = None

    def summary(self) -> dict[str, Any]:
        """Return the request's side of an ``ACTION_MISMATCH``."""
        return {
            "action": self.row.public,
            "position_intent": self.intent.value if self.intent else None,
            "meaning": self.row.meaning,
            "sent_as": self.row.upstream,
            "symbol": self.symbol,
            "qty": self.qty,
        }


@dataclass
class Verdict:
    """The outcome of comparing one answer with its request."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    understood: list[dict[str, Any]] = field(default_factory=list)


def echo_of(detail: dict[str, Any]) -> dict[str, Any]:
    """Return the broker's echo of one order: code, words, symbol, quantity and price type."""
    base = v.obj(v.obj(detail, "orderDetail"), "baseOrderDetail") or v.obj(detail, "baseOrderDetail") or detail
    tradable = v.obj(v.obj(detail, "orderDetail"), "tradableSecOrderDetail") or v.obj(detail, "tradableSecOrderDetail")
    return {
        "code": v.text(base.get("orderActionCode")),
        "desc": v.text(base.get("actionCodeDesc")),
        "symbol": v.text(v.first(base, "securityDetail.symbol", "secDetail.symbol", "symbol")),
        "qty": v.number(base.get("qty")),
        "price_type": v.text(v.first(tradable, "priceTypeDetail.priceTypeCode")),
    }


def compare(asked: Asked, echo: dict[str, Any], verdict: Verdict) -> None:
    """Add the contradictions between one request and the broker's echo of it to ``verdict``."""
    said = understood(asked.kind, echo.get("code"), echo.get("desc"))
    label = f"{asked.symbol}: " if asked.kind is ActionKind.LEG else ""
    shown = said.desc or said.code or "nothing"
    verdict.understood.append(
        {"code": said.code or None, "desc": said.desc or None, "symbol": echo.get("symbol"), "qty": echo.get("qty")}
    )
    problems = verdict.problems
    problems.extend(label + conflict for conflict in said.conflicts)
    if said.side is None:
        problems.append(f"{label}the answer names no action the adapter can read ({shown})")
    elif said.side is not asked.row.side:
        problems.append(f"{label}asked to {asked.row.side.value}, the broker understood {shown!r}")
    if asked.kind is ActionKind.EQUITY:
        wanted = asked.row.qualifier or PLAIN
        if not said.known_code and said.code:
            problems.append(f"the broker answered with the action code {said.code}, which the action table lacks")
        elif said.qualifier is not None and said.qualifier != wanted:
            problems.append(f"asked to {asked.row.meaning}, the broker understood {shown!r}")
    if said.intent is not None and asked.intent is None:
        problems.append(
            f"{label}the broker's words {shown!r} name the intent {said.intent.value}, which the request did not "
            "state: send position_intent to say open or close"
        )
    elif said.intent is not None and said.intent is not asked.intent:
        intent = asked.intent.value if asked.intent else ""
        problems.append(f"{label}asked to {intent}, the broker understood {shown!r}")
    elif said.intent is None and asked.intent is not None and asked.kind is ActionKind.OPTION:
        verdict.warnings.append(
            f"The broker's words {shown!r} do not say whether the order opens or closes; it was sent as "
            f"{asked.row.upstream} ('{asked.row.upstream_meaning}') for position_intent {asked.intent.value}."
        )
    if said.option_type is not None and asked.option_type is not None and said.option_type != asked.option_type:
        problems.append(f"{label}{asked.symbol} is a {asked.option_type}, the broker understood {shown!r}")
    symbol = (echo.get("symbol") or "").lstrip("-").upper()
    if not symbol:
        problems.append(f"{label}the answer does not name the security")
    elif symbol != asked.symbol:
        problems.append(f"asked for {asked.symbol}, the broker understood {symbol}")
    qty = echo.get("qty")
    if qty is None:
        problems.append(f"{label}the answer does not state the quantity")
    elif abs(float(qty) - asked.qty) > 1e-9:
        problems.append(f"{label}asked for {asked.qty:g}, the broker understood {float(qty):g}")
    price_type = echo.get("price_type")
    if price_type and asked.price_type and price_type.upper() != asked.price_type:
        problems.append(f"{label}asked for price type {asked.price_type}, the broker understood {price_type}")


def raise_on(verdict: Verdict, asked: Sequence[Asked], what: str, conf_num: str | None) -> list[str]:
    """Raise ``ActionMismatch`` (and log it) when the verdict found a contradiction; else return its warnings."""
    if not verdict.problems:
        return verdict.warnings
    log.warning(
        "Refused the %s: Fidelity's answer (conf_num %s) contradicts the request: %s",
        what,
        conf_num or "none",
        "; ".join(verdict.problems),
    )
    first = asked[0]
    said = verdict.understood[0] if verdict.understood else {}
    words = said.get("desc") or said.get("code") or "nothing readable"
    message = (
        f"Fidelity understood the {what} differently, so it was not bound and cannot be placed: asked "
        f"{first.row.public}{' ' + first.intent.value if first.intent else ''} ({first.row.meaning}), "
        f"Fidelity says {words!r}. " + "; ".join(verdict.problems)
    )
    raise ActionMismatch(
        message,
        details={
            "asked": [a.summary() for a in asked],
            "understood": verdict.understood,
            "problems": verdict.problems,
        },
    )


def check_single(asked: Asked, detail: dict[str, Any], what: str) -> list[str]:
    """Check the echo of a single order (equity, option, replace); return the warnings to show."""
    verdict = Verdict()
    compare(asked, echo_of(detail), verdict)
    return raise_on(verdict, [asked], what, v.text(detail.get("confNum")))


def check_legs(
    asked: Sequence[Asked],
    echoed: Sequence[dict[str, Any]],
    what: str,
    conf_num: str | None,
    extra: Sequence[str] = (),
) -> list[str]:
    """Check the echo of multi-leg legs, matched by symbol; every asked leg must come back once."""
    verdict = Verdict(problems=list(extra))
    by_symbol: dict[str, dict[str, Any]] = {}
    for raw in echoed:
        echo = echo_of(raw)
        by_symbol[(echo.get("symbol") or "").lstrip("-").upper()] = echo
    if len(echoed) != len(asked):
        verdict.problems.append(f"asked for {len(asked)} legs, the answer lists {len(echoed)}")
    for leg in asked:
        found = by_symbol.get(leg.symbol)
        if found is None:
            verdict.problems.append(f"the answer has no leg {leg.symbol}")
            continue
        compare(leg, found, verdict)
    return raise_on(verdict, asked, what, conf_num)


def preview_legs(asked: Sequence[Asked], echoed: Sequence[dict[str, Any]]) -> list[PreviewLeg]:
    """Return each asked leg as the broker echoed it, in the request's order, matched by symbol as ``check_legs``."""
    by_symbol = {(echo.get("symbol") or "").lstrip("-").upper(): echo for echo in map(echo_of, echoed)}
    legs: list[PreviewLeg] = []
    for leg in asked:
        # check_legs has refused an answer missing a leg; an empty echo would show no broker words, never others'.
        echo = by_symbol.get(leg.symbol, {})
        qty = echo.get("qty")
        action = LegAction(leg.row.public)
        legs.append(
            PreviewLeg(
                symbol=(echo.get("symbol") or leg.symbol).lstrip("-"),
                action=action,
                qty=round(qty if qty is not None else leg.qty),
                position_intent=leg_intent(action),
                broker_action_code=echo.get("code"),
                broker_action_desc=echo.get("desc"),
            )
        )
    return legs
