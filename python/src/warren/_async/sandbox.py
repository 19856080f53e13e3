"""``warren.AsyncSandbox``: the asyncio twin of ``warren.Sandbox``."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from .._code import CodeHandlers, Execution, ExecutionError, Result, apply_event, no_end, run_request
from .._errors import NotFoundError
from .._http import AsyncHttp
from .._types import (
    EgressSecret,
    NetworkPolicy,
    SandboxEvent,
    SandboxInfo,
    SandboxState,
    Snapshot,
    VolumeMount,
)
from .._sync.sandbox import SandboxPage, create_body, list_query, path
from .._util import class_or_instance, drop_none, seg
from .._streams import AsyncEventStream
from .commands import AsyncCommands
from .files import AsyncFiles
from .network import AsyncNetwork
from .processes import AsyncProcesses


class SandboxCreation:
    """What ``AsyncSandbox.create()`` returns: await it, or use it with ``async with``."""

    def __init__(self, creating: Coroutine[Any, Any, AsyncSandbox]) -> None:
        self._creating = creating
        self._sandbox: AsyncSandbox | None = None

    def __await__(self) -> Generator[Any, None, AsyncSandbox]:
        return self._creating.__await__()

    async def __aenter__(self) -> AsyncSandbox:
        self._sandbox = await self._creating
        return self._sandbox

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._sandbox is not None:
            await self._sandbox.__aexit__(et, e, tb)


@dataclass(frozen=True)
class AsyncForkTree:
    parent_pause_ms: float
    """How long the parent was held for the capture."""
    children: list[AsyncSandbox]


class AsyncSandbox:
    """A sandbox. Use ``async with AsyncSandbox.create() as sandbox:`` to kill it when the block ends."""

    def __init__(self, http: AsyncHttp, info: SandboxInfo) -> None:
        self._http = http
        self.id: str = info["id"]
        self.info: SandboxInfo = info
        """Last known record; refresh it with get_info()."""
        self._preview_token: str | None = info.get("preview_token")
        self.processes = AsyncProcesses(http, self.id)
        self.commands = AsyncCommands(http, self.id, self.processes)
        self.files = AsyncFiles(http, self.id)
        self.network = AsyncNetwork(http, self.id)

    @property
    def sandbox_id(self) -> str:
        """The same as ``id``."""
        return self.id

    def __repr__(self) -> str:
        return f"AsyncSandbox(id={self.id!r}, template={self.info['template']!r})"

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self._kill_self()
        except NotFoundError:
            pass  # its record was purged: it is long gone
        finally:
            await self.close()

    async def close(self) -> None:
        """Closes this object's connections to the API; the sandbox keeps running."""
        await self._http.close()

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
    ) -> SandboxCreation:
        """Creates a sandbox (template ``base`` unless another is named) and returns it running.

        ``await AsyncSandbox.create()`` gives the sandbox; ``async with
        AsyncSandbox.create() as sandbox:`` also kills it when the block ends.
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
        return SandboxCreation(cls._post(body, api_url, api_key))

    @classmethod
    async def _post(cls, body: dict[str, Any], api_url: str | None, api_key: str | None) -> AsyncSandbox:
        http = AsyncHttp(api_url, api_key)
        try:
            info = cast(SandboxInfo, await http.json("POST", "/v1/sandboxes", json=body))
        except BaseException:
            await http.close()
            raise
        return cls(http, info)

    @classmethod
    async def connect(
        cls, sandbox_id: str, *, api_url: str | None = None, api_key: str | None = None
    ) -> AsyncSandbox:
        """Attaches to an existing sandbox (``NotFoundError`` SANDBOX_NOT_FOUND if there is none)."""
        http = AsyncHttp(api_url, api_key)
        try:
            info = cast(SandboxInfo, await http.json("GET", path(sandbox_id)))
        except BaseException:
            await http.close()
            raise
        return cls(http, info)

    @staticmethod
    async def list(
        *,
        state: SandboxState | None = None,
        metadata: Mapping[str, str] | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> list[SandboxInfo]:
        """All matching sandboxes (stopped ones only with ``state="stopped"``), across every page."""
        items: list[SandboxInfo] = []
        async with AsyncHttp(api_url, api_key) as http:
            cursor: str | None = None
            while True:
                query = list_query(state, metadata, 500, cursor)
                page = await http.json("GET", "/v1/sandboxes", query=query)
                items.extend(cast(list[SandboxInfo], page["items"]))
                cursor = cast(str | None, page["next_cursor"])
                if not cursor:
                    return items

    @staticmethod
    async def list_page(
        *,
        state: SandboxState | None = None,
        metadata: Mapping[str, str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> SandboxPage:
        """One page of sandboxes, newest first; pass ``next_cursor`` back as ``cursor``."""
        async with AsyncHttp(api_url, api_key) as http:
            page = await http.json("GET", "/v1/sandboxes", query=list_query(state, metadata, limit, cursor))
        return SandboxPage(cast(list[SandboxInfo], page["items"]), page["next_cursor"])

    @staticmethod
    async def _kill_id(sandbox_id: str, *, api_url: str | None = None, api_key: str | None = None) -> bool:
        async with AsyncHttp(api_url, api_key) as http:
            return bool((await http.json("DELETE", path(sandbox_id)))["deleted"])

    async def _kill_self(self) -> bool:
        """Destroys the sandbox. True if it was running, False if it had already stopped.

        ``Sandbox.kill(sandbox_id)`` does the same by id, without connecting first.
        """
        return bool((await self._http.json("DELETE", path(self.id)))["deleted"])

    kill = class_or_instance(_kill_id, _kill_self)

    @staticmethod
    async def delete_snapshot(
        snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None
    ) -> None:
        """Deletes a snapshot; sandboxes started from it are unaffected."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", f"/v1/snapshots/{seg(snapshot_id)}")

    async def get_info(self) -> SandboxInfo:
        """The sandbox's record, fresh from the API (also kept in ``info``)."""
        self.info = cast(SandboxInfo, await self._http.json("GET", path(self.id)))
        return self.info

    async def _patch(self, body: dict[str, Any]) -> SandboxInfo:
        self.info = cast(SandboxInfo, await self._http.json("PATCH", path(self.id), json=body))
        return self.info

    async def run_code(
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
        """Runs code in the code interpreter (python by default; docs/code-interpreter.md)."""
        req = run_request(code, language, context, timeout)
        p = f"{path(self.id)}/code"
        stream: AsyncEventStream[dict[str, Any]] = AsyncEventStream(
            self._http, lambda: self._http.stream("POST", p, json=req), "running code"
        )
        exe = Execution()
        handlers = CodeHandlers(on_stdout, on_stderr, on_result, on_error)
        async with stream:
            async for event in stream:
                if apply_event(exe, event, handlers):
                    return exe
        raise no_end()

    async def set_timeout(self, timeout: int) -> SandboxInfo:
        """Sets the idle time-to-live in seconds; it restarts from now."""
        return await self._patch({"ttl_seconds": timeout})

    async def set_metadata(self, metadata: Mapping[str, str]) -> SandboxInfo:
        """Replaces all metadata labels."""
        return await self._patch({"metadata": dict(metadata)})

    async def set_persistence(
        self, *, persistent: bool | None = None, idle_timeout: int | None = None
    ) -> SandboxInfo:
        """Never reaped by the TTL (hibernated after ``idle_timeout`` idle seconds instead), or not."""
        return await self._patch(drop_none({"persistent": persistent, "idle_timeout_seconds": idle_timeout}))

    async def events(self) -> list[SandboxEvent]:
        """Every state change, oldest first."""
        return cast(list[SandboxEvent], (await self._http.json("GET", f"{path(self.id)}/events"))["items"])

    def get_preview_url(self, port: int) -> str:
        """The URL of a port a server in the sandbox listens on (``http://3000-sbx_....localhost:8080``)."""
        return self.info["preview_url"].replace("{port}", str(port))

    @property
    def preview_token(self) -> str | None:
        """The preview token of a sandbox created with ``preview_auth=True`` (after create or rotate)."""
        return self._preview_token

    async def rotate_preview_token(self) -> str:
        """Makes a new preview token; the old one stops working at once."""
        res = await self._http.json("POST", f"{path(self.id)}/preview-token")
        self._preview_token = cast(str, res["preview_token"])
        return self._preview_token

    async def _lifecycle(self, action: str) -> SandboxInfo:
        self.info = cast(SandboxInfo, await self._http.json("POST", f"{path(self.id)}/{action}"))
        return self.info

    async def pause(self) -> SandboxInfo:
        """Freezes the CPU; memory stays. Any later call that needs the sandbox resumes it."""
        return await self._lifecycle("pause")

    async def resume(self) -> SandboxInfo:
        return await self._lifecycle("resume")

    async def hibernate(self) -> SandboxInfo:
        """Saves memory, processes and files to disk and frees the host; any later call wakes it."""
        return await self._lifecycle("hibernate")

    async def wake(self) -> SandboxInfo:
        return await self._lifecycle("wake")

    async def snapshot(self) -> Snapshot:
        """Captures memory, processes and files; the sandbox goes on running."""
        return cast(Snapshot, await self._http.json("POST", f"{path(self.id)}/snapshots"))

    def _child(self, info: SandboxInfo) -> AsyncSandbox:
        # Each child has its own connections, so closing one never closes another.
        return type(self)(AsyncHttp(self._http.api_url, self._http.api_key), info)

    async def fork(
        self, *, metadata: Mapping[str, str] | None = None, timeout: int | None = None
    ) -> AsyncSandbox:
        """A new sandbox with a copy of this one's files, started fresh (none of its processes)."""
        body = drop_none({"metadata": None if metadata is None else dict(metadata), "ttl_seconds": timeout})
        return self._child(cast(SandboxInfo, await self._http.json("POST", f"{path(self.id)}/fork", json=body)))

    async def fork_tree(
        self, count: int, *, metadata: Mapping[str, str] | None = None, timeout: int | None = None
    ) -> AsyncForkTree:
        """``count`` (1 to 16) children that continue from one capture of this sandbox's memory."""
        body = drop_none(
            {"count": count, "metadata": None if metadata is None else dict(metadata), "ttl_seconds": timeout}
        )
        res = await self._http.json("POST", f"{path(self.id)}/fork-tree", json=body)
        children = [self._child(c) for c in cast(list[SandboxInfo], res["children"])]
        return AsyncForkTree(parent_pause_ms=res["parent_pause_ms"], children=children)
