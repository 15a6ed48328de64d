"""Settings: ``FTSERVICE_*`` environment > ``settings.json`` in the data dir > defaults.

One table (``SETTINGS``) describes every setting: its variable, default, parser, what it accepts and
whether it may live in the settings file. Parsing, precedence, error messages, the README table and the
settings dialog all read that table, so a setting is declared exactly once.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import platformdirs

from ftdesk.data_dir import DATA_DIR_MODE, move_aside
from ftdesk.setting_limits import RISK_LIMIT_ROWS
from ftdesk.setting_values import (
    InvalidValue,
    choice_parser,
    float_parser,
    int_parser,
    parse_api_key,
    parse_backoff,
    parse_bool,
    parse_fernet_key,
    parse_host,
    parse_https_url,
    parse_optional_seed,
    parse_optional_text,
    parse_origins,
    parse_stream_url,
    parse_text,
    parse_totp_secret,
    parse_upstream_base,
)

ENV_PREFIX = "FTSERVICE_"
SETTINGS_FILE_NAME = "settings.json"
APP_NAME = "ftdesk"


class ConfigError(Exception):
    """A setting has a value ftdesk cannot use; the message is one line naming it and what it accepts.

    ``reason`` says what is wrong (for a bad value: what the setting accepts), ``setting`` names the setting
    at fault when there is one, ``value_shown`` is where a bad value came from with the value itself unless
    it is a secret (``FTSERVICE_PORT='x'``), and ``where`` is the file the message is about. Read these
    fields, never the message text: the message is for people.
    """

    def __init__(self, reason: str, *, setting: str | None = None, value_shown: str = "", where: str = "") -> None:
        self.reason = reason
        self.setting = setting
        self.value_shown = value_shown
        self.where = where
        if value_shown:
            message = f"{value_shown} is not valid: {reason}"
        elif where:
            message = f"{where}: {reason}"
        else:
            message = reason
        super().__init__(message)


class Source(StrEnum):
    """Where a setting's value came from."""

    ENV = "env"
    FILE = "file"
    DEFAULT = "default"


