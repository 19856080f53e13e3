"""What a finished command looks like, and how a stream of exec events folds into it.

Shared by foreground streaming runs and background handles of both clients, so
all of them report results (and call handlers) the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ._errors import make_error
from ._types import ExecEvent, ExecRequest, ExecResult, ExitEvent, ProcessInfo

OutputHandler = Callable[[str], object]
"""Called with each chunk of output, in arrival order. The async client awaits a returned awaitable."""


@dataclass(frozen=True)
class CommandResult:
    pid: int
    exit_code: int
    """127 when the program was not found; 128+N when signal N killed it."""
    stdout: str
    stderr: str
    signal: str | None
    """Name of the signal that killed the process, if one did."""
    timed_out: bool
    duration_ms: float


def to_exec_request(
    cmd: str,
    *,
    args: Sequence[str] | None = None,
    envs: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    user: str | None = None,
) -> ExecRequest:
    """The request the API gets for ``run(cmd, ...)``.

    The API never involves a shell; without ``args`` the command line runs
    through ``/bin/sh -c``, so ``run("ls -la | wc -l")`` does what one expects.
    """
    req: ExecRequest = (
        {"cmd": cmd, "args": list(args)}
        if args is not None
        else {"cmd": "/bin/sh", "args": ["-c", cmd]}
    )
    if envs is not None:
        req["env"] = dict(envs)
    if cwd is not None:
        req["cwd"] = cwd
    if stdin is not None:
        req["stdin"] = stdin
    if timeout is not None:
        req["timeout"] = timeout
    if user is not None:
        req["user"] = user
    return req


def from_exec_result(r: ExecResult) -> CommandResult:
    return CommandResult(
        pid=r["pid"],
        exit_code=r["exit_code"],
        stdout=r["stdout"],
        stderr=r["stderr"],
        signal=r["signal"],
        timed_out=r["timed_out"],
        duration_ms=r["duration_ms"],
    )


@dataclass
class Collected:
    """What a stream delivered: all output, and the exit event unless the stream ended first."""

    pid: int
    stdout: list[str] = field(default_factory=lambda: [])
    stderr: list[str] = field(default_factory=lambda: [])
    exit: ExitEvent | None = None

    def result(self, exit: ExitEvent) -> CommandResult:
        return CommandResult(
            pid=self.pid,
            exit_code=exit["exit_code"],
            stdout="".join(self.stdout),
            stderr="".join(self.stderr),
            signal=exit["signal"],
            timed_out=exit["timed_out"],
            duration_ms=exit["duration_ms"],
        )

    def take(
        self, event: ExecEvent, on_stdout: OutputHandler | None, on_stderr: OutputHandler | None
    ) -> object:
        """Folds one event in; answers what the handler returned (an awaitable for async ones).

        An ``error`` event raises its coded exception.
        """
        if event["type"] == "start":
            self.pid = event["pid"]
        elif event["type"] == "stdout":
            self.stdout.append(event["data"])
            return on_stdout(event["data"]) if on_stdout else None
        elif event["type"] == "stderr":
            self.stderr.append(event["data"])
            return on_stderr(event["data"]) if on_stderr else None
        elif event["type"] == "exit":
            self.exit = event
        else:
            raise make_error(event["code"], event["message"])
        return None


def collect(
    events: Iterable[ExecEvent],
    on_stdout: OutputHandler | None,
    on_stderr: OutputHandler | None,
    pid: int = 0,
) -> Collected:
    """Consumes events until ``exit`` (leaving the loop then; nothing follows an exit)."""
    c = Collected(pid)
    for event in events:
        c.take(event, on_stdout, on_stderr)
        if c.exit is not None:
            break
    return c


async def acollect(
    events: AsyncIterable[ExecEvent],
    on_stdout: OutputHandler | None,
    on_stderr: OutputHandler | None,
    pid: int = 0,
) -> Collected:
    c = Collected(pid)
    async for event in events:
        returned = c.take(event, on_stdout, on_stderr)
        if inspect.isawaitable(returned):
            await returned
        if c.exit is not None:
            break
    return c


def result_from_info(c: Collected, info: ProcessInfo) -> CommandResult | None:
    """For a stream that ended without an exit event: the result the process table shows."""
    if info["state"] != "exited" or info["exit_code"] is None:
        return None
    duration = 0.0
    if info["ended_at"]:
        start = datetime.fromisoformat(info["started_at"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(info["ended_at"].replace("Z", "+00:00"))
        duration = (end - start).total_seconds() * 1000
    return c.result(
        {
            "type": "exit",
            "exit_code": info["exit_code"],
            "signal": info["signal"],
            "timed_out": info["timed_out"],
            "duration_ms": duration,
        }
    )
