"""Endpoint group 'orders' (being built)."""

from __future__ import annotations

from ftdesk.service.routing import RouteTable

routes = RouteTable(tag="orders")
