"""Sample user-data payloads in the captured shapes.

Watchlists, preferences, the CustomerSignOn SOAP answer, the price-trigger create answer and the holiday
calendar follow the captures; numbers are mixed as JSON numbers and strings. A populated
price-trigger list was never captured: its entries repeat the create answer's shape (docs/fidelity-gaps.md).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")
APP_ID = "AP149323"

# --- watchlists ---------------------------------------------------------------------------------

RESEARCH_LIST_ID = "6a8b8049-f3a2-45fd-b0cc-f2b4bfbfc21c"
BUYS_LIST_ID = "3842df22-91c4-4c5e-8b0e-5d2f7d1c2a10"


def initial_watchlists() -> list[dict[str, Any]]:
    """Return the lists a fresh fake holds: the captured "Research" list and an older "Buys" list."""
    return [
        {
            "watchListId": RESEARCH_LIST_ID,
            "watchListName": "Research",
            "watchListTypeCode": "WL",
            "isDefault": False,
            "sortOrder": 1,
            "createdTimeStamp": "2024-09-12 18:14:41.5",
            "lastUpdatedTime": "2025-02-11 18:28:20.6",
            "securityDetails": [
                {
                    "symbol": "CODI",
                    "cusip": "",
                    "securityType": "",
                    "newsStateInd": False,
                    "watchCloselyInd": False,
                    "rankId": 1,
                    "securityId": "673d839f-b9fd-46f2-b506-ca482b2b03fd",
                }
            ],
        },
        {
            "watchListId": BUYS_LIST_ID,
            "watchListName": "Buys",
            "watchListTypeCode": "WL",
            "isDefault": True,
            "sortOrder": 0,
            "createdTimeStamp": "2023-03-01 09:30:00.0",
            "lastUpdatedTime": "2024-01-05 16:00:00.0",
            # Out of rank order, one rank as text: the display order is rankId's.
            "securityDetails": [
                {"symbol": "es", "rankId": "2", "securityId": "b1f6c9a2-0d7e-4f55-9a31-2c7b8e4d6f01"},
                {"symbol": "AAPL", "rankId": 1, "securityId": "c7d2e1f0-3b4a-4c5d-8e9f-0a1b2c3d4e5f"},
            ],
        },
    ]


def watchlists_answer(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the watchlists answer (the upstream's spelling of "retrieved" kept)."""
    return {
        "sysMsgs": {"sysMsg": [{"message": "Successfully retreived all Watchlist Details", "code": "2000"}]},
        "watchListDetails": entries,
    }


