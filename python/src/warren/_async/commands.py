"""``sandbox.commands`` of the async client: run a command and get its result,
stream its output to callbacks, or start it in the background and get a handle."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Literal, cast, overload

from .._errors import WarrenConnectionError
from .._http import AsyncHttp
from .._results import (
    CommandResult,
    OutputHandler,
    acollect,
    from_exec_result,
    result_from_info,
    to_exec_request,
)
from .._streams import AsyncEventStream
from .._types import ExecEvent, ExecRequest, ExecResult, ProcessInfo, Signal
from .._util import seg
from .processes import AsyncProcesses


def _retrieve(task: asyncio.Task[CommandResult]) -> None:
    # Nobody may ever await wait(); a failure must not be reported as never retrieved.
    if not task.cancelled():
        task.exception()


class AsyncCommandHandle:
    """A background command: wait for it, feed its stdin, signal it, or read its output again.

    Handlers given when the command was started (plain functions or coroutine
    functions) are called from a task as output arrives.
    """

    def __init__(
        self,
        processes: AsyncProcesses,
        pid: int,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> None:
        self.pid = pid
        self._processes = processes
        self._on_stdout = on_stdout
        self._on_stderr = on_stderr
        self._task: asyncio.Task[CommandResult] | None = None
        if on_stdout or on_stderr:
            self._follow()

    def _follow(self) -> asyncio.Task[CommandResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self.output(self._on_stdout, self._on_stderr))
            self._task.add_done_callback(_retrieve)
        return self._task

    async def wait(self) -> CommandResult:
        """Returns when the process exits; the handlers given at start see all of its output."""
        return await asyncio.shield(self._follow())

    async def output(
        self, on_stdout: OutputHandler | None = None, on_stderr: OutputHandler | None = None
    ) -> CommandResult:
        """Streams the output to the handlers (buffered first, then live) and returns the result at exit."""
        async with self._processes.output(self.pid) as events:
            c = await acollect(events, on_stdout, on_stderr, self.pid)
        if c.exit is not None:
            return c.result(c.exit)
        result = result_from_info(c, await self.info())
        if result is None:
            raise WarrenConnectionError(f"output stream of process {self.pid} ended before it exited")
        return result

    def disconnect(self) -> None:
        """Stops following the output (the process goes on running)."""
        if self._task is not None:
            self._task.cancel()

    async def info(self) -> ProcessInfo:
        return await self._processes.get(self.pid)

    async def send_stdin(self, data: str) -> None:
        await self._processes.send_stdin(self.pid, data)

    async def close_stdin(self) -> None:
        await self._processes.send_stdin(self.pid, "", eof=True)

    async def kill(self, signal: Signal = "SIGTERM") -> None:
        """Sends ``signal`` (SIGTERM by default, like kill(1)) to the process group."""
        await self._processes.signal(self.pid, signal)


class AsyncCommands:
    def __init__(self, http: AsyncHttp, sandbox_id: str, processes: AsyncProcesses) -> None:
        self._http = http
        self._processes = processes
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}"

    @overload
    async def run(
        self,
        cmd: str,
        *,
        background: Literal[True],
        args: Sequence[str] | None = None,
        envs: Mapping[str, str] | None = None,
        cwd: str | None = None,
        user: str | None = None,
        stdin: str | None = None,
        timeout: float | None = None,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> AsyncCommandHandle: ...

    @overload
    async def run(
        self,
        cmd: str,
        *,
        background: Literal[False] = False,
        args: Sequence[str] | None = None,
        envs: Mapping[str, str] | None = None,
        cwd: str | None = None,
        user: str | None = None,
        stdin: str | None = None,
        timeout: float | None = None,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> CommandResult: ...

    async def run(
        self,
        cmd: str,
        *,
        background: bool = False,
        args: Sequence[str] | None = None,
        envs: Mapping[str, str] | None = None,
        cwd: str | None = None,
        user: str | None = None,
        stdin: str | None = None,
        timeout: float | None = None,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> CommandResult | AsyncCommandHandle:
        """Runs a command and waits for it (or, with ``background=True``, returns a handle at once).

        Without ``args``, ``cmd`` is a shell line run by ``/bin/sh -c``. Handlers
        may be coroutine functions; they are awaited in order.
        """
        req = to_exec_request(
            cmd, args=args, envs=envs, cwd=cwd, stdin=stdin, timeout=timeout, user=user
        )
        if background:
            info = await self._processes.start(req)
            return AsyncCommandHandle(self._processes, info["pid"], on_stdout, on_stderr)
        if on_stdout or on_stderr:
            return await self._run_streaming(req, on_stdout, on_stderr)
        res = cast(ExecResult, await self._http.json("POST", f"{self._base}/exec", json=req))
        return from_exec_result(res)

    async def _run_streaming(
        self, req: ExecRequest, on_stdout: OutputHandler | None, on_stderr: OutputHandler | None
    ) -> CommandResult:
        path = f"{self._base}/exec/stream"
        stream: AsyncEventStream[ExecEvent] = AsyncEventStream(
            self._http, lambda: self._http.stream("POST", path, json=req), "running a command"
        )
        # Leaving the block for any reason (cancellation too) closes the
        # connection, and the platform then kills the process group.
        async with stream:
            c = await acollect(stream, on_stdout, on_stderr)
        if c.exit is None:
            raise WarrenConnectionError("exec stream ended before the command exited")
        return c.result(c.exit)

    async def list(self) -> list[ProcessInfo]:
        """Processes started in the background in this sandbox, running or exited."""
        return await self._processes.list()

    async def connect(
        self,
        pid: int,
        *,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> AsyncCommandHandle:
        """Reattaches to a background process; its output so far is replayed to the handlers."""
        await self._processes.get(pid)
        return AsyncCommandHandle(self._processes, pid, on_stdout, on_stderr)

    async def send_stdin(self, pid: int, data: str) -> None:
        await self._processes.send_stdin(pid, data)

    async def kill(self, pid: int, signal: Signal = "SIGTERM") -> None:
        await self._processes.signal(pid, signal)
