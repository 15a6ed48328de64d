"""Reading JSON from clients (request bodies and WebSocket frames) within documented limits.

``json.loads`` alone accepts what no field of this API can use and fails in ways that are not a client's
error: a body nested thousands of levels deep raises ``RecursionError``, an integer of more than 4300 digits
raises ``ValueError`` (CPython's int-from-string limit), ``1e400`` becomes infinity, and ``NaN`` or
``Infinity`` (not JSON at all) become floats that cannot be written back. Here each of those is the client's
error, named by where in the document it is.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ftdesk.domain import errors as e

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a body or frame may have (the outermost object is level 1)."""
MAX_JSON_INTEGER = 2**63 - 1
"""Largest magnitude of a JSON integer (a signed 64-bit integer); larger ones are refused before any field sees them."""
_MAX_INTEGER_DIGITS = len(str(MAX_JSON_INTEGER)) + 1  # a sign and 19 digits
MAX_WS_MESSAGE_BYTES = 64 * 1024
"""Largest client WebSocket frame; a larger one closes the connection (1009, message too big)."""


class _Oversized:
    """Stands for a number literal too large to be a number of this API, until its place is known."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: Python's json module accepts them, JSON does not."""


def _parse_int(literal: str) -> int | _Oversized:
    if len(literal) > _MAX_INTEGER_DIGITS:
        return _Oversized(literal)  # and never int(literal): past 4300 digits that raises
    value = int(literal)
    return value if abs(value) <= MAX_JSON_INTEGER else _Oversized(literal)


def _parse_float(literal: str) -> float | _Oversized:
    value = float(literal)
    return value if math.isfinite(value) else _Oversized(literal)


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


def _path_text(path: tuple[str | int, ...], root: str) -> str:
    return ".".join(str(part) for part in path) if path else root


def _abbreviated(literal: str) -> str:
    return literal if len(literal) <= 24 else f"{literal[:12]}...{literal[-6:]} ({len(literal)} characters)"


def _check(document: Any, location: str) -> None:
    """Walk the parsed document (no recursion) and refuse the first value past a limit, naming its place."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Oversized):
            field = _path_text(path, location)
            raise _failure(
                f"Invalid {location}: {field}",
                field,
                location,
                f"the number {_abbreviated(value.literal)} is too large: integers may be at most "
                f"{MAX_JSON_INTEGER} in magnitude and decimals must fit a 64-bit float",
                "number_too_large",
            )
        children: list[tuple[Any, tuple[str | int, ...]]]
        if isinstance(value, dict):
            children = [(child, (*path, key)) for key, child in value.items()]
        elif isinstance(value, list):
            children = [(child, (*path, index)) for index, child in enumerate(value)]
        else:
            continue
        if len(path) + 1 > MAX_JSON_DEPTH:
            raise too_deep(location)
        stack.extend(reversed(children))


def _failure(message: str, field: str, location: str, problem: str, kind: str) -> e.JsonShapeInvalid:
    return e.JsonShapeInvalid(
        message, details=[{"field": field, "location": location, "message": problem, "type": kind}]
    )


def too_deep(location: str) -> e.JsonShapeInvalid:
    """Return the error of a document nested deeper than ``MAX_JSON_DEPTH``."""
    problem = f"nested too deeply: arrays and objects may be nested at most {MAX_JSON_DEPTH} levels deep"
    return _failure(f"Invalid {location}: {problem}", location, location, problem, "json_too_deep")


def parse_json(raw: bytes | str, *, location: str, what: str) -> Any:
    """Parse client JSON within the limits; raise ``MalformedRequest`` or ``JsonShapeInvalid`` naming the place.

    ``what`` names the document in messages ("request body", "frame"); ``location`` is the ``location`` of the
    error details ("body", "message"). A UTF-8 byte order mark before the document is accepted.
    """
    try:
        document = json.loads(raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_refuse_constant)
    except RecursionError:  # far deeper than the limit: the parser gave up before the walk could tell
        raise too_deep(location) from None
    except _NotJson as exc:
        raise e.MalformedRequest(
            f"The {what} is not valid JSON: {exc} is not a JSON value (send a number, or null)"
        ) from None
    except json.JSONDecodeError as exc:
        raise e.MalformedRequest(f"The {what} is not valid JSON at line {exc.lineno}, column {exc.colno}") from None
    except (UnicodeDecodeError, ValueError):
        raise e.MalformedRequest(f"The {what} is not valid JSON (it must be UTF-8 text)") from None
    _check(document, location)
    return document
