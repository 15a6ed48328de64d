"""What the route handlers reach through the aiohttp app: one frozen context of typed collaborators, no globals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ftdesk.brokers.base import Broker
from ftdesk.config import Settings
from ftdesk.domain.clock import Clock
from ftdesk.service.credentials import CredentialStore
from ftdesk.service.docs.openapi import OpenApiDocument
from ftdesk.service.keys import KeySource
from ftdesk.service.orders.desk import OrderDesk
from ftdesk.service.push.responses import StreamRegistry
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.sweep import KillSwitch
from ftdesk.service.session import SessionManager
from ftdesk.service.switches import LiveTradingSwitch, SettingsHolder
from ftdesk.service.web.routing import Endpoint
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.hub import QuoteHub

__all__ = ("CONTEXT", "DESKTOP_WINDOW", "ENDPOINTS", "OPENAPI", "DesktopWindow", "LiveTradingSwitch", "ServiceContext")


@dataclass(frozen=True)
class DesktopWindow:
    """The tray app's window, as the service sees it: something to show (a second launch asks for it)."""

    show: Callable[[], None]


@dataclass(frozen=True)
class ServiceContext:
    """The collaborators of the web layer, built once per run by the composition root and never changed.

    What changes while the service runs lives in the collaborators themselves: the settings in ``settings_holder``
    (replaced whole when the tray applies a change), the live switch in ``live``.
    """

    settings_holder: SettingsHolder
    api_key: str
    key_source: KeySource
    clock: Clock
    version: str
    broker: Broker
    live: LiveTradingSwitch
    session: SessionManager
    credentials: CredentialStore
    streams: StreamRegistry
    started_monotonic: float
    orders: OrderDesk
    quotes: QuoteHub
    events: AccountEventHub
    safety: SafetyGuard
    kill_switch: KillSwitch

    @property
    def settings(self) -> Settings:
        """Return the settings in force now."""
        return self.settings_holder.current


CONTEXT = web.AppKey("ftdesk_context", ServiceContext)
ENDPOINTS = web.AppKey("ftdesk_endpoints", list[Endpoint])
OPENAPI = web.AppKey("ftdesk_openapi", OpenApiDocument)
DESKTOP_WINDOW = web.AppKey("ftdesk_desktop_window", DesktopWindow)