@dataclass(frozen=True)
class SettingSpec:
    """One setting: how it is named, parsed, defaulted and documented."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str
    accepts: str
    secret: bool = False
    file_allowed: bool = True
    restart_required: bool = True

    @property
    def env(self) -> str:
        """Return the environment variable name."""
        return ENV_PREFIX + self.name.upper()


SETTINGS: tuple[SettingSpec, ...] = (
    # --- the thirteen variables of the spec ---------------------------------------------------------
    SettingSpec("host", "127.0.0.1", parse_host, "Bind address.", "an IP address or host name"),
    SettingSpec("port", 8787, int_parser(0, 65535), "Port (0 picks a free one and prints it).", "0-65535"),
    SettingSpec("api_key_required", True, parse_bool, "Require `Authorization: Bearer <API_KEY>`.", "true/false"),
    SettingSpec(
        "encryption_key",
        None,
        parse_fernet_key,
        "Fernet key that encrypts stored credentials (default: a key kept in the OS keychain).",
        "a Fernet key",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec(
        "live_trading",
        False,
        parse_bool,
        "Allow real order placement (off = dry-run).",
        "true/false",
        restart_required=False,
    ),
    SettingSpec(
        "auto_reauth",
        True,
        parse_bool,
        "Log in again with stored credentials when the session expires.",
        "true/false",
        restart_required=False,
    ),
    SettingSpec(
        "session_keepalive_interval", 300.0, float_parser(5, 86400), "Keep-alive interval, seconds.", "5-86400"
    ),
    SettingSpec(
        "log_level",
        "INFO",
        choice_parser("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", upper=True),
        "Logging level.",
        "DEBUG, INFO, WARNING, ERROR, CRITICAL",
    ),
    SettingSpec(
        "beps_token",
        None,
        parse_optional_text,
        "JWT for the BEPS account-event stream (overrides the token fetched at login; not renewed).",
        "a token",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec("beps_host", None, parse_optional_text, "Host of the managed GraphQL service for BEPS.", "a host name"),
    SettingSpec(
        "beps_stream_url",
        None,
        parse_stream_url,
        "BEPS WebSocket URL template; `{0}` = encoded auth header.",
        "a ws(s):// URL containing {0}",
    ),
    SettingSpec("beps_mid", None, parse_optional_text, "Member identifier for the BEPS subscription.", "text"),
    SettingSpec("beps_app_id", "ATN", parse_text, "BEPS consumer app id.", "text"),
    SettingSpec(
        "beps_token_url",
        None,
        parse_https_url,
        "URL of the BEPS token endpoint (default: dpservice's /ftgw/dp/security/token/authz/generate/1.0, "
        "whose /ftgw/dp start is inferred).",
        "an http(s) URL",
    ),
    SettingSpec(
        "beps_fallback_interval",
        15.0,
        float_parser(0.05, 3600),
        "Seconds between polls of Fidelity's alert history while BEPS is down (fills still reach /streaming/events).",
        "0.05-3600",
    ),
    # --- ftdesk's own ------------------------------------------------------------------------------
    SettingSpec(
        "login_at_startup", False, parse_bool, "Log in with the stored credentials when ftdesk starts.", "true/false"
    ),
    SettingSpec(
        "preview_ttl",
        300.0,
        float_parser(5, 3600),
        "Seconds a preview's conf_num stays usable for a place.",
        "5-3600",
        restart_required=False,
    ),
    SettingSpec(
        "require_approval",
        False,
        parse_bool,
        "Every API key's places wait for the trader's approval in the tray (the MCP server's always do).",
        "true/false",
        restart_required=False,
    ),
    SettingSpec(
        "approval_timeout",
        60.0,
        float_parser(5, 600),
        "Seconds a place waits for the trader's approval before it is refused (a client may ask for less or more).",
        "5-600",
        restart_required=False,
    ),
    SettingSpec("broker", "paper", choice_parser("paper", "fidelity"), "Brokerage behind the API.", "paper, fidelity"),
    SettingSpec(
        "paper_market",
        "simulated",
        choice_parser("simulated", "fidelity"),
        "Market the paper broker trades on: the simulation, or Fidelity's live quotes (a Fidelity login;"
        " no order ever reaches Fidelity).",
        "simulated, fidelity",
    ),
    SettingSpec(
        "api_key",
        None,
        parse_api_key,
        "Fixed API key (default: generated once, kept in the OS keychain).",
        "16+ printable characters",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec(
        "allowed_origins",
        (),
        parse_origins,
        "Browser origins allowed to call the API besides the service's own.",
        "comma-separated origins, e.g. http://localhost:3000",
    ),
    SettingSpec(
        "unsubscribe_delay",
        10.0,
        float_parser(0, 3600),
        "Seconds before an unused symbol is unsubscribed upstream.",
        "0-3600",
    ),
    SettingSpec(
        "stream_backoff",
        (0.5, 1.0, 2.0, 3.0, 4.5, 10.0, 30.0),
        parse_backoff,
        "Reconnect delays of the upstream streams, seconds; the last one repeats.",
        "comma-separated positive numbers",
    ),
    SettingSpec(
        "max_body_bytes",
        1_048_576,
        int_parser(1024, 64 * 1_048_576),
        "Largest request body accepted, bytes.",
        "1024-67108864",
    ),
    SettingSpec(
        "paper_seed",
        None,
        parse_optional_seed,
        "Seed of the paper market (same seed, same prices); default: random per world.",
        "an integer",
    ),
    SettingSpec(
        "paper_password",
        None,
        parse_optional_text,
        "Paper login password; default: any non-empty password.",
        "text",
        secret=True,
    ),
    SettingSpec(
        "paper_totp_secret",
        None,
        parse_totp_secret,
        "Makes the paper account a 2FA account with this base32 TOTP secret.",
        "a base32 secret",
        secret=True,
    ),
    SettingSpec(
        "paper_session_lifetime",
        0.0,
        float_parser(0, 7 * 86400),
        "Seconds a paper session lives without keep-alive (0 = never expires).",
        "0-604800",
    ),
    SettingSpec("paper_tick_interval", 1.0, float_parser(0.01, 60), "Seconds between paper market ticks.", "0.01-60"),
    SettingSpec(
        "fidelity_upstream",
        None,
        parse_upstream_base,
        "Route every Fidelity request to this base URL (tests and proxies); unset = the real hosts.",
        "a base URL",
    ),
    SettingSpec(
        "fidelity_read_rate",
        0.0,
        float_parser(0, 10_000, unit="calls per second"),
        "Fixed ceiling on Fidelity reads per second; 0 = none: reads go at the caller's pace until Fidelity "
        "pushes back (429, or 503 with Retry-After), then slow down and recover by themselves.",
        "0-10000",
    ),
    SettingSpec(
        "fidelity_read_concurrency",
        16,
        int_parser(1, 256),
        "Distinct Fidelity reads in flight at once (identical reads share one call).",
        "1-256",
    ),
    SettingSpec(
        "fidelity_read_share",
        1.0,
        float_parser(0, 10),
        "Longest a Fidelity account answer (positions, balances, option summary, lots, history, order status) "
        "also answers identical reads, and only while ftdesk can prove it current: the account-event stream "
        "(BEPS) is live and no account event (a fill, an order status, a cancel) and no write (an order, a "
        "cancel) came since it was fetched; any event or write drops kept answers at once. Without live events "
        "only identical reads in flight share a call. Such answers carry an Age header. 0 = never reuse an "
        "answer once it has arrived. Reference data (holiday calendar, available markets, symbol search) has its "
        "own windows.",
        "0-10",
    ),
    SettingSpec(
        "fidelity_read_budget",
        15.0,
        float_parser(1, 300),
        "Seconds a Fidelity read may spend waiting and retrying before it answers 502 `UPSTREAM_BUSY`.",
        "1-300",
    ),
    SettingSpec(
        "fidelity_read_retries",
        3,
        int_parser(0, 10),
        "Retries of a Fidelity read answered 429, 502, 503, 504 or cut off (never of a write).",
        "0-10",
    ),
    SettingSpec(
        "fidelity_order_rate",
        5.0,
        float_parser(0.1, 100),
        "Fidelity order entries and other writes per second after a burst of twice that; spaced, never refused.",
        "0.1-100",
    ),
    SettingSpec(
        "fidelity_logins_per_minute",
        5,
        int_parser(1, 60),
        "Fidelity logins a minute; one more is refused at once with the wait (protects the account from lockout).",
        "1-60",
    ),
    # Local risk limits (docs/safety.md); each changes without a restart.
    *(SettingSpec(*row, restart_required=False) for row in RISK_LIMIT_ROWS),
)
SETTINGS_BY_NAME: Mapping[str, SettingSpec] = MappingProxyType({spec.name: spec for spec in SETTINGS})

DATA_DIR_ENV = ENV_PREFIX + "DATA_DIR"


@dataclass(frozen=True)
class Settings:
    """Every setting's effective value, plus where it came from."""

    data_dir: Path
    host: str
    port: int
    api_key_required: bool
    encryption_key: str | None
    live_trading: bool
    auto_reauth: bool
    session_keepalive_interval: float
    log_level: str
    beps_token: str | None
    beps_host: str | None
    beps_stream_url: str | None
    beps_mid: str | None
    beps_app_id: str
    beps_token_url: str | None
    beps_fallback_interval: float
    login_at_startup: bool
    preview_ttl: float
    require_approval: bool
    approval_timeout: float
    broker: str
    paper_market: str
    api_key: str | None
    allowed_origins: tuple[str, ...]
    unsubscribe_delay: float
    stream_backoff: tuple[float, ...]
    max_body_bytes: int
    paper_seed: int | None
    paper_password: str | None
    paper_totp_secret: str | None
    paper_session_lifetime: float
    paper_tick_interval: float
    fidelity_upstream: str | None
    fidelity_read_rate: float
    fidelity_read_concurrency: int
    fidelity_read_share: float
    fidelity_read_budget: float
    fidelity_read_retries: int
    fidelity_order_rate: float
    fidelity_logins_per_minute: int
    max_equity_qty: float
    max_equity_notional: float
    max_option_contracts: int
    max_option_notional: float
    max_price_distance_pct: float
    max_orders_per_minute: int
    max_open_orders: int
    daily_loss_limit: float
    symbol_allow: tuple[str, ...]
    symbol_deny: tuple[str, ...]
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)
    notices: tuple[str, ...] = field(default=(), compare=False)  # a damaged settings file moved aside, in one line

    @property
    def trading_mode(self) -> str:
        """Return what the journal, /health and the tray call this brokerage and market."""
        if self.broker == "fidelity":
            return "Fidelity"
        return "paper on Fidelity's market" if self.paper_market == "fidelity" else "paper on the simulated market"

    @property
    def settings_file(self) -> Path:
        """Return the path of the settings file."""
        return self.data_dir / SETTINGS_FILE_NAME

    @property
    def base_url(self) -> str:
        """Return the URL scripts use to reach the service."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def locked_by_env(self, name: str) -> bool:
        """Say whether an environment variable fixes this setting."""
        return self.sources.get(name) is Source.ENV

    def __repr__(self) -> str:
        shown = []
        for spec in SETTINGS:
            value = getattr(self, spec.name)
            shown.append(f"{spec.name}={'***' if spec.secret and value else value!r}")
        return f"Settings(data_dir={str(self.data_dir)!r}, {', '.join(shown)})"


def default_data_dir() -> Path:
    """Return the platform's per-user data directory for ftdesk."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def _invalid(spec: SettingSpec, raw: Any, origin: str, problem: InvalidValue) -> ConfigError:
    shown = "" if spec.secret else f"={str(raw)!r}"
    return ConfigError(str(problem), setting=spec.name, value_shown=f"{origin}{shown}")


