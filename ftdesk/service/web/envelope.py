"""The response envelope: ``{"ok", "data", "error"}`` on every JSON response, success or failure."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from ftdesk.domain.base import SharedList
from ftdesk.domain.errors import FtdeskError
from ftdesk.service.web.errors import spec_for


class PlainJsonModel(BaseModel):
    """A response model whose pydantic JSON is, byte for byte, the envelope's ``json.dumps`` of its dump.

    The envelope then takes ``model_dump_json()`` as it is (one serialiser pass, not a dump and a dump again).
    Only for models of strings, booleans, integers, lists of them and floats in plain decimal form (the two
    serialisers write a float such as 1e-05 or 1e+16 differently, and NaN one as null, the other not at all).
    """


class JsonText(str):
    """A response's data already written as JSON (by pydantic, as an envelope's ``json.dumps`` would write it).

    The envelope puts it in as it is; made for answers whose text is built once and reused (``/health``).
    """

    __slots__ = ()


def _to_jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list | tuple):
        return [_to_jsonable(item) for item in data]
    if isinstance(data, dict):
        return {key: _to_jsonable(value) for key, value in data.items()}
    return data


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _list_envelope(data: SharedList[Any]) -> bytes:
    # The same text json.dumps makes of the whole envelope: these separators, keys in this order.
    text = json.dumps(_to_jsonable(data), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return ('{"ok":true,"data":' + text + ',"error":null}').encode()


_JSON_CONTENT_TYPE = "application/json; charset=utf-8"


def _json_headers(headers: dict[str, str] | None) -> dict[str, str]:
    return {"Content-Type": _JSON_CONTENT_TYPE} if headers is None else {**headers, "Content-Type": _JSON_CONTENT_TYPE}


def ok_response(data: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """Return a success envelope (a ``SharedList``'s JSON text is made once, for every caller it goes to)."""
    if isinstance(data, JsonText):
        body = '{"ok":true,"data":' + data + ',"error":null}'
    elif isinstance(data, PlainJsonModel):
        body = '{"ok":true,"data":' + data.model_dump_json() + ',"error":null}'
    elif isinstance(data, SharedList):
        return web.Response(body=data.rendered(_list_envelope), status=status, headers=_json_headers(headers))
    else:
        body = _dumps({"ok": True, "data": _to_jsonable(data), "error": None})
    return web.Response(text=body, status=status, content_type="application/json", headers=headers)


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    """Return the JSON object of a failure envelope."""
    return {"ok": False, "data": None, "error": {"code": code, "message": message, "details": _to_jsonable(details)}}


def error_response(error: FtdeskError, *, headers: dict[str, str] | None = None) -> web.Response:
    """Return the failure envelope of a domain error with its mapped status."""
    spec = spec_for(error)
    body = _dumps(error_body(spec.code, error.message, error.details))
    return web.Response(text=body, status=spec.status, content_type="application/json", headers=headers)
