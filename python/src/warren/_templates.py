"""Template builds, shared by both clients: request bodies and the ndjson build log."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Callable, Iterable, Sequence
from typing import Any

from ._errors import WarrenError, make_error
from ._types import ReadyProbe, RecipeStep, Template
from ._util import drop_none

BuildLogHandler = Callable[[str, "int | None"], object]
"""Called with each line of the build log and the 1-based recipe step it belongs to (or None)."""


def build_body(
    name: str,
    base: str | None,
    steps: Sequence[RecipeStep] | None,
    image_path: str | None,
    start: Sequence[str] | None,
    ready: ReadyProbe | None,
    default_cpu: float | None,
    default_memory_mb: int | None,
    max_cpu: float | None,
    max_memory_mb: int | None,
) -> dict[str, Any]:
    return drop_none(
        {
            "name": name,
            "base": base,
            "steps": None if steps is None else list(steps),
            "image": None if image_path is None else {"path": image_path},
            "start": None if start is None else list(start),
            "ready": ready,
            "default_cpu": default_cpu,
            "default_memory_mb": default_memory_mb,
            "max_cpu": max_cpu,
            "max_memory_mb": max_memory_mb,
        }
    )


def image_query(
    start: Sequence[str] | None,
    ready: Sequence[str] | None,
    ready_timeout: float | None,
    default_cpu: float | None,
    default_memory_mb: int | None,
    max_cpu: float | None,
    max_memory_mb: int | None,
) -> dict[str, Any]:
    # start and ready are argv lists: repeated query parameters.
    return {
        "start": None if start is None else list(start),
        "ready": None if ready is None else list(ready),
        "ready_timeout": ready_timeout,
        "default_cpu": default_cpu,
        "default_memory_mb": default_memory_mb,
        "max_cpu": max_cpu,
        "max_memory_mb": max_memory_mb,
    }


def _take(event: dict[str, Any], on_log: BuildLogHandler | None) -> tuple[Template | None, object]:
    kind = event.get("type")
    if kind == "log":
        return None, on_log(str(event["line"]), event.get("step")) if on_log else None
    if kind == "done":
        return event["template"], None
    step = event.get("step")
    details = {"step": step} if step is not None else None
    raise make_error(str(event.get("code", "INTERNAL")), str(event.get("message", "")), details=details)


def _no_result() -> WarrenError:
    return WarrenError("INTERNAL", "the build log ended without a result")


def read_build(events: Iterable[Any], on_log: BuildLogHandler | None) -> Template:
    """Reads a build's log to its end: the template, or the build's error raised."""
    for event in events:
        template, _ = _take(event, on_log)
        if template is not None:
            return template
    raise _no_result()


async def aread_build(events: AsyncIterable[Any], on_log: BuildLogHandler | None) -> Template:
    async for event in events:
        template, returned = _take(event, on_log)
        if inspect.isawaitable(returned):
            await returned
        if template is not None:
            return template
    raise _no_result()
