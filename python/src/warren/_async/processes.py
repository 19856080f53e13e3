"""Background processes at the wire level (async client): one method per ``/processes`` route."""

from __future__ import annotations

from typing import cast

from .._http import AsyncHttp
from .._streams import AsyncEventStream
from .._types import ExecEvent, ExecRequest, ProcessInfo, Signal
from .._util import seg


class AsyncProcesses:
    def __init__(self, http: AsyncHttp, sandbox_id: str) -> None:
        self._http = http
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}/processes"

    async def start(self, request: ExecRequest) -> ProcessInfo:
        """Starts ``request`` in the background and returns at once."""
        return cast(ProcessInfo, await self._http.json("POST", self._base, json=request))

    async def list(self) -> list[ProcessInfo]:
        """The background processes, running and exited."""
        return cast(list[ProcessInfo], (await self._http.json("GET", self._base))["items"])

    async def get(self, pid: int) -> ProcessInfo:
        return cast(ProcessInfo, await self._http.json("GET", f"{self._base}/{pid}"))

    async def send_stdin(self, pid: int, data: str, *, eof: bool = False) -> None:
        """Writes to the process's stdin; ``eof=True`` closes it afterwards."""
        body: dict[str, object] = {"data": data}
        if eof:
            body["eof"] = True
        await self._http.request("POST", f"{self._base}/{pid}/stdin", json=body)

    async def signal(self, pid: int, signal: Signal = "SIGTERM") -> None:
        """Signals the whole process group."""
        await self._http.request("POST", f"{self._base}/{pid}/signal", json={"signal": signal})

    def output(self, pid: int, *, follow: bool = True) -> AsyncEventStream[ExecEvent]:
        """The output as events: buffered output first, then (with ``follow``) live output until exit.

        Use it with ``async with``/``async for``. Closing it does not stop the process.
        """
        path = f"{self._base}/{pid}/output"
        return AsyncEventStream(
            self._http,
            lambda: self._http.stream("GET", path, query={"follow": follow}),
            f"reading the output of process {pid}",
        )
