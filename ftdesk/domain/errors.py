"""The domain error tree.

Every failure the service reports to a client is one of these. The mapping from error class to
wire code and HTTP status lives in one place, ``ftdesk.service.web.errors``; brokers and the service
raise these and never build HTTP responses themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class FtdeskError(Exception):
    """Base of every error ftdesk reports to a client."""

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


# --- request shape -------------------------------------------------------------------------


class MalformedRequest(FtdeskError):
    """The request could not be read (bad JSON, wrong content type)."""


class ValidationFailed(FtdeskError):
    """The request was readable but a field is invalid; details name each bad field."""

    @classmethod
    def for_fields(
        cls, message: str, problems: Iterable[tuple[str, str]], *, location: str = "body"
    ) -> ValidationFailed:
        """Return the error with details in the service's shape: one {field, location, message, type} per field."""
        details = [
            {"field": field, "location": location, "message": problem, "type": "value_error"}
            for field, problem in problems
        ]
        return cls(message, details=details)

    @classmethod
    def for_field(
        cls, field: str, message: str, *, location: str = "body", allowed: Sequence[str] | None = None
    ) -> ValidationFailed:
        """Return the error for one bad field, listing the allowed values when there is a fixed set."""
        error = cls.for_fields(message, [(field, message)], location=location)
        if allowed is not None:
            error.details[0]["allowed"] = list(allowed)
        return error


class JsonShapeInvalid(ValidationFailed):
    """The JSON is readable but not of the declared shape: a wrong JSON type, nesting too deep, a number too large."""


class NotFound(FtdeskError):
    """The path, account, order, note or symbol does not exist."""


class MethodNotAllowed(FtdeskError):
    """The path exists but not with this method."""


class PayloadTooLarge(FtdeskError):
    """The request body is larger than the service accepts."""


class Conflict(FtdeskError):
    """The request conflicts with the current state of a resource."""


# --- local security ------------------------------------------------------------------------


class ApiKeyInvalid(FtdeskError):
    """The API key is missing or wrong."""


class HostNotAllowed(FtdeskError):
    """The Host header does not name this machine (DNS-rebinding defence)."""


class OriginNotAllowed(FtdeskError):
    """A browser Origin that is not on the allow-list."""


# --- session -------------------------------------------------------------------------------


class AuthRequired(FtdeskError):
    """No brokerage session exists."""


class SessionExpired(FtdeskError):
    """The brokerage session timed out and could not be renewed."""


class LoginFailed(FtdeskError):
    """The brokerage refused the username or password."""


class TotpRequired(FtdeskError):
    """The account needs a second factor and none was given (or the code was wrong)."""


class CredentialStoreUnavailable(FtdeskError):
    """Credentials cannot be stored: no OS keychain and no encryption key configured."""


# --- trading safety ------------------------------------------------------------------------


class LiveTradingDisabled(FtdeskError):
    """Dry-run mode is active; a place operation was refused before reaching the broker."""


class ApprovalUnavailable(FtdeskError):
    """A place needs the trader's approval and no tray is running to ask; nothing was placed."""


class ApprovalRejected(FtdeskError):
    """The trader rejected the place in the tray; nothing was placed."""


class ApprovalTimedOut(FtdeskError):
    """The trader did not answer the approval in time; nothing was placed."""


class PreviewRequired(FtdeskError):
    """A place did not carry the conf_num of a usable preview made by this service."""


class PreviewMismatch(FtdeskError):
    """A place body differs from what was previewed; details name the fields."""


class IdempotencyKeyReused(FtdeskError):
    """An Idempotency-Key was reused with a different request body."""


# --- brokerage -----------------------------------------------------------------------------


class BrokerError(FtdeskError):
    """The brokerage (real or simulated) returned an error."""


class OrderRejected(BrokerError):
    """The brokerage refused an order for a business reason (price, buying power, halted symbol, limits...).

    A client error, not a broken upstream: ``reason`` is a stable machine-readable code, and the details carry
    ``broker_code`` and ``broker_message``, the broker's own code and words (``reason`` and the message when the
    broker gives no code of its own, as the paper broker).
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        details: Any = None,
        broker_code: str | None = None,
        broker_message: str | None = None,
    ) -> None:
        merged: dict[str, Any] = {"reason": reason}
        if isinstance(details, dict):
            merged.update(details)
        merged["broker_code"] = broker_code or reason
        merged["broker_message"] = broker_message or message
        super().__init__(message, details=merged)
        self.reason = reason


class ActionMismatch(OrderRejected):
    """The broker's preview answer names another order than the one asked for; nothing was bound or placed.

    ``details`` hold ``asked`` (what the request meant), ``understood`` (the broker's code, words, symbol and
    quantity, verbatim) and ``problems`` (each contradiction in words).
    """

    def __init__(self, message: str, *, details: Any = None) -> None:
        # Not a refusal: the broker's own code and words sit in ``understood``, so no broker_code/broker_message.
        merged: dict[str, Any] = {"reason": "ACTION_MISMATCH"}
        if isinstance(details, dict):
            merged.update(details)
        BrokerError.__init__(self, message, details=merged)
        self.reason = "ACTION_MISMATCH"


class StreamingUnavailable(FtdeskError):
    """A stream cannot be served (e.g. account events without BEPS configuration)."""


class StorageFull(FtdeskError):
    """The data dir's disk is full: ftdesk cannot write down an order action, so it does not start one.

    ``details``: ``data_dir`` and ``free_bytes`` (what the disk had left when the write failed).
    """


class InternalError(FtdeskError):
    """An unexpected failure inside ftdesk; details are in the log, never in the response."""
