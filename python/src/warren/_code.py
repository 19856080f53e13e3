"""The code interpreter's results (docs/code-interpreter.md): ``sandbox.run_code``.

A run streams events (start, stdout, stderr, result, error, end); they are
collected into an :class:`Execution` here, for the sync and async sandboxes alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import WarrenConnectionError


@dataclass
class Result:
    """A rich result: its MIME bundle and shortcuts to the usual types."""

    data: dict[str, Any]
    is_main_result: bool

    @property
    def text(self) -> str | None:
        return self.data.get("text/plain")

    @property
    def html(self) -> str | None:
        return self.data.get("text/html")

    @property
    def png(self) -> str | None:
        """base64"""
        return self.data.get("image/png")

    @property
    def svg(self) -> str | None:
        return self.data.get("image/svg+xml")

    @property
    def json(self) -> Any:
        return self.data.get("application/json")


@dataclass
class ExecutionError:
    name: str
    value: str
    traceback: str


@dataclass
class Execution:
    execution_id: str = ""
    context_id: str = ""
    language: str = ""
    results: list[Result] = field(default_factory=lambda: [])
    stdout: list[str] = field(default_factory=lambda: [])
    stderr: list[str] = field(default_factory=lambda: [])
    error: ExecutionError | None = None
    execution_count: int = 0
    duration_ms: float = 0.0
    cancelled: str | None = None

    @property
    def text(self) -> str | None:
        """The main result's text/plain, if there is one."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None


@dataclass
class CodeHandlers:
    on_stdout: Callable[[str], None] | None = None
    on_stderr: Callable[[str], None] | None = None
    on_result: Callable[[Result], None] | None = None
    on_error: Callable[[ExecutionError], None] | None = None


def run_request(
    code: str, language: str | None, context: str | None, timeout: float | None
) -> dict[str, Any]:
    req: dict[str, Any] = {"code": code}
    if language is not None:
        req["language"] = language
    if context is not None:
        req["context_id"] = context
    if timeout is not None:
        req["timeout_ms"] = max(1, round(timeout * 1000))
    return req


def apply_event(exe: Execution, e: dict[str, Any], h: CodeHandlers) -> bool:
    """Adds one event to the execution; True at the end event."""
    kind = e.get("type")
    if kind == "start":
        exe.execution_id = e["execution_id"]
        exe.context_id = e["context_id"]
        exe.language = e["language"]
    elif kind == "stdout":
        exe.stdout.append(e["text"])
        if h.on_stdout:
            h.on_stdout(e["text"])
    elif kind == "stderr":
        exe.stderr.append(e["text"])
        if h.on_stderr:
            h.on_stderr(e["text"])
    elif kind == "result":
        r = Result(data=e["data"], is_main_result=bool(e["is_main_result"]))
        exe.results.append(r)
        if h.on_result:
            h.on_result(r)
    elif kind == "error":
        err = ExecutionError(name=e["name"], value=e["value"], traceback=e["traceback"])
        if exe.error is None:
            exe.error = err
        if h.on_error:
            h.on_error(err)
    elif kind == "end":
        exe.execution_count = e["execution_count"]
        exe.duration_ms = e["duration_ms"]
        exe.cancelled = e.get("cancelled")
        return True
    return False


def no_end() -> WarrenConnectionError:
    return WarrenConnectionError("code run stream ended before its end event")
