"""Streamed answers: ndjson events and raw bytes, for both clients.

A stream sends its request when it is entered or first iterated, and closes the
connection when it is exhausted, closed, or left through an exception
(KeyboardInterrupt and asyncio cancellation included). Use it in a ``with``
block (``async with``) so that an early exit closes it at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

import httpx

from ._http import AsyncHttp, SyncHttp, lost

T = TypeVar("T")


class _SyncBase:
    def __init__(self, open_: Callable[[], httpx.Response]) -> None:
        self._open = open_
        self._resp: httpx.Response | None = None
        self._closed = False

    def _response(self) -> httpx.Response:
        if self._closed:
            raise ValueError("the stream is closed")
        if self._resp is None:
            self._resp = self._open()
        return self._resp

    def close(self) -> None:
        """Closes the connection; safe to call more than once."""
        self._closed = True
        if self._resp is not None:
            self._resp.close()


class EventStream(_SyncBase, Generic[T]):
    """An iterator over the JSON events of a streamed answer, and a context manager."""

    def __init__(self, http: SyncHttp, open_: Callable[[], httpx.Response], what: str) -> None:
        super().__init__(open_)
        self._http = http
        self._what = what
        self._events: Iterator[Any] | None = None

    def __enter__(self) -> EventStream[T]:
        self._response()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> EventStream[T]:
        return self

    def __next__(self) -> T:
        if self._events is None:
            self._events = self._http.ndjson(self._response(), self._what)
        try:
            return cast(T, next(self._events))
        except BaseException:
            # Exhausted or failed: nothing more comes, let the connection go.
            self.close()
            raise


class ByteStream(_SyncBase):
    """An iterator over the chunks of a file's content, and a context manager."""

    def __init__(self, open_: Callable[[], httpx.Response], what: str) -> None:
        super().__init__(open_)
        self._what = what
        self._chunks: Iterator[bytes] | None = None

    def __enter__(self) -> ByteStream:
        self._response()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> ByteStream:
        return self

    def __next__(self) -> bytes:
        if self._chunks is None:
            self._chunks = self._response().iter_bytes()
        try:
            return next(self._chunks)
        except httpx.TransportError as err:
            self.close()
            raise lost(err, self._what) from err
        except BaseException:
            self.close()
            raise


class _AsyncBase:
    def __init__(self, open_: Callable[[], Awaitable[httpx.Response]]) -> None:
        self._open = open_
        self._resp: httpx.Response | None = None
        self._closed = False

    async def _response(self) -> httpx.Response:
        if self._closed:
            raise ValueError("the stream is closed")
        if self._resp is None:
            self._resp = await self._open()
        return self._resp

    async def aclose(self) -> None:
        """Closes the connection; safe to call more than once."""
        self._closed = True
        if self._resp is not None:
            await self._resp.aclose()


class AsyncEventStream(_AsyncBase, Generic[T]):
    """An async iterator over the JSON events of a streamed answer, and an async context manager."""

    def __init__(
        self, http: AsyncHttp, open_: Callable[[], Awaitable[httpx.Response]], what: str
    ) -> None:
        super().__init__(open_)
        self._http = http
        self._what = what
        self._events: AsyncIterator[Any] | None = None

    async def __aenter__(self) -> AsyncEventStream[T]:
        await self._response()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncEventStream[T]:
        return self

    async def __anext__(self) -> T:
        if self._events is None:
            self._events = self._http.ndjson(await self._response(), self._what)
        try:
            return cast(T, await self._events.__anext__())
        except BaseException:
            await self.aclose()
            raise


class AsyncByteStream(_AsyncBase):
    """An async iterator over the chunks of a file's content, and an async context manager."""

    def __init__(self, open_: Callable[[], Awaitable[httpx.Response]], what: str) -> None:
        super().__init__(open_)
        self._what = what
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aenter__(self) -> AsyncByteStream:
        await self._response()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncByteStream:
        return self

    async def __anext__(self) -> bytes:
        if self._chunks is None:
            self._chunks = (await self._response()).aiter_bytes()
        try:
            return await self._chunks.__anext__()
        except httpx.TransportError as err:
            await self.aclose()
            raise lost(err, self._what) from err
        except BaseException:
            await self.aclose()
            raise
