"""Settings changes from the desktop app: check each, write the settings file, and say what applies now."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ftdesk.config import SETTINGS_BY_NAME, ConfigError, Settings, save_settings_file
from ftdesk.config import validate_setting as validate_setting_value


@dataclass(frozen=True)
class SaveOutcome:
    """The answer to a settings save.

    ``errors`` maps a setting name to a one-line reason; when it is not empty nothing was saved.
    ``applied`` took effect at once; ``needs_restart`` is saved but takes effect after a restart.
    """

    applied: list[str] = field(default_factory=list)
    needs_restart: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def validate_setting(name: str, raw: Any, running: Settings | None = None) -> Any:
    """Return the value ``raw`` gives a setting, or raise ``ConfigError`` saying why it cannot.

    The one check of a settings change: the settings dialog runs it on each field as it is typed, and
    ``save_changes`` on each change before anything is written. With ``running`` given it also refuses
    what only the environment may set or what an environment variable fixes. ``None`` resets a setting
    to its default.
    """
    spec = SETTINGS_BY_NAME.get(name)
    if spec is None:
        raise ConfigError(f"{name!r} is not a setting", setting=name)
    if running is not None and not spec.file_allowed:
        raise ConfigError(f"{name} can only be set with the environment variable {spec.env}", setting=name)
    if running is not None and running.locked_by_env(name):
        raise ConfigError(f"fixed by the environment variable {spec.env}", setting=name)
    if raw is None:
        return None
    return validate_setting_value(name, raw)


async def save_changes(running: Settings, changes: Mapping[str, Any]) -> tuple[SaveOutcome, dict[str, Any]]:
    """Check every change and write the settings file (off the loop); return the outcome and the values to apply now.

    Nothing is written when any change is refused. A saved value equal to the running one is neither
    applied nor waits for a restart.
    """
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name, raw in changes.items():
        try:
            values[name] = validate_setting(name, raw, running)
        except ConfigError as exc:
            errors[name] = str(exc)
    if errors:
        return SaveOutcome(errors=errors), {}
    try:
        await asyncio.to_thread(save_settings_file, running.data_dir, values)
    except (OSError, ConfigError) as exc:
        reason = f"the settings file could not be written: {exc}"
        return SaveOutcome(errors=dict.fromkeys(values, reason)), {}
    needs_restart: list[str] = []
    live_values: dict[str, Any] = {}
    for name, value in values.items():
        spec = SETTINGS_BY_NAME[name]
        effective = spec.default if value is None else value
        if effective == getattr(running, name):
            continue
        if spec.restart_required:
            needs_restart.append(name)
        else:
            live_values[name] = effective
    return SaveOutcome(applied=list(live_values), needs_restart=needs_restart), live_values
