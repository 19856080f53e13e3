"""Small helpers shared by both clients."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

from ._types import CopyStep

P = ParamSpec("P")
Q = ParamSpec("Q")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


class class_or_instance(Generic[T, P, R, Q, S]):  # noqa: N801 - used like a decorator
    """A method with one meaning on the class and another on an instance.

    ``Sandbox.kill(sandbox_id)`` kills a sandbox by id; ``sandbox.kill()`` kills that one.
    """

    def __init__(self, on_class: Callable[P, R], on_instance: Callable[Concatenate[T, Q], S]) -> None:
        self._on_class = on_class
        self._on_instance = on_instance
        self.__doc__ = on_instance.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Callable[P, R]: ...

    @overload
    def __get__(self, obj: T, owner: type[Any]) -> Callable[Q, S]: ...

    def __get__(self, obj: T | None, owner: type[Any]) -> Callable[P, R] | Callable[Q, S]:
        if obj is None:
            return self._on_class
        on_instance = self._on_instance
        target: T = obj

        def bound(*args: Q.args, **kwargs: Q.kwargs) -> S:
            return on_instance(target, *args, **kwargs)

        return bound


def seg(value: str) -> str:
    """One path segment, percent-encoded."""
    return quote(value, safe="")


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    """Only the fields that were given; the server fills in its defaults."""
    return {k: v for k, v in d.items() if v is not None}


def mode_text(mode: str | int | None) -> str | None:
    """Permission bits as the API takes them: octal text ("755"); 0o755 works too."""
    if mode is None or isinstance(mode, str):
        return mode
    return format(mode, "o")


def copy_step(dest: str, content: str | bytes, mode: str | int | None = None) -> CopyStep:
    """A recipe ``copy`` step that writes ``content`` to ``dest`` in the template."""
    data = content.encode() if isinstance(content, str) else content
    spec: dict[str, str] = {"dest": dest, "content": base64.b64encode(data).decode("ascii")}
    text = mode_text(mode)
    if text is not None:
        spec["mode"] = text
    step: Any = {"copy": spec}
    return step


CHUNK = 1 << 20


def file_chunks(f: IO[bytes]) -> Iterator[bytes]:
    """A binary file's content in chunks of 1 MiB, for streamed uploads."""
    while chunk := f.read(CHUNK):
        yield chunk


async def afile_chunks(f: IO[bytes]) -> AsyncIterator[bytes]:
    """The same for the async client: each read runs in a worker thread."""
    while chunk := await asyncio.to_thread(f.read, CHUNK):
        yield chunk
