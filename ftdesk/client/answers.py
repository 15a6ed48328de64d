"""Validating the service's answers into ftdesk's models, as every client method does."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from ftdesk.client.errors import FtdeskClientError

T = TypeVar("T")


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    # One adapter per answer type, built on first use (building one costs more than validating an answer).
    return TypeAdapter(kind)


def parse_answer(kind: type[T] | Any, data: Any) -> T:
    """Validate the ``data`` of an answer into ``kind``; a mismatch is a client error naming the model."""
    try:
        # extra="ignore": a field added by a newer service is not this client's concern (the models forbid
        # unknown fields on the service side, where they would be a typo in a request).
        result: T = _adapter(cast(Hashable, kind)).validate_python(data, extra="ignore")
    except PydanticValidationError as exc:
        raise FtdeskClientError(
            f"The service's answer does not fit {kind!r} (is the client from another ftdesk version?): {exc}"
        ) from None
    return result
