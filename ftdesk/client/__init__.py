"""ftdesk's Python client: the local service's API with ftdesk's own models and typed errors.

    from ftdesk.client import Client

    with Client() as api:                       # finds the local service's URL and API key
        api.login("trader", "paper-pass")
        for account in api.list_accounts():
            print(account.acct_num, api.get_balances(account.acct_num).net_worth)

``api.preview_and_place(...)`` previews an equity order, shows it, and places it only if ``confirm(preview)`` says
True; ``preview_and_place_option`` and ``preview_and_place_multileg`` do the same for option and multi-leg orders.
``AsyncClient`` is the same for asyncio. Importing this package never imports Qt, the server or a broker, and
each name loads its own module when first used.
"""

from __future__ import annotations

from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ftdesk.client.async_client import AsyncClient
    from ftdesk.client.discovery import find_api_key, find_base_url
    from ftdesk.client.errors import (
        ApiKeyNotFound,
        ApprovalError,
        AuthenticationError,
        BrokerError,
        ConflictError,
        FtdeskApiError,
        FtdeskClientError,
        InvalidRequestError,
        NotFoundError,
        OrderRejectedError,
        PreviewError,
        RiskLimitError,
        ServiceError,
        ServiceUnreachable,
        StorageFullError,
        TradingDisabledError,
    )
    from ftdesk.client.models import EventFrame, Health, QuotesAnswer, SessionStatus
    from ftdesk.client.orders import MultiLegPreview, OptionPreview, describe_preview
    from ftdesk.client.sync_client import Client

# Each public name is imported from its module on first use (PEP 562), so `from ftdesk.client import Client`
# loads neither the async client's aiohttp nor the streams nor the order models: a one-shot script (an
# `ftdesk quote` subcommand) starts without them.
_ERRORS = (
    "ApiKeyNotFound",
    "ApprovalError",
    "AuthenticationError",
    "BrokerError",
    "ConflictError",
    "FtdeskApiError",
    "FtdeskClientError",
    "InvalidRequestError",
    "NotFoundError",
    "OrderRejectedError",
    "PreviewError",
    "RiskLimitError",
    "ServiceError",
    "ServiceUnreachable",
    "StorageFullError",
    "TradingDisabledError",
)
_HOMES = MappingProxyType(
    {
        "AsyncClient": "async_client",
        "Client": "sync_client",
        "find_api_key": "discovery",
        "find_base_url": "discovery",
        "EventFrame": "models",
        "Health": "models",
        "QuotesAnswer": "models",
        "SessionStatus": "models",
        "MultiLegPreview": "orders",
        "OptionPreview": "orders",
        "describe_preview": "orders",
        **dict.fromkeys(_ERRORS, "errors"),
    }
)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = (
    "ApiKeyNotFound",
    "ApprovalError",
    "AsyncClient",
    "AuthenticationError",
    "BrokerError",
    "Client",
    "ConflictError",
    "EventFrame",
    "FtdeskApiError",
    "FtdeskClientError",
    "Health",
    "InvalidRequestError",
    "MultiLegPreview",
    "NotFoundError",
    "OptionPreview",
    "OrderRejectedError",
    "PreviewError",
    "QuotesAnswer",
    "RiskLimitError",
    "ServiceError",
    "ServiceUnreachable",
    "SessionStatus",
    "StorageFullError",
    "TradingDisabledError",
    "describe_preview",
    "find_api_key",
    "find_base_url",
)
