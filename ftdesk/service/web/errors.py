"""The one place where domain errors become wire codes and HTTP statuses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ftdesk.domain import errors as e
from ftdesk.domain.safety import RiskLimitExceeded, TradingHalted


@dataclass(frozen=True)
class ErrorSpec:
    """How one kind of error appears on the wire."""

    code: str
    status: int
    description: str


ERROR_TABLE: Mapping[type[e.FtdeskError], ErrorSpec] = MappingProxyType(
    {
        e.MalformedRequest: ErrorSpec(
            "MALFORMED_REQUEST",
            400,
            "The request could not be read: the body is not JSON (or was cut off), or the request is not valid HTTP "
            "(e.g. a request line with its query string, or a header, longer than 8190 bytes).",
        ),
        e.AuthRequired: ErrorSpec(
            "AUTH_REQUIRED", 401, "Not logged in to the brokerage: POST /api/v1/auth/login first."
        ),
        e.SessionExpired: ErrorSpec(
            "SESSION_EXPIRED", 401, "The brokerage session timed out and auto re-auth is off or failed."
        ),
        e.LoginFailed: ErrorSpec("LOGIN_FAILED", 401, "The brokerage refused the username or password."),
        e.TotpRequired: ErrorSpec(
            "TOTP_REQUIRED", 401, "The account needs a TOTP code (totp_code or totp_secret), or the code was wrong."
        ),
        e.ApiKeyInvalid: ErrorSpec("API_KEY_INVALID", 403, "Missing or wrong `Authorization: Bearer <API_KEY>`."),
        e.HostNotAllowed: ErrorSpec("HOST_NOT_ALLOWED", 403, "The Host header does not name this machine."),
        e.OriginNotAllowed: ErrorSpec(
            "ORIGIN_NOT_ALLOWED", 403, "The browser Origin is not on FTSERVICE_ALLOWED_ORIGINS."
        ),
        e.LiveTradingDisabled: ErrorSpec(
            "LIVE_TRADING_DISABLED", 403, "Dry-run mode is active; the place was refused before reaching the broker."
        ),
        e.ApprovalRejected: ErrorSpec(
            "APPROVAL_REJECTED",
            403,
            "The trader rejected the order in the tray's approval window; nothing was placed. `details.client` names "
            "who asked.",
        ),
        e.ApprovalTimedOut: ErrorSpec(
            "APPROVAL_TIMEOUT",
            409,
            "The trader did not approve or reject the order in time (`details.timeout_seconds`); nothing was placed.",
        ),
        e.ApprovalUnavailable: ErrorSpec(
            "APPROVAL_UNAVAILABLE",
            409,
            "The place needs the trader's approval (an assistant's place through `ftdesk mcp`, or require_approval "
            "on) and no tray is running to ask; nothing was placed. Start the tray (`ftdesk`).",
        ),
        e.NotFound: ErrorSpec("NOT_FOUND", 404, "No such path, account, order, note, trigger or symbol."),
        e.MethodNotAllowed: ErrorSpec(
            "METHOD_NOT_ALLOWED", 405, "The path exists but not with this method; details list the allowed ones."
        ),
        e.Conflict: ErrorSpec("CONFLICT", 409, "The request conflicts with the resource's current state."),
        e.PreviewRequired: ErrorSpec(
            "PREVIEW_REQUIRED", 409, "Place needs the conf_num of an unexpired, unused preview made by this service."
        ),
        e.PreviewMismatch: ErrorSpec(
            "PREVIEW_MISMATCH", 409, "The place body differs from the preview; details name the fields."
        ),
        # 409, not 423: the request is fine, the service's state (halted) refuses it; 423 is WebDAV's lock.
        TradingHalted: ErrorSpec(
            "TRADING_HALTED",
            409,
            "The kill switch is on: previews and places are refused until the trader resumes (tray, or POST "
            "/api/v1/safety/resume). Cancels still work. `details.halted_since`, `details.halted_by`.",
        ),
        e.PayloadTooLarge: ErrorSpec("PAYLOAD_TOO_LARGE", 413, "The request body exceeds FTSERVICE_MAX_BODY_BYTES."),
        e.ValidationFailed: ErrorSpec(
            "VALIDATION_ERROR",
            422,
            "A field's value is not acceptable (missing, out of range, not one of the allowed values, or inconsistent "
            "with another field); details list each bad field with the reason.",
        ),
        # The same code as a bad value, with 400: the JSON itself is not what the schema declares (the issue of a
        # script sending "10" for a number, or a hostile document), so it is refused as a bad request.
        e.JsonShapeInvalid: ErrorSpec(
            "VALIDATION_ERROR",
            400,
            "The JSON is not of the declared types or past the input limits: a string where a number belongs, a "
            "number where a boolean belongs, nesting deeper than 64 levels, a number too large; details name each "
            "place (`details[].type` e.g. `float_type`, `bool_type`, `json_too_deep`, `number_too_large`).",
        ),
        RiskLimitExceeded: ErrorSpec(
            "RISK_LIMIT",
            422,
            "The order crosses a local risk limit (size, notional, price distance, rate, open orders, symbol list, "
            "daily loss); nothing reached the broker. `details.limit` names it, `details.limit_value` is its value, "
            "`details.order_value` the order's.",
        ),
        e.IdempotencyKeyReused: ErrorSpec(
            "IDEMPOTENCY_KEY_REUSED", 422, "The Idempotency-Key was used before with a different body."
        ),
        e.CredentialStoreUnavailable: ErrorSpec(
            "CREDENTIAL_STORE_UNAVAILABLE",
            503,
            "No OS keychain and no FTSERVICE_ENCRYPTION_KEY: credentials cannot be stored.",
        ),
        e.StreamingUnavailable: ErrorSpec(
            "STREAMING_UNAVAILABLE", 503, "The stream cannot be served; the message says which settings are missing."
        ),
        e.ActionMismatch: ErrorSpec(
            "ACTION_MISMATCH",
            502,
            "The broker's preview answer says it understood another order (side, open/close, short sale, symbol "
            "or quantity) than the one asked for; nothing was bound, so nothing can be placed from it. "
            "`details.asked` and `details.understood` show both sides.",
        ),
        # A refusal is the broker answering, for a reason about the order or the account: the client's to fix.
        e.OrderRejected: ErrorSpec(
            "ORDER_REJECTED",
            422,
            "The brokerage refused the order for a business reason (limit too far from the market, buying power, "
            "halted or unknown symbol, quantity, option level...); nothing was placed. `details.reason` is a stable "
            "code (`UPSTREAM_REJECTED` for Fidelity, the paper broker's own e.g. `INSUFFICIENT_BUYING_POWER`); "
            "`details.broker_code` and `details.broker_message` are the broker's own code and words.",
        ),
        e.BrokerError: ErrorSpec(
            "BROKER_ERROR",
            502,
            "The brokerage failed to answer usably: an HTTP error status, an unreadable answer, a connection that "
            "failed or timed out; the message says which. `details.reason` `UPSTREAM_BUSY` (Fidelity too busy for a "
            "read) or `LOGIN_RATE_LIMITED` come with `details.retry_after`, seconds.",
        ),
        # 507 Insufficient Storage (RFC 4918): the request is fine, the service cannot record it. The client maps
        # it to its ServiceError family (StorageFullError).
        e.StorageFull: ErrorSpec(
            "STORAGE_FULL",
            507,
            "The disk of ftdesk's data dir is full: the order journal cannot be written, so previews and places are "
            "refused before they reach the broker. Cancels and the kill switch still work (on reserved space). "
            "`details.data_dir` names the dir, `details.free_bytes` its free space. Free some space; ftdesk goes on "
            "by itself.",
        ),
        e.InternalError: ErrorSpec(
            "INTERNAL_ERROR",
            500,
            "An unexpected failure inside ftdesk; the log has the details (search for the request id).",
        ),
    }
)


def spec_for(error: e.FtdeskError) -> ErrorSpec:
    """Return the wire code and status of a domain error (its nearest listed ancestor's)."""
    for cls in type(error).__mro__:
        found = ERROR_TABLE.get(cls)
        if found is not None:
            return found
    return ERROR_TABLE[e.InternalError]
