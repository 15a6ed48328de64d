"""Fidelity market-data REST: option chain, montage, chart (JSONP), time and sales, markets (4.20-4.24)."""

from __future__ import annotations

from ftdesk.brokers.fidelity.module import FidelityModule


class MarketDataModule(FidelityModule):
    """Broker methods of this group; each overrides the ``NotYetImplemented`` one of the same name."""
