"""``sandbox.commands``: run a command and get its result, stream its output to
callbacks, or start it in the background and get a handle."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Literal, cast, overload

from .._errors import WarrenConnectionError
from .._http import SyncHttp
from .._results import (
    CommandResult,
    OutputHandler,
    collect,
    from_exec_result,
    result_from_info,
    to_exec_request,
)
from .._streams import EventStream
from .._types import ExecEvent, ExecRequest, ExecResult, ProcessInfo, Signal
from .._util import seg
from .processes import Processes


class CommandHandle:
    """A background command: wait for it, feed its stdin, signal it, or read its output again.

    Output is buffered by the server (about the last 1 MiB), so attaching late
    still replays it from the start. Handlers given when the command was
    started are called from a background thread as output arrives.
    """

    def __init__(
        self,
        processes: Processes,
        pid: int,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> None:
        self.pid = pid
        self._processes = processes
        self._on_stdout = on_stdout
        self._on_stderr = on_stderr
        self._result: CommandResult | None = None
        self._error: BaseException | None = None
        self._stream: EventStream[ExecEvent] | None = None
        self._thread: threading.Thread | None = None
        if on_stdout or on_stderr:
            self._thread = threading.Thread(target=self._follow, daemon=True)
            self._thread.start()

    def _follow(self) -> None:
        try:
            self._result = self._output(self._on_stdout, self._on_stderr, keep=True)
        except BaseException as err:  # handed to wait()
            self._error = err

    def wait(self) -> CommandResult:
        """Blocks until the process exits; the handlers given at start see all of its output."""
        if self._thread is not None:
            try:
                while self._thread.is_alive():
                    self._thread.join(0.2)  # short joins keep Ctrl-C working
            except BaseException:
                if self._stream is not None:
                    self._stream.close()
                raise
            if self._error is not None:
                raise self._error
        if self._result is None:
            self._result = self.output()
        return self._result

    def output(
        self, on_stdout: OutputHandler | None = None, on_stderr: OutputHandler | None = None
    ) -> CommandResult:
        """Streams the output to the handlers (buffered first, then live) and returns the result at exit.

        Each call opens its own stream.
        """
        return self._output(on_stdout, on_stderr, keep=False)

    def _output(
        self, on_stdout: OutputHandler | None, on_stderr: OutputHandler | None, *, keep: bool
    ) -> CommandResult:
        with self._processes.output(self.pid) as events:
            if keep:
                self._stream = events
            c = collect(events, on_stdout, on_stderr, self.pid)
        if c.exit is not None:
            return c.result(c.exit)
        # The stream ended without an exit event; trust the process table over a guess.
        result = result_from_info(c, self.info())
        if result is None:
            raise WarrenConnectionError(f"output stream of process {self.pid} ended before it exited")
        return result

    def info(self) -> ProcessInfo:
        return self._processes.get(self.pid)

    def send_stdin(self, data: str) -> None:
        self._processes.send_stdin(self.pid, data)

    def close_stdin(self) -> None:
        self._processes.send_stdin(self.pid, "", eof=True)

    def kill(self, signal: Signal = "SIGTERM") -> None:
        """Sends ``signal`` (SIGTERM by default, like kill(1)) to the process group."""
        self._processes.signal(self.pid, signal)


class Commands:
    def __init__(self, http: SyncHttp, sandbox_id: str, processes: Processes) -> None:
        self._http = http
        self._processes = processes
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}"

    @overload
    def run(
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
    ) -> CommandHandle: ...

    @overload
    def run(
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

    def run(
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
    ) -> CommandResult | CommandHandle:
        """Runs a command and waits for it (or, with ``background=True``, returns a handle at once).

        Without ``args``, ``cmd`` is a shell line run by ``/bin/sh -c``; with
        ``args``, ``cmd`` is the program. With ``on_stdout``/``on_stderr`` the
        output streams to them as it arrives. ``timeout`` is in seconds; the
        process group is killed after it. A non-zero exit is a normal result.
        """
        req = to_exec_request(
            cmd, args=args, envs=envs, cwd=cwd, stdin=stdin, timeout=timeout, user=user
        )
        if background:
            info = self._processes.start(req)
            return CommandHandle(self._processes, info["pid"], on_stdout, on_stderr)
        if on_stdout or on_stderr:
            return self._run_streaming(req, on_stdout, on_stderr)
        res = cast(ExecResult, self._http.json("POST", f"{self._base}/exec", json=req))
        return from_exec_result(res)

    def _run_streaming(
        self, req: ExecRequest, on_stdout: OutputHandler | None, on_stderr: OutputHandler | None
    ) -> CommandResult:
        path = f"{self._base}/exec/stream"
        stream: EventStream[ExecEvent] = EventStream(
            self._http, lambda: self._http.stream("POST", path, json=req), "running a command"
        )
        # Leaving the block for any reason (KeyboardInterrupt too) closes the
        # connection, and the platform then kills the process group.
        with stream:
            c = collect(stream, on_stdout, on_stderr)
        if c.exit is None:
            raise WarrenConnectionError("exec stream ended before the command exited")
        return c.result(c.exit)

    def list(self) -> list[ProcessInfo]:
        """Processes started in the background in this sandbox, running or exited."""
        return self._processes.list()

    def connect(
        self,
        pid: int,
        *,
        on_stdout: OutputHandler | None = None,
        on_stderr: OutputHandler | None = None,
    ) -> CommandHandle:
        """Reattaches to a background process; its output so far is replayed to the handlers."""
        self._processes.get(pid)  # fail now with PROCESS_NOT_FOUND rather than on wait()
        return CommandHandle(self._processes, pid, on_stdout, on_stderr)

    def send_stdin(self, pid: int, data: str) -> None:
        self._processes.send_stdin(pid, data)

    def kill(self, pid: int, signal: Signal = "SIGTERM") -> None:
        self._processes.signal(pid, signal)
