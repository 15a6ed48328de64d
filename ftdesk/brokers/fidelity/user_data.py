"""Fidelity user data: watchlists, preferences, alerts, price triggers, holiday calendar (4.29-4.33)."""

from __future__ import annotations

from ftdesk.brokers.fidelity.module import FidelityModule


class UserDataModule(FidelityModule):
    """Broker methods of this group; each overrides the ``NotYetImplemented`` one of the same name."""
