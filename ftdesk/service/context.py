"""What the route handlers reach through the aiohttp app: typed AppKeys, no globals."""

from __future__ import annotations

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
from ftdesk.service.session import SessionManager
from ftdesk.service.web.routing import Endpoint
from ftdesk.streaming.events import AccountEventHub
from ftdesk.streaming.hub import QuoteHub


class LiveTradingSwitch:
    """Whether place operations may reach the broker; off (dry-run) unless configured or switched on."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled


@dataclass
class ServiceContext:
    """The collaborators of the web layer, built by the composition root."""

    settings: Settings
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


CONTEXT = web.AppKey("ftdesk_context", ServiceContext)
ENDPOINTS = web.AppKey("ftdesk_endpoints", list[Endpoint])
OPENAPI = web.AppKey("ftdesk_openapi", OpenApiDocument)
