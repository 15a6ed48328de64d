"""Deterministic random numbers and Brownian bridges, the raw material of the simulated market's prices."""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Sequence
from statistics import NormalDist

_NORMAL = NormalDist()
_TWO_PI = 2.0 * math.pi


def stable_uniform(*parts: object) -> float:
    """Return a uniform number in [0, 1) that depends only on ``parts`` (the same in every run)."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 18_446_744_073_709_551_616.0


def stable_normal(*parts: object) -> float:
    """Return a standard normal number that depends only on ``parts`` (the same in every run)."""
    return _NORMAL.inv_cdf(min(max(stable_uniform(*parts), 1e-12), 1.0 - 1e-12))


def fold(value: float, low: float, high: float) -> float:
    """Reflect ``value`` into [low, high], as a path bouncing off both walls would."""
    if low <= value <= high:
        return value
    width = high - low
    if width <= 0.0:
        return low
    rem = (value - low) % (2.0 * width)
    return low + (rem if rem <= width else 2.0 * width - rem)


def normals(rng: random.Random, count: int) -> list[float]:
    """Return ``count`` standard normal numbers (Box-Muller; faster than calling ``gauss`` each time)."""
    uniform, sqrt, log, cos, sin = rng.random, math.sqrt, math.log, math.cos, math.sin
    out: list[float] = []
    for _ in range((count + 1) // 2):
        angle = _TWO_PI * uniform()
        radius = sqrt(-2.0 * log(1.0 - uniform()))
        out.append(radius * cos(angle))
        out.append(radius * sin(angle))
    del out[count:]
    return out


def bridge(
    rng: random.Random, anchors: Sequence[tuple[int, float]], step_sd: float, low: float, high: float
) -> list[float]:
    """Return a Brownian path at integer steps through ``anchors`` (sorted by step), folded into [low, high]."""
    last = anchors[-1][0]
    out = [0.0] * (last + 1)
    for (a, xa), (b, xb) in itertools.pairwise(anchors):
        out[a] = xa
        steps = b - a
        if steps <= 1:
            continue
        walk = []
        acc = 0.0
        for z in normals(rng, steps):
            acc += z * step_sd
            walk.append(acc)
        gap = (acc - (xb - xa)) / steps
        for k in range(1, steps):
            value = xa + walk[k - 1] - gap * k
            out[a + k] = value if low <= value <= high else fold(value, low, high)
    out[last] = anchors[-1][1]
    return out


def allocate(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` into integer parts proportional to ``weights`` that sum exactly to it."""
    weight_sum = sum(weights)
    parts: list[int] = []
    acc = 0.0
    previous = 0
    for weight in weights:
        acc += weight
        current = round(total * acc / weight_sum) if weight_sum > 0 else 0
        parts.append(current - previous)
        previous = current
    parts[-1] += total - previous
    return parts
