"""``warren.Sandbox``: create, connect to, list and kill sandboxes; per instance
``commands``, ``files``, ``processes`` and ``network``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from .._code import CodeHandlers, Execution, ExecutionError, Result, apply_event, no_end, run_request
from .._errors import NotFoundError
from .._http import SyncHttp
from .._types import (
    EgressSecret,
    NetworkPolicy,
    SandboxEvent,
    SandboxInfo,
    SandboxState,
    Snapshot,
    VolumeMount,
)
from .._util import class_or_instance, drop_none, seg
from .._streams import EventStream
from .commands import Commands
from .files import Files
from .network import Network
from .processes import Processes


def path(sandbox_id: str) -> str:
    return f"/v1/sandboxes/{seg(sandbox_id)}"


def list_query(
    state: SandboxState | None, metadata: Mapping[str, str] | None, limit: int | None, cursor: str | None
) -> dict[str, Any]:
    query: dict[str, Any] = {"state": state, "limit": limit, "cursor": cursor}
    for key, value in (metadata or {}).items():
        query[f"metadata.{key}"] = value
    return query


def create_body(
    template: str | None,
    timeout: int | None,
    metadata: Mapping[str, str] | None,
    envs: Mapping[str, str] | None,
    volumes: Sequence[VolumeMount] | None,
    **rest: Any,
) -> dict[str, Any]:
    return drop_none(
        {
            "template": template,
            "ttl_seconds": timeout,
            "metadata": None if metadata is None else dict(metadata),
            "env": None if envs is None else dict(envs),
            "volumes": None
            if volumes is None
            else [{"read_only": False, **v} for v in volumes],
            **rest,
        }
    )


@dataclass(frozen=True)
class SandboxPage:
    items: list[SandboxInfo]
    next_cursor: str | None
    """Pass it back as ``cursor`` for the next page; ``None`` on the last page."""


@dataclass(frozen=True)
class ForkTree:
    parent_pause_ms: float
    """How long the parent was held for the capture."""
    children: list[Sandbox]


class Sandbox:
    """A sandbox. Use ``with Sandbox.create() as sandbox:`` to kill it when the block ends."""

    def __init__(self, http: SyncHttp, info: SandboxInfo) -> None:
        self._http = http
        self.id: str = info["id"]
        self.info: SandboxInfo = info
        """Last known record; refresh it with get_info()."""
        self._preview_token: str | None = info.get("preview_token")
        self.processes = Processes(http, self.id)
        self.commands = Commands(http, self.id, self.processes)
        self.files = Files(http, self.id)
        self.network = Network(http, self.id)

    @property
    def sandbox_id(self) -> str:
        """The same as ``id``."""
        return self.id

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, template={self.info['template']!r})"

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._kill_self()
        except NotFoundError:
            pass  # its record was purged: it is long gone
        finally:
            self.close()

    def close(self) -> None:
        """Closes this object's connections to the API; the sandbox keeps running."""
        self._http.close()

    @classmethod
    def create(
        cls,
        template: str | None = None,
        *,
        timeout: int | None = None,
        metadata: Mapping[str, str] | None = None,
        envs: Mapping[str, str] | None = None,
        cpu: float | None = None,
        memory_mb: int | None = None,
        disk_mb: int | None = None,
        volumes: Sequence[VolumeMount] | None = None,
        network: NetworkPolicy | None = None,
        secrets: Sequence[EgressSecret] | None = None,
        persistent: bool | None = None,
        idle_timeout: int | None = None,
        from_snapshot: str | None = None,
        preview_auth: bool | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> Sandbox:
        """Creates a sandbox (template ``base`` unless another is named) and returns it running.

        ``timeout`` is the idle time-to-live in seconds (the API's ``ttl_seconds``,
        default 3600); ``envs`` the environment of every command. ``from_snapshot``
        continues from a snapshot instead of a template.
        """
        body = create_body(
            template,
            timeout,
            metadata,
            envs,
            volumes,
            cpu=cpu,
            memory_mb=memory_mb,
            disk_mb=disk_mb,
            network=network,
            secrets=None if secrets is None else list(secrets),
            persistent=persistent,
            idle_timeout_seconds=idle_timeout,
            from_snapshot=from_snapshot,
            preview_auth=preview_auth,
        )
        http = SyncHttp(api_url, api_key)
        try:
            info = cast(SandboxInfo, http.json("POST", "/v1/sandboxes", json=body))
        except BaseException:
            http.close()
            raise
        return cls(http, info)

    @classmethod
    def connect(
        cls, sandbox_id: str, *, api_url: str | None = None, api_key: str | None = None
    ) -> Sandbox:
        """Attaches to an existing sandbox (``NotFoundError`` SANDBOX_NOT_FOUND if there is none)."""
        http = SyncHttp(api_url, api_key)
        try:
            info = cast(SandboxInfo, http.json("GET", path(sandbox_id)))
        except BaseException:
            http.close()
            raise
        return cls(http, info)

    @staticmethod
    def list(
        *,
        state: SandboxState | None = None,
        metadata: Mapping[str, str] | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> list[SandboxInfo]:
        """All matching sandboxes (stopped ones only with ``state="stopped"``), across every page."""
        items: list[SandboxInfo] = []
        with SyncHttp(api_url, api_key) as http:
            cursor: str | None = None
            while True:
                query = list_query(state, metadata, 500, cursor)
                page = http.json("GET", "/v1/sandboxes", query=query)
                items.extend(cast(list[SandboxInfo], page["items"]))
                cursor = cast(str | None, page["next_cursor"])
                if not cursor:
                    return items

    @staticmethod
    def list_page(
        *,
        state: SandboxState | None = None,
        metadata: Mapping[str, str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> SandboxPage:
        """One page of sandboxes, newest first; pass ``next_cursor`` back as ``cursor``."""
        with SyncHttp(api_url, api_key) as http:
            page = http.json("GET", "/v1/sandboxes", query=list_query(state, metadata, limit, cursor))
        return SandboxPage(cast(list[SandboxInfo], page["items"]), page["next_cursor"])

    @staticmethod
    def _kill_id(sandbox_id: str, *, api_url: str | None = None, api_key: str | None = None) -> bool:
        with SyncHttp(api_url, api_key) as http:
            return bool(http.json("DELETE", path(sandbox_id))["deleted"])

    def _kill_self(self) -> bool:
        """Destroys the sandbox. True if it was running, False if it had already stopped.

        ``Sandbox.kill(sandbox_id)`` does the same by id, without connecting first.
        """
        return bool(self._http.json("DELETE", path(self.id))["deleted"])

    kill = class_or_instance(_kill_id, _kill_self)

    @staticmethod
    def delete_snapshot(
        snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None
    ) -> None:
        """Deletes a snapshot; sandboxes started from it are unaffected."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", f"/v1/snapshots/{seg(snapshot_id)}")

    def get_info(self) -> SandboxInfo:
        """The sandbox's record, fresh from the API (also kept in ``info``)."""
        self.info = cast(SandboxInfo, self._http.json("GET", path(self.id)))
        return self.info

    def _patch(self, body: dict[str, Any]) -> SandboxInfo:
        self.info = cast(SandboxInfo, self._http.json("PATCH", path(self.id), json=body))
        return self.info

    def run_code(
        self,
        code: str,
        *,
        language: str | None = None,
        context: str | None = None,
        timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        on_result: Callable[[Result], None] | None = None,
        on_error: Callable[[ExecutionError], None] | None = None,
    ) -> Execution:
        """Runs code in the code interpreter (python by default; docs/code-interpreter.md).

        State persists in the context (``context``: a context id; default: the
        language's default context). ``timeout`` is in seconds: the run is then
        interrupted and the context keeps its state.
        """
        req = run_request(code, language, context, timeout)
        p = f"{path(self.id)}/code"
        stream: EventStream[dict[str, Any]] = EventStream(
            self._http, lambda: self._http.stream("POST", p, json=req), "running code"
        )
        exe = Execution()
        handlers = CodeHandlers(on_stdout, on_stderr, on_result, on_error)
        with stream:
            for event in stream:
                if apply_event(exe, event, handlers):
                    return exe
        raise no_end()

    def set_timeout(self, timeout: int) -> SandboxInfo:
        """Sets the idle time-to-live in seconds; it restarts from now."""
        return self._patch({"ttl_seconds": timeout})

    def set_metadata(self, metadata: Mapping[str, str]) -> SandboxInfo:
        """Replaces all metadata labels."""
        return self._patch({"metadata": dict(metadata)})

    def set_persistence(
        self, *, persistent: bool | None = None, idle_timeout: int | None = None
    ) -> SandboxInfo:
        """Never reaped by the TTL (hibernated after ``idle_timeout`` idle seconds instead), or not."""
        return self._patch(drop_none({"persistent": persistent, "idle_timeout_seconds": idle_timeout}))

    def events(self) -> list[SandboxEvent]:
        """Every state change, oldest first."""
        return cast(list[SandboxEvent], self._http.json("GET", f"{path(self.id)}/events")["items"])

    def get_preview_url(self, port: int) -> str:
        """The URL of a port a server in the sandbox listens on (``http://3000-sbx_....localhost:8080``)."""
        return self.info["preview_url"].replace("{port}", str(port))

    @property
    def preview_token(self) -> str | None:
        """The preview token of a sandbox created with ``preview_auth=True`` (after create or rotate)."""
        return self._preview_token

    def rotate_preview_token(self) -> str:
        """Makes a new preview token; the old one stops working at once."""
        res = self._http.json("POST", f"{path(self.id)}/preview-token")
        self._preview_token = cast(str, res["preview_token"])
        return self._preview_token

    def _lifecycle(self, action: str) -> SandboxInfo:
        self.info = cast(SandboxInfo, self._http.json("POST", f"{path(self.id)}/{action}"))
        return self.info

    def pause(self) -> SandboxInfo:
        """Freezes the CPU; memory stays. Any later call that needs the sandbox resumes it."""
        return self._lifecycle("pause")

    def resume(self) -> SandboxInfo:
        return self._lifecycle("resume")

    def hibernate(self) -> SandboxInfo:
        """Saves memory, processes and files to disk and frees the host; any later call wakes it."""
        return self._lifecycle("hibernate")

    def wake(self) -> SandboxInfo:
        return self._lifecycle("wake")

    def snapshot(self) -> Snapshot:
        """Captures memory, processes and files; the sandbox goes on running."""
        return cast(Snapshot, self._http.json("POST", f"{path(self.id)}/snapshots"))

    def _child(self, info: SandboxInfo) -> Sandbox:
        # Each child has its own connections, so closing one never closes another.
        return type(self)(SyncHttp(self._http.api_url, self._http.api_key), info)

    def fork(
        self, *, metadata: Mapping[str, str] | None = None, timeout: int | None = None
    ) -> Sandbox:
        """A new sandbox with a copy of this one's files, started fresh (none of its processes)."""
        body = drop_none({"metadata": None if metadata is None else dict(metadata), "ttl_seconds": timeout})
        return self._child(cast(SandboxInfo, self._http.json("POST", f"{path(self.id)}/fork", json=body)))

    def fork_tree(
        self, count: int, *, metadata: Mapping[str, str] | None = None, timeout: int | None = None
    ) -> ForkTree:
        """``count`` (1 to 16) children that continue from one capture of this sandbox's memory."""
        body = drop_none(
            {"count": count, "metadata": None if metadata is None else dict(metadata), "ttl_seconds": timeout}
        )
        res = self._http.json("POST", f"{path(self.id)}/fork-tree", json=body)
        children = [self._child(c) for c in cast(list[SandboxInfo], res["children"])]
        return ForkTree(parent_pause_ms=res["parent_pause_ms"], children=children)
