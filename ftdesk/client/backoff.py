"""Delays between reconnects of a stream: exponential, capped, with full jitter, reset by a good connection."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

DEFAULT_RECONNECT_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""The ceiling of each successive wait, seconds; the last one repeats."""


@dataclass
class Backoff:
    """The next wait before a reconnect: a random time up to the step's ceiling (so clients do not stampede)."""

    ceilings: tuple[float, ...] = DEFAULT_RECONNECT_DELAYS
    attempts: int = 0
    _random: random.Random = field(default_factory=random.Random, repr=False)

    def next_delay(self) -> float:
        """Return how long to wait before the next attempt (between half the ceiling and the ceiling)."""
        ceiling = self.ceilings[min(self.attempts, len(self.ceilings) - 1)]
        self.attempts += 1
        return self._random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        """Start over after a connection that delivered something."""
        self.attempts = 0
