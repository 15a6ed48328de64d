"""Endpoint group 'alerts' (being built)."""

from __future__ import annotations

from ftdesk.service.routing import RouteTable

routes = RouteTable(tag="alerts")
