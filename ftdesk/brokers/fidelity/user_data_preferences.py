"""The preference store on dpservice's ATN preferences.

Fidelity keeps preferences as key/value data under a ``preferencePath``; Trader+ itself uses
``user/atn/global/v1`` and ``user/atn/layout/{id}/v1``. ftdesk's store lives under a path of its own,
``PREFERENCE_PATH``, so reading it never shows the app's settings and deleting every ftdesk preference
cannot wipe the app's. Writes answer only a message ("Successful table update"), so each write is followed
by a fresh read that returns the whole store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.user_data_common import check_sys_msgs

PREFS_URL = f"{DPSERVICE}/ftgw/dp/retail-customers/v1/personalization/atn-prefs"
GET_URL = f"{PREFS_URL}/getpreference"
SAVE_URL = f"{PREFS_URL}/savepreference"
DELETE_URL = f"{PREFS_URL}/deletepreference"
PREFERENCE_PATH = "user/atn/ftdesk/v1"
SUCCESS_CODE = "00000"
# Bookkeeping the upstream adds to every data object (the app id of the last writer), not a preference.
METADATA_KEYS = frozenset({"lastUpdatedBy"})


def _succeeded(message: dict[str, Any]) -> bool:
    return "successful" in v.text_or(message.get("message")).lower() or v.text(message.get("code")) == SUCCESS_CODE


async def fetch_preferences(http: FidelityHttp, *, fresh: bool = False) -> dict[str, str]:
    """Return ftdesk's preference store; ``fresh`` skips sharing a read already in flight (a read after a write)."""
    body = {"preferences": [{"prefKeys": None, "preferencePath": PREFERENCE_PATH}]}
    payload = await http.json("POST", GET_URL, body=body, read=not fresh, what="preferences request")
    check_sys_msgs(payload, "preferences request", _succeeded)
    return map_preferences(payload, PREFERENCE_PATH)


def map_preferences(payload: Any, path: str) -> dict[str, str]:
    """Return the key/value data stored under ``path``, keys in order, every value as a string."""
    store: dict[str, str] = {}
    for block in v.items(payload, "preferenceData"):
        block_path = v.text(block.get("preferencePath"))
        if block_path is not None and block_path.rstrip("/") != path.rstrip("/"):
            continue
        for record in v.items(block, "data"):
            for key, value in record.items():
                if key not in METADATA_KEYS:
                    store[key] = preference_text(value)
    return dict(sorted(store.items()))


def preference_text(value: Any) -> str:
    """Return a stored value as the string the service hands out (other JSON values as JSON text)."""
    # Not values.text(): "--" or "" are a user's values here, not the upstream's "no value".
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"))


async def put_preferences(http: FidelityHttp, values: dict[str, str]) -> dict[str, str]:
    """Merge values into the store and return the whole store."""
    if values:
        body = {"preferences": [{"prefValues": dict(values), "preferencePath": PREFERENCE_PATH}]}
        payload = await http.json("POST", SAVE_URL, body=body, read=False, what="preferences save")
        check_sys_msgs(payload, "preferences save", _succeeded)
    return await fetch_preferences(http, fresh=True)


async def delete_preferences(http: FidelityHttp, keys: Sequence[str] | None) -> dict[str, str]:
    """Delete the given keys (every ftdesk key when None; unknown keys are ignored) and return what remains."""
    current = await fetch_preferences(http, fresh=True)
    # Only keys that exist are sent: what the upstream answers for an unknown key was never captured.
    targets = None if keys is None else [key for key in dict.fromkeys(keys) if key in current]
    if not current or targets == []:
        return current
    body = {"preferences": [{"prefKeys": targets, "preferencePath": PREFERENCE_PATH}]}
    payload = await http.json("POST", DELETE_URL, body=body, read=False, what="preferences delete")
    check_sys_msgs(payload, "preferences delete", _succeeded)
    return await fetch_preferences(http, fresh=True)