def watchlist_saved_answer(user: str, saved: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the watchlists save answer: ids and ranks of what was stored."""
    return {
        "sysMsgs": {
            "sysMsg": [
                {
                    "message": "Request Successful",
                    "detail": f"Watchlists successfully saved for user: {user}",
                    "source": "",
                    "code": "2000",
                    "type": "",
                }
            ]
        },
        "watchListDetails": [
            {
                "watchListId": entry["watchListId"],
                "securityDetails": [
                    {"securityId": s["securityId"], "rankId": s["rankId"], "symbol": s["symbol"]}
                    for s in entry["securityDetails"]
                ],
            }
            for entry in saved
        ],
    }


def refusal(code: str, text: str) -> dict[str, Any]:
    """Return a ``sysMsgs`` refusal in the 7.2 style (``Code=...,Text=...`` inside ``detail``)."""
    return {
        "sysMsgs": {
            "sysMsg": [
                {
                    "message": "other",
                    "detail": f"Code={code},Text={text},Source=",
                    "source": "",
                    "code": "2999",
                    "type": "error",
                }
            ]
        }
    }


# --- preferences --------------------------------------------------------------------------------


def initial_preferences() -> dict[str, dict[str, Any]]:
    """Return the preference data a fresh fake holds, by path: Trader+'s own global settings."""
    return {"user/atn/global/v1": {"DefaultAccountNumber": "250357290", "NavBarPosition": "left"}}


def preferences_answer(blocks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return a getpreference answer: one data object per path, stamped with the last writer."""
    return {
        "sysMsgs": {
            "sysMsg": [
                {"message": "Successful table query", "detail": "", "source": "AP159679", "code": "00000", "type": ""}
            ]
        },
        "preferenceData": [
            {"preferencePath": path, "data": [{**values, "lastUpdatedBy": APP_ID}]} for path, values in blocks.items()
        ],
    }


PREFERENCES_UPDATED: dict[str, Any] = {
    "sysMsgs": {
        "sysMsg": [
            {"message": "Successful table update", "detail": "", "source": "AP159679", "code": "00000", "type": ""}
        ]
    }
}

# --- legacy alerts SOAP -------------------------------------------------------------------------

# What CustomerSignOn hands out: TIBCO EMS credentials ftdesk must never show anyone.
EMS_USER_ID = "oyIIq8Zr0kWmXv3s7TtN2w=="
EMS_PASSWORD = "9f2c4e7a1b3d5f60718293a4b5c6d7e8"


def sign_on_answer(success: bool = True) -> str:
    """Return a CustomerSignOnResponse envelope (the ``p971`` prefix as captured)."""
    user, password, status, code = (
        (EMS_USER_ID, EMS_PASSWORD, "1", "SUCCESS") if success else ("none", "none", "0", "FAILURE")
    )
    return (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
        "<soapenv:Body>"
        '<p971:CustomerSignOnResponse xmlns:p971="http://xmlns.fmr.com/institutional/eca/fens/2014/06/AutoSubscription">'
        f"<p971:ResultCode>{code}</p971:ResultCode>"
        "<p971:ActivationDetails>"
        f"<p971:ActivationStatus>{status}</p971:ActivationStatus>"
        f"<p971:UserId>{user}</p971:UserId>"
        f"<p971:Password>{password}</p971:Password>"
        "<p971:ServerUrl>ssl://atccf.fisc.fidelity.com:443</p971:ServerUrl>"
        f"<p971:Destination>EMST.ATP.{user},EMST.ATC.BROADCAST</p971:Destination>"
        "</p971:ActivationDetails>"
        "</p971:CustomerSignOnResponse>"
        "</soapenv:Body>"
        "</soapenv:Envelope>"
    )


def soap_fault(text: str) -> str:
    """Return a SOAP 1.1 fault (no capture exists: the standard shape)."""
    return (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
        f"<soapenv:Fault><faultcode>soapenv:Server</faultcode><faultstring>{text}</faultstring></soapenv:Fault>"
        "</soapenv:Body></soapenv:Envelope>"
    )


# --- price triggers -----------------------------------------------------------------------------

DEVICES = [{"name": "Active Trader Pro"}, {"name": "Fidelity mobile applications"}]


def trigger_entry(
    trigger_id: str, symbol: str, operator: str, value: float | str, created: datetime, notes: str = ""
) -> dict[str, Any]:
    """Return one trigger as the create answer shows it (times in milliseconds)."""
    millis = int(created.timestamp() * 1000)
    return {
        "id": trigger_id,
        "symbol": symbol,
        "operator": operator,
        "value": value,
        "currency": "USD",
        "notes": notes,
        "createTime": millis,
        "updateTime": millis,
        "devices": [dict(device) for device in DEVICES],
    }


def initial_triggers(now: datetime) -> list[tuple[str, dict[str, Any]]]:
    """Return (list status, entry) of a fresh fake: a fired AAPL level and an active SPY percent trigger."""
    fired = trigger_entry("1095170001", "AAPL", "greaterThan", "150.00", now - timedelta(days=30), "breakout")
    fired["updateTime"] = int((now - timedelta(days=2)).timestamp() * 1000)
    percent = trigger_entry("1095172719", "SPY", "lessThanPercent", 4, now - timedelta(days=1))
    return [("expired", fired), ("active", percent)]


def triggers_answer(page: list[dict[str, Any]], total: int, offset: int) -> dict[str, Any]:
    """Return a price-trigger list answer."""
    return {"priceTrigger": {"totalAccount": total, "availableAccount": 0, "offset": offset, "triggers": page}}


# --- holiday calendar ---------------------------------------------------------------------------


def unix(day: date) -> int:
    """Return New York midnight of a date as Unix seconds (the calendar's ``date``)."""
    return int(datetime(day.year, day.month, day.day, tzinfo=NEW_YORK).timestamp())


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def holiday_calendar(years: list[int]) -> dict[str, Any]:
    """Return a calendar answer with a few holidays and early closes of each year (dates mixed as text)."""
    details: list[dict[str, Any]] = []
    for year in years:
        thanksgiving = _nth_weekday(year, 11, 3, 4)
        days = [
            (date(year, 1, 1), "New Year's Day", "H"),
            (_nth_weekday(year, 1, 0, 3), "Martin Luther King, Jr. Day", "H"),
            (date(year, 7, 3), "Abbreviated Trading", "A"),
            (date(year, 7, 4), "Independence Day", "H"),
            (thanksgiving, "Thanksgiving Day", "H"),
            (thanksgiving + timedelta(days=1), "Abbreviated Trading", "A"),
            (date(year, 12, 25), "Christmas Day", "H"),
        ]
        for index, (day, name, kind) in enumerate(days):
            entry: dict[str, Any] = {
                "countryCode": "US",
                "date": str(unix(day)) if index % 3 == 1 else unix(day),
                "holidayDesc": name,
                "holidayType": kind,
            }
            if kind == "A":
                entry["earlyCloseTm"] = "13:00:00.000"
            details.append(entry)
    return {"holidayCalendarDetails": details}