def _damaged_settings(path: Path, why: str, notices: list[str] | None) -> dict[str, Any]:
    """Move a damaged settings file aside and say so; the defaults apply (live trading off)."""
    moved = move_aside(path)
    notice = (
        f"The settings file {path} was damaged ({why}); moved to {moved.name}. Started with the default settings "
        "(live trading off, default risk limits): set them again in the tray"
    )
    if notices is not None:  # the caller tells the log (configured after the settings are read) and the tray
        notices.append(notice)
    return {}


def _read_settings_file(path: Path, notices: list[str] | None = None) -> dict[str, Any]:
    """Return the settings file's values; a file of bytes ftdesk never writes is moved aside (a typo is refused)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        return _damaged_settings(path, "its bytes are not text", notices)
    except OSError as exc:
        raise ConfigError(f"cannot be read ({exc.strerror})", where=str(path)) from None
    try:
        data = json.loads(text) if text.strip() else {}
    except RecursionError:
        return _damaged_settings(path, "it is nested far deeper than any settings file", notices)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        raise ConfigError(reason, where=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError('expected a JSON object of settings, e.g. {"port": 8787}', where=str(path))
    return data


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build the effective settings; raise ``ConfigError`` with one line naming a bad value."""
    env = os.environ if environ is None else environ
    data_dir_raw = env.get(DATA_DIR_ENV, "").strip()
    data_dir = Path(data_dir_raw).expanduser() if data_dir_raw else default_data_dir()
    settings_file = data_dir / SETTINGS_FILE_NAME
    notices: list[str] = []
    file_values = _read_settings_file(settings_file, notices)

    unknown = sorted(set(file_values) - set(SETTINGS_BY_NAME))
    if unknown:
        known = ", ".join(spec.name for spec in SETTINGS if spec.file_allowed)
        reason = f"unknown setting {unknown[0]!r}; known settings: {known}"
        raise ConfigError(reason, setting=unknown[0], where=str(settings_file))

    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for spec in SETTINGS:
        if spec.env in env:
            raw, origin, source = env[spec.env], spec.env, Source.ENV
        elif spec.name in file_values:
            if not spec.file_allowed:
                reason = (
                    f"{spec.name!r} is a secret and cannot be kept in the settings file; "
                    f"set {spec.env} in the environment instead"
                )
                raise ConfigError(reason, setting=spec.name, where=str(settings_file))
            raw, origin, source = file_values[spec.name], f"{spec.name!r} in {settings_file}", Source.FILE
        else:
            values[spec.name] = spec.default
            sources[spec.name] = Source.DEFAULT
            continue
        try:
            values[spec.name] = spec.parse(raw)
        except InvalidValue as exc:
            raise _invalid(spec, raw, origin, exc) from None
        sources[spec.name] = source
    return Settings(data_dir=data_dir, sources=sources, notices=tuple(notices), **values)


