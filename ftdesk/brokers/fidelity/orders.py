"""Fidelity orders: status, detail, staged orders, previews and places, cancel, replace (reference 4.10-4.19).

Equity, single-option and multi-leg previews and places, cancel-replace, conditional orders and the trade
agreement. Places and cancels are never retried.
"""

from __future__ import annotations

from ftdesk.brokers.fidelity.module import FidelityModule


class OrdersModule(FidelityModule):
    """Broker methods of this group; each overrides the ``NotYetImplemented`` one of the same name."""
