"""The exceptions the client raises: one per family of the service's error codes, all ``FtdeskApiError``.

Every error answer of the service is the envelope ``{"ok": false, "error": {"code", "message", "details"}}``;
the exception carries those three, the HTTP status and the ``X-Request-ID`` (the key to the service's log).
Catch a family (``OrderRejectedError``), or switch on ``.code`` for one code.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


class FtdeskClientError(Exception):
    """Something went wrong on the client's side of the wire: no API key, no service, an unreadable answer."""


class ApiKeyNotFound(FtdeskClientError):
    """No API key was given and none was found where ftdesk keeps it on this machine."""


class ServiceUnreachable(FtdeskClientError):
    """The service did not answer (not running, wrong port, connection cut or timed out before the answer).

    For a request that changes something (a place, a cancel) the outcome is then unknown: it may have been
    carried out. ``idempotency_key`` is the key a place was sent with: sending the same place again with it
    returns the first answer and never places a second order.
    """

    def __init__(self, message: str, *, idempotency_key: str | None = None) -> None:
        self.idempotency_key = idempotency_key
        super().__init__(message)


class FtdeskApiError(FtdeskClientError):
    """The service answered with an error envelope."""

    def __init__(
        self, code: str, message: str, *, status: int, details: Any = None, request_id: str | None = None
    ) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.details = details
        self.request_id = request_id
        super().__init__(f"{code} (HTTP {status}): {message}")


class AuthenticationError(FtdeskApiError):
    """The API key was refused, or there is no brokerage session (log in first)."""


class InvalidRequestError(FtdeskApiError):
    """The request was refused as malformed or invalid; ``details`` names each field."""


class NotFoundError(FtdeskApiError):
    """Unknown path, account, order, note, trigger, watchlist or symbol."""


class ConflictError(FtdeskApiError):
    """The request conflicts with the current state (e.g. canceling a filled order)."""


class PreviewError(FtdeskApiError):
    """A place without a usable preview, or whose fields differ from it (``details`` names each field)."""


class TradingDisabledError(FtdeskApiError):
    """Trading is switched off: dry-run mode (``LIVE_TRADING_DISABLED``) or the kill switch (``TRADING_HALTED``)."""


class RiskLimitError(FtdeskApiError):
    """This order crosses a local risk limit (``RISK_LIMIT``); trading is on, another order may pass.

    ``details`` has ``limit`` (the setting), ``limit_value`` and ``order_value``; ``message`` says it in words.
    """


class ApprovalError(FtdeskApiError):
    """A place held for the trader's approval was not approved: rejected, timed out, or no tray to ask."""


class OrderRejectedError(FtdeskApiError):
    """The brokerage refused the order for a business reason; ``details`` has ``reason``, ``broker_code``, ..."""


class BrokerError(FtdeskApiError):
    """The brokerage failed to answer usably, or contradicted the request (``ACTION_MISMATCH``)."""


class ServiceError(FtdeskApiError):
    """Another failure of the service (internal error, streaming or credential store unavailable, ...)."""


class StorageFullError(ServiceError):
    """The disk of the service's data dir is full (``STORAGE_FULL``): nothing was sent; free some space."""


ERROR_FAMILIES: Mapping[str, type[FtdeskApiError]] = MappingProxyType(
    {
        "API_KEY_INVALID": AuthenticationError,
        "HOST_NOT_ALLOWED": AuthenticationError,
        "ORIGIN_NOT_ALLOWED": AuthenticationError,
        "AUTH_REQUIRED": AuthenticationError,
        "SESSION_EXPIRED": AuthenticationError,
        "LOGIN_FAILED": AuthenticationError,
        "TOTP_REQUIRED": AuthenticationError,
        "MALFORMED_REQUEST": InvalidRequestError,
        "VALIDATION_ERROR": InvalidRequestError,
        "PAYLOAD_TOO_LARGE": InvalidRequestError,
        "METHOD_NOT_ALLOWED": InvalidRequestError,
        "IDEMPOTENCY_KEY_REUSED": InvalidRequestError,
        "NOT_FOUND": NotFoundError,
        "CONFLICT": ConflictError,
        "PREVIEW_REQUIRED": PreviewError,
        "PREVIEW_MISMATCH": PreviewError,
        "LIVE_TRADING_DISABLED": TradingDisabledError,
        "TRADING_HALTED": TradingDisabledError,
        "RISK_LIMIT": RiskLimitError,
        "APPROVAL_REJECTED": ApprovalError,
        "APPROVAL_TIMEOUT": ApprovalError,
        "APPROVAL_UNAVAILABLE": ApprovalError,
        "ORDER_REJECTED": OrderRejectedError,
        "BROKER_ERROR": BrokerError,
        "ACTION_MISMATCH": BrokerError,
        "STORAGE_FULL": StorageFullError,
    }
)
"""Which exception class each error code raises; a code not listed raises ``ServiceError``."""


def api_error(status: int, envelope: Any, request_id: str | None) -> FtdeskApiError:
    """Return the exception for an error answer (its envelope, or whatever came back instead of one)."""
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if not isinstance(error, dict):
        return ServiceError(
            "HTTP_ERROR", f"HTTP {status} without an error envelope", status=status, request_id=request_id
        )
    code = str(error.get("code") or "HTTP_ERROR")
    family = ERROR_FAMILIES.get(code, ServiceError)
    return family(
        code, str(error.get("message") or ""), status=status, details=error.get("details"), request_id=request_id
    )


def unreachable(method: str, url: str, headers: Mapping[str, str] | None, exc: BaseException) -> ServiceUnreachable:
    """Return the error for a request that got no answer; a request that changes something may have been done."""
    key = (headers or {}).get("Idempotency-Key")
    unknown = "" if method == "GET" else "; it may have been carried out: check before sending it again"
    retry = f" (same idempotency_key={key!r} to repeat a place safely)" if key else ""
    return ServiceUnreachable(f"{method} {url}: {type(exc).__name__}: {exc}{unknown}{retry}", idempotency_key=key)


def envelope_data(status: int, body: Any, request_id: str | None) -> Any:
    """Return the ``data`` of a successful answer's envelope; raise the error an error answer stands for."""
    if status >= 400 or not isinstance(body, dict) or body.get("ok") is not True:
        raise api_error(status, body, request_id)
    return body.get("data")
