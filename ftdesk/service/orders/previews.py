"""Bound previews: a place must carry the conf_num of a preview this service made, for the same order.

The book remembers, per conf_num, which kind of order was previewed (equity, option, multi-leg, replace,
conditional, conditional replace), the request fields it was previewed with, and when. A place claims
its preview before the broker is called; the claim is refused with ``PREVIEW_REQUIRED`` (no conf_num,
an unknown one, an expired one, one already used or in use) or ``PREVIEW_MISMATCH`` (another kind of
order, conf_nums of different previews, or fields that differ from the preview; details name each
field with the previewed and the given value). A claimed preview is consumed once its place reaches the
broker, whatever the broker answers, and released when the place never got that far.

The book lives in memory: previews do not survive a restart (preview again after one). Entries are
dropped a day after their preview; until then an expired preview is reported as expired, not unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal

from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import PreviewMismatch, PreviewRequired

RETENTION_SECONDS = 86_400.0


class OrderKind(StrEnum):
    """The kinds of previewable orders; a conf_num binds its place to the same kind."""

    EQUITY = "equity"
    OPTION = "option"
    MULTI_LEG = "multi_leg"
    REPLACE = "replace"
    CONDITIONAL = "conditional"
    CONDITIONAL_REPLACE = "conditional_replace"

    @property
    def preview_endpoint(self) -> str:
        """Return the endpoint that previews this kind of order."""
        return "POST /api/v1/orders/" + _PATHS[self] + "/preview"

    @property
    def words(self) -> str:
        """Return the kind for a sentence: 'an equity order'."""
        text = self.value.replace("_", "-" if self is OrderKind.MULTI_LEG else " ")
        return ("an " if text[0] in "aeiou" else "a ") + text + " order"


_PATHS = MappingProxyType(
    {
        OrderKind.EQUITY: "equity",
        OrderKind.OPTION: "option",
        OrderKind.MULTI_LEG: "options",
        OrderKind.REPLACE: "replace",
        OrderKind.CONDITIONAL: "conditional",
        OrderKind.CONDITIONAL_REPLACE: "conditional/replace",
    }
)


@dataclass
class BoundPreview:
    """One preview this service made: its kind, conf_num(s), fields and age."""

    kind: OrderKind
    conf_nums: tuple[str, ...]
    fields: dict[str, Any]
    created: float
    state: Literal["open", "claimed", "used"] = "open"
    answer: object | None = None  # the broker's preview answer: the order as the broker understood it


def field_differences(previewed: Any, given: Any, path: str = "") -> list[dict[str, Any]]:
    """Name each field whose value differs, as ``{field, previewed, given}`` (nested: ``legs.1.qty``)."""
    if isinstance(previewed, Mapping) and isinstance(given, Mapping):
        keys = list(previewed) + [k for k in given if k not in previewed]
        found: list[dict[str, Any]] = []
        for key in keys:
            found += field_differences(previewed.get(key), given.get(key), f"{path}.{key}" if path else str(key))
        return found
    if isinstance(previewed, list) and isinstance(given, list) and len(previewed) == len(given):
        found = []
        for index, (before, after) in enumerate(zip(previewed, given, strict=True)):
            found += field_differences(before, after, f"{path}.{index}" if path else str(index))
        return found
    return [] if previewed == given else [{"field": path, "previewed": previewed, "given": given}]


class PreviewBook:
    """The previews this service made, and the rule that binds a place to one of them."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._by_conf: dict[str, BoundPreview] = {}

    def register(
        self, kind: OrderKind, conf_nums: Sequence[str], fields: Mapping[str, Any], answer: object | None = None
    ) -> BoundPreview:
        """Remember a preview the broker accepted (and its answer, which an approval shows)."""
        self._prune()
        preview = BoundPreview(
            kind=kind, conf_nums=tuple(conf_nums), fields=dict(fields), created=self._clock.monotonic(), answer=answer
        )
        for conf in preview.conf_nums:
            self._by_conf[conf] = preview
        return preview

    def claim(self, kind: OrderKind, conf_nums: Sequence[str], fields: Mapping[str, Any], ttl: float) -> BoundPreview:
        """Return the usable preview of a place and mark it in use; raise PREVIEW_REQUIRED or PREVIEW_MISMATCH."""
        how = f"preview the order first ({kind.preview_endpoint}) and place it with the conf_num that returns"
        if not conf_nums:
            raise PreviewRequired(
                f"A place needs the conf_num of its preview: {how}",
                details={"reason": "missing", "preview_endpoint": kind.preview_endpoint},
            )
        found = [self._by_conf.get(conf) for conf in conf_nums]
        for conf, preview in zip(conf_nums, found, strict=True):
            if preview is None:
                raise PreviewRequired(
                    f"conf_num {conf} is not a preview made by this service (previews do not survive a restart): {how}",
                    details={"reason": "unknown", "conf_num": conf, "preview_endpoint": kind.preview_endpoint},
                )
        preview = found[0]
        assert preview is not None
        first = conf_nums[0]
        if any(other is not preview for other in found):
            raise PreviewMismatch(
                "The conf_nums belong to different previews; send the conf_nums of one preview",
                details={
                    "fields": [{"field": "conf_nums", "previewed": list(preview.conf_nums), "given": list(conf_nums)}]
                },
            )
        if preview.kind is not kind:
            raise PreviewMismatch(
                f"conf_num {first} is the preview of {preview.kind.words}, not of {kind.words}: {how}",
                details={"fields": [{"field": "order_kind", "previewed": preview.kind.value, "given": kind.value}]},
            )
        if preview.state == "used":
            raise PreviewRequired(
                f"conf_num {first} was already used to place an order; preview again to place another",
                details={"reason": "already_used", "conf_num": first, "preview_endpoint": kind.preview_endpoint},
            )
        if preview.state == "claimed":
            raise PreviewRequired(
                f"conf_num {first} is being used by a place that is still in flight",
                details={"reason": "in_use", "conf_num": first, "preview_endpoint": kind.preview_endpoint},
            )
        age = self._clock.monotonic() - preview.created
        if age > ttl:
            raise PreviewRequired(
                f"The preview {first} expired: it was made {age:.0f} s ago and previews are usable for {ttl:g} s "
                f"(FTSERVICE_PREVIEW_TTL); preview again",
                details={
                    "reason": "expired",
                    "conf_num": first,
                    "age_seconds": round(age, 3),
                    "preview_ttl": ttl,
                    "preview_endpoint": kind.preview_endpoint,
                },
            )
        whole = list(preview.conf_nums)
        # A conditional place may carry all the preview's conf_nums, or all but the last as the upstream SDK does.
        if list(conf_nums) != whole and not (len(whole) > 1 and list(conf_nums) == whole[:-1]):
            raise PreviewMismatch(
                f"Send the conf_nums of the preview in order: {', '.join(whole)}",
                details={"fields": [{"field": "conf_nums", "previewed": whole, "given": list(conf_nums)}]},
            )
        differences = field_differences(preview.fields, dict(fields))
        if differences:
            names = ", ".join(d["field"] for d in differences)
            raise PreviewMismatch(
                f"The order differs from its preview {first} in: {names}; preview the changed order and place it "
                "with the new conf_num",
                details={"conf_num": first, "fields": differences},
            )
        preview.state = "claimed"
        return preview

    def seconds_left(self, preview: BoundPreview, ttl: float) -> float:
        """Return how long the preview stays usable (negative once it expired)."""
        return ttl - (self._clock.monotonic() - preview.created)

    @staticmethod
    def release(preview: BoundPreview) -> None:
        """Make a claimed preview usable again (its place never reached the broker)."""
        if preview.state == "claimed":
            preview.state = "open"

    @staticmethod
    def consume(preview: BoundPreview) -> None:
        """Mark a preview used: its place reached the broker."""
        preview.state = "used"

    def _prune(self) -> None:
        horizon = self._clock.monotonic() - RETENTION_SECONDS
        for conf in [c for c, p in self._by_conf.items() if p.created < horizon]:
            del self._by_conf[conf]
