"""The order journal's rows: what an order action asked, how it ended, and how a row reads back."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class JournaledHalt:
    """The journal's copy of the kill switch: its last halt or resume row."""

    halted: bool
    time: datetime
    by: str  # the row's endpoint, e.g. 'safety (api)'


class JournalAction(StrEnum):
    """What an order request asked the broker to do."""

    PREVIEW = "preview"
    PLACE = "place"
    CANCEL_PREVIEW = "cancel_preview"
    CANCEL = "cancel"
    HALT = "halt"  # the kill switch: who pulled it, what it canceled and what it could not
    RESUME = "resume"
    LIVE_SWITCH = "live_switch"  # live trading turned on or off, and by whom
    APPROVAL = "approval"  # the trader's answer to a held place (approved, rejected, timed out), and who asked
    MARKET = "market"  # the brokerage and market a run trades on, when it differs from the previous run's


class Outcome(StrEnum):
    """How a journaled order action ended."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REFUSED = "refused"
    ERROR = "error"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class OrderFacts:
    """What the journal records about the order of one request (no bodies, no secrets)."""

    acct_num: str | None = None
    symbol: str | None = None
    side: str | None = None
    qty: float | None = None
    price: float | None = None
    conf_nums: tuple[str, ...] = ()
    orig_conf_nums: tuple[str, ...] = ()


@dataclass(frozen=True)
class JournalDraft:
    """A journal row before it is written: the request, the order facts and the body hash."""

    request_id: str
    endpoint: str
    action: JournalAction
    order_kind: str | None
    facts: OrderFacts
    body_hash: str
    idempotency_key: str | None = None


@dataclass(frozen=True)
class StoredResponse:
    """The HTTP status and JSON envelope of a place, kept for its Idempotency-Key."""

    status: int
    body: str


@dataclass(frozen=True)
class KeyClaim:
    """What the journal knows about an Idempotency-Key when a place arrives with it.

    ``new``: first use, now reserved (``pending``) for this request; ``replay``: a finished request with the
    same body, ``response`` is its answer; ``in_flight``: the first request is still running; ``unknown``:
    the service stopped during the first request; ``reused``: the key came with another endpoint or body.
    """

    state: Literal["new", "replay", "in_flight", "unknown", "reused"]
    response: StoredResponse | None = None


class JournalEntry(BaseModel):
    """One order action as the journal recorded it."""

    entry_id: int = Field(description="Increasing number of the entry.")
    time: datetime = Field(description="When the request was recorded, before any broker call (UTC).")
    finished_time: datetime | None = Field(description="When the outcome was recorded (null while pending).")
    request_id: str = Field(description="The X-Request-ID of the request, to find it in the service log.")
    endpoint: str = Field(description="Method and path, e.g. 'POST /api/v1/orders/equity/place'.")
    action: JournalAction = Field(
        description="preview, place, cancel_preview or cancel; halt, resume and live_switch record the kill switch "
        "and the live-trading switch (endpoint says who: 'safety (tray)', 'safety (api)', ...); market records the "
        'brokerage and market a run trades on (message: e.g. "paper on Fidelity\'s market"), written at a start '
        "in paper on Fidelity's market and at each later start whose market differs from the previous run's."
    )
    order_kind: str | None = Field(
        description="equity, option, multi_leg, replace, conditional or conditional_replace; null for cancels."
    )
    acct_num: str | None
    symbol: str | None = Field(
        description="The symbol; a multi-leg order's underlying; a conditional order's distinct leg symbols "
        "joined with '/'. Null for cancels (the order is named by conf_num)."
    )
    side: str | None = Field(
        description="The action code (B, S, SS, BC, ...); for multi-leg and conditional orders each leg's, "
        "joined with '/'; for cancels the action_code sent."
    )
    qty: float | None = Field(description="Shares or contracts; for multi-leg and conditional orders the first leg's.")
    price: float | None = Field(
        description="The limit price (net price for multi-leg), else the stop price; null for market orders."
    )
    conf_num: str | None = Field(description="The first of conf_nums, for convenience.")
    conf_nums: list[str] = Field(
        description="conf_num(s) of the order: those a place or cancel carried, or those the broker returned."
    )
    orig_conf_nums: list[str] = Field(description="The orders a replace or conditional replace replaces.")
    body_hash: str = Field(description="SHA-256 of the validated request body (the body itself is not kept).")
    idempotency_key: str | None = Field(description="The Idempotency-Key header of a place, if sent.")
    outcome: Outcome = Field(
        description="pending (broker call in flight), accepted, rejected (the broker said no), refused (ftdesk "
        "refused before the broker: live-trading gate, preview binding, Idempotency-Key), error (the call "
        "failed, e.g. AUTH_REQUIRED), unknown (the service stopped during the broker call: check the broker)."
    )
    error_code: str | None = Field(description="The error code the client received, when not accepted.")
    message: str | None = Field(description="The error message, or the broker's message for an accepted place.")


def entry_of(row: sqlite3.Row) -> JournalEntry:
    """Return a journal row as the API shows it."""
    conf_nums = json.loads(row["conf_nums"])
    return JournalEntry(
        entry_id=row["entry_id"],
        time=datetime.fromisoformat(row["time"]),
        finished_time=datetime.fromisoformat(row["finished_time"]) if row["finished_time"] else None,
        request_id=row["request_id"],
        endpoint=row["endpoint"],
        action=JournalAction(row["action"]),
        order_kind=row["order_kind"],
        acct_num=row["acct_num"],
        symbol=row["symbol"],
        side=row["side"],
        qty=row["qty"],
        price=row["price"],
        conf_num=conf_nums[0] if conf_nums else None,
        conf_nums=conf_nums,
        orig_conf_nums=json.loads(row["orig_conf_nums"]),
        body_hash=row["body_hash"],
        idempotency_key=row["idempotency_key"],
        outcome=Outcome(row["outcome"]),
        error_code=row["error_code"],
        message=row["message"],
    )
