"""What every route module shares: reaching the service context and running broker calls in the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ftdesk.brokers.base import Broker
from ftdesk.service.context import CONTEXT, ServiceContext
from ftdesk.service.routing import Call

T = TypeVar("T")


def context(call: Call[Any, Any]) -> ServiceContext:
    """Return the service context of a request."""
    return call.app[CONTEXT]


async def in_session(
    call: Call[Any, Any], operation: Callable[[Broker], Awaitable[T]], *, retry_on_expiry: bool = True
) -> T:
    """Run a broker operation inside the brokerage session (AUTH_REQUIRED / SESSION_EXPIRED / re-auth)."""
    return await context(call).session.run(operation, retry_on_expiry=retry_on_expiry)
