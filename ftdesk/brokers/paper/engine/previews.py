"""Previews of paper orders: a conf_num per previewed order, and the check a place must pass against it.

A preview stores its request under a fresh conf_num (8 upper-case alphanumerics drawn from the
seeded rng, unique in the database). A place must carry an unused conf_num of a preview of the same
kind, account and fields; otherwise it is refused (``PREVIEW_NOT_FOUND``, ``PREVIEW_ALREADY_USED``,
``PREVIEW_ACCOUNT_MISMATCH``, ``PREVIEW_MISMATCH``) and no order is created.
"""

from __future__ import annotations

import json
import random
import sqlite3
import string
from collections.abc import Iterable, Sequence
from typing import Any

from ftdesk.brokers.paper.engine.model import canonical, reject, words
from ftdesk.brokers.paper.ledger.outbox import Outbox
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import iso_time
from ftdesk.domain.clock import Clock

_CONF_ALPHABET = string.ascii_uppercase + string.digits


class Previews:
    """The paper_previews table: previews stored by conf_num and matched against places."""

    def __init__(self, store: PaperStore, outbox: Outbox, clock: Clock, rng: random.Random) -> None:
        self._store = store
        self._outbox = outbox
        self._clock = clock
        self._rng = rng

    def create(self, kind: str, acct_num: str, payload: dict[str, Any], count: int) -> list[str]:
        """Store a preview of ``count`` orders; return a fresh conf_num per order."""
        created = iso_time(self._clock.now())
        with self._outbox.atomic() as conn:
            confs: list[str] = []
            for index in range(count):
                conf = self._new_conf(conn)
                conn.execute(
                    "INSERT INTO paper_previews (conf_num, acct_num, kind, payload, group_id, leg_index, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (conf, acct_num, kind, canonical(payload), confs[0] if confs else conf, index, created),
                )
                confs.append(conf)
        return confs

    def _new_conf(self, conn: sqlite3.Connection) -> str:
        while True:
            conf = "".join(self._rng.choice(_CONF_ALPHABET) for _ in range(8))
            # A reopened world with the same seed draws the same numbers again: skip the ones in use.
            if conn.execute("SELECT 1 FROM paper_previews WHERE conf_num = ?", (conf,)).fetchone() is None:
                return conf

    def check(self, conf_nums: Sequence[str], kind: str, acct_num: str, payload: dict[str, Any]) -> list[str]:
        """Check that the conf_nums name one unused preview of this request; return all its conf_nums."""
        if not conf_nums:
            raise reject("PREVIEW_NOT_FOUND", "A place needs the conf_num(s) of its preview")
        rows = []
        for conf in conf_nums:
            row = self._store.query_one("SELECT * FROM paper_previews WHERE conf_num = ?", (conf,))
            if row is None:
                raise reject(
                    "PREVIEW_NOT_FOUND", f"No preview has conf_num {conf}; preview the order first", conf_num=conf
                )
            rows.append(row)
        group = rows[0]["group_id"]
        if any(r["group_id"] != group for r in rows):
            raise reject("PREVIEW_MISMATCH", "The conf_nums belong to different previews")
        first = rows[0]
        if first["kind"] != kind:
            raise reject(
                "PREVIEW_MISMATCH",
                f"conf_num {first['conf_num']} is the preview of a {words(first['kind'])} order,"
                f" not of a {words(kind)} order",
            )
        if first["acct_num"] != acct_num:
            raise reject(
                "PREVIEW_ACCOUNT_MISMATCH",
                f"conf_num {first['conf_num']} was previewed for account {first['acct_num']}, not {acct_num}",
            )
        if any(r["used"] for r in rows):
            raise reject(
                "PREVIEW_ALREADY_USED",
                f"conf_num {first['conf_num']} was already used to place an order; preview again for a new order",
            )
        previewed = json.loads(first["payload"])
        if previewed != json.loads(canonical(payload)):
            fields = sorted(k for k in set(previewed) | set(payload) if previewed.get(k) != payload.get(k))
            raise reject(
                "PREVIEW_MISMATCH",
                f"The order differs from its preview in: {', '.join(fields)}; preview the changed order",
                fields=fields,
            )
        every = self._store.query("SELECT conf_num FROM paper_previews WHERE group_id = ? ORDER BY leg_index", (group,))
        return [r["conf_num"] for r in every]

    @staticmethod
    def use(conn: sqlite3.Connection, confs: Iterable[str]) -> None:
        """Mark previews used: a conf_num places at most one order (or one rejection)."""
        conn.executemany("UPDATE paper_previews SET used = 1 WHERE conf_num = ?", [(c,) for c in confs])