def validate_setting(name: str, raw: Any) -> Any:
    """Parse one setting's value; raise ``ConfigError`` naming it and what it accepts."""
    spec = SETTINGS_BY_NAME[name]
    try:
        return spec.parse(raw)
    except InvalidValue as exc:
        raise _invalid(spec, raw, spec.name, exc) from None


def save_settings_file(data_dir: Path, changes: Mapping[str, Any]) -> None:
    """Merge changes into the settings file atomically (None removes a key)."""
    path = data_dir / SETTINGS_FILE_NAME
    current = _read_settings_file(path)
    for name, value in changes.items():
        spec = SETTINGS_BY_NAME.get(name)
        if spec is None or not spec.file_allowed:
            raise ConfigError(f"{name!r} cannot be kept in the settings file", setting=name)
        if value is None:
            current.pop(name, None)
        else:
            validate_setting(name, value)
            current[name] = list(value) if isinstance(value, tuple) else value
    data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", dir=data_dir)  # mkstemp makes it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(current, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def settings_table_markdown() -> str:
    """Render the settings as the Markdown table of the README."""
    rows = ["| Variable | Default | Accepts | Meaning |", "|---|---|---|---|"]
    for spec in SETTINGS:
        default = spec.default
        if default is None:
            shown = "none"
        elif isinstance(default, tuple):
            shown = ",".join(f"{v:g}" for v in default) if default else "none"
        elif isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, float):
            shown = f"{default:g}"
        else:
            shown = str(default)
        rows.append(f"| `{spec.env}` | `{shown}` | {spec.accepts} | {spec.doc} |")
    rows.append(
        f"| `{DATA_DIR_ENV}` | platform user data dir | a directory | "
        "Where settings, logs and the paper world live (environment only). |"
    )
    return "\n".join(rows)
