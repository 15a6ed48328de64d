"""What a stream edge gives its quote consumer to write with: ``QuoteWriter``.

An SSE response or a WebSocket attaches one to its consumer (``QuoteConsumer.deliver_to``) so updates can be
written without waking the edge's own task; the consumer owns each run of it.
"""

from __future__ import annotations

from typing import Protocol

from ftdesk.streaming.models import QuoteItem


class QuoteWriter(Protocol):
    """Writes a batch of updates to a consumer's client, as the edge writes what ``get()`` returns."""

    async def send(self, batch: list[QuoteItem]) -> None:
        """Write the batch (latest per symbol, oldest first); raise when the client is gone."""
        ...
