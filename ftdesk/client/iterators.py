"""The blocking ``Client``'s stream iterators: SSE streams run on the client's loop thread, the WebSocket is sync."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

T = TypeVar("T")
Item = TypeVar("Item")


async def awaited(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` (a coroutine for ``run_coroutine_threadsafe``, which takes no other awaitable)."""
    return await awaitable


class StreamIterator(Generic[Item]):
    """A blocking iterator over one of the async client's streams; ``close()`` (or ``with``) stops it."""

    def __init__(
        self,
        run: Callable[[Awaitable[Any]], Any],
        client_closed: Callable[[], bool],
        source: AsyncGenerator[Item, None],
    ) -> None:
        self._run = run  # the client's blocking runner (its loop thread)
        self._client_closed = client_closed
        self._source = source
        self._closed = False

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Item:
        if self._closed:
            raise StopIteration
        try:
            item: Item = self._run(anext(self._source))
            return item
        except StopAsyncIteration:
            self._closed = True
            raise StopIteration from None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the stream and its connection."""
        if not self._closed:
            self._closed = True
            if not self._client_closed():
                self._run(self._source.aclose())


class WsIterator(Generic[Item]):
    """A blocking iterator over the quote WebSocket; ``close()`` (or ``with``) stops it."""

    def __init__(self, source: Iterator[Item]) -> None:
        self._source = source

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Item:
        return next(self._source)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the WebSocket (the generator's ``with`` block closes it)."""
        close = getattr(self._source, "close", None)
        if close is not None:
            close()
