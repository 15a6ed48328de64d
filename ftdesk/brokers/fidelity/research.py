"""Fidelity research: earnings, dividends, autosuggest, analytics, screener with SAML, notebooks (4.25-4.28)."""

from __future__ import annotations

from ftdesk.brokers.fidelity.module import FidelityModule


class ResearchModule(FidelityModule):
    """Broker methods of this group; each overrides the ``NotYetImplemented`` one of the same name."""
