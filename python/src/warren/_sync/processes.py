"""Background processes at the wire level: one method per ``/processes`` route.

``sandbox.commands`` builds the friendlier API on top of this.
"""

from __future__ import annotations

from typing import cast

from .._http import SyncHttp
from .._streams import EventStream
from .._types import ExecEvent, ExecRequest, ProcessInfo, Signal
from .._util import seg


class Processes:
    def __init__(self, http: SyncHttp, sandbox_id: str) -> None:
        self._http = http
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}/processes"

    def start(self, request: ExecRequest) -> ProcessInfo:
        """Starts ``request`` in the background and returns at once."""
        return cast(ProcessInfo, self._http.json("POST", self._base, json=request))

    def list(self) -> list[ProcessInfo]:
        """The background processes, running and exited."""
        return cast(list[ProcessInfo], self._http.json("GET", self._base)["items"])

    def get(self, pid: int) -> ProcessInfo:
        return cast(ProcessInfo, self._http.json("GET", f"{self._base}/{pid}"))

    def send_stdin(self, pid: int, data: str, *, eof: bool = False) -> None:
        """Writes to the process's stdin; ``eof=True`` closes it afterwards."""
        body: dict[str, object] = {"data": data}
        if eof:
            body["eof"] = True
        self._http.request("POST", f"{self._base}/{pid}/stdin", json=body)

    def signal(self, pid: int, signal: Signal = "SIGTERM") -> None:
        """Signals the whole process group."""
        self._http.request("POST", f"{self._base}/{pid}/signal", json={"signal": signal})

    def output(self, pid: int, *, follow: bool = True) -> EventStream[ExecEvent]:
        """The output as events: buffered output first, then (with ``follow``) live output until exit.

        Closing the stream does not stop the process.
        """
        path = f"{self._base}/{pid}/output"
        return EventStream(
            self._http,
            lambda: self._http.stream("GET", path, query={"follow": follow}),
            f"reading the output of process {pid}",
        )
