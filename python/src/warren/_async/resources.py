"""Platform-wide resources of the asyncio client: volumes, snapshots,
templates, databases and the health check. Each call takes ``api_url`` and
``api_key`` (found as for ``Sandbox.create`` when not given)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from datetime import datetime
from typing import IO, cast

import httpx

from .._http import AsyncHttp
from .._templates import BuildLogHandler, aread_build, build_body, image_query
from .._types import (
    ApiKey,
    CreatedKey,
    DatabaseEvent,
    DatabaseInfo,
    Health,
    ReadyProbe,
    RecipeStep,
    Snapshot,
    Template,
    Volume,
)
from .._sync.resources import db_path, iso_time
from .._util import afile_chunks, drop_none, seg


async def async_get_health(*, api_url: str | None = None, api_key: str | None = None) -> Health:
    """Is the platform up, and with what capacity (needs no token)."""
    async with AsyncHttp(api_url, api_key) as http:
        return cast(Health, await http.json("GET", "/v1/health"))


class AsyncVolumes:
    """Named persistent volumes; attach them with ``Sandbox.create(volumes=[...])``."""

    @staticmethod
    async def create(name: str, size_mb: int, *, api_url: str | None = None, api_key: str | None = None) -> Volume:
        """Creates a volume of ``size_mb`` MiB (its size limit)."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(Volume, await http.json("POST", "/v1/volumes", json={"name": name, "size_mb": size_mb}))

    @staticmethod
    async def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Volume]:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[Volume], (await http.json("GET", "/v1/volumes"))["items"])

    @staticmethod
    async def get(name: str, *, api_url: str | None = None, api_key: str | None = None) -> Volume:
        """A volume by name (or id)."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(Volume, await http.json("GET", f"/v1/volumes/{seg(name)}"))

    @staticmethod
    async def delete(name: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes a volume and its data; ``ConflictError`` VOLUME_IN_USE while a sandbox holds it."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", f"/v1/volumes/{seg(name)}")


class AsyncSnapshots:
    """Snapshots made with ``sandbox.snapshot()``; start from one with ``Sandbox.create(from_snapshot=...)``."""

    @staticmethod
    async def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Snapshot]:
        """Newest first."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[Snapshot], (await http.json("GET", "/v1/snapshots"))["items"])

    @staticmethod
    async def get(snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None) -> Snapshot:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(Snapshot, await http.json("GET", f"/v1/snapshots/{seg(snapshot_id)}"))

    @staticmethod
    async def delete(snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Frees its storage; sandboxes started from it are unaffected."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", f"/v1/snapshots/{seg(snapshot_id)}")


async def _follow(http: AsyncHttp, resp: httpx.Response, on_log: BuildLogHandler | None) -> Template:
    try:
        return await aread_build(http.ndjson(resp, "reading a build log"), on_log)
    finally:
        await resp.aclose()


class AsyncTemplates:
    """The images sandboxes start from. Builds stream their log to ``on_log(line, step)``."""

    @staticmethod
    async def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Template]:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[Template], (await http.json("GET", "/v1/templates"))["items"])

    @staticmethod
    async def get(name: str, *, api_url: str | None = None, api_key: str | None = None) -> Template:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(Template, await http.json("GET", f"/v1/templates/{seg(name)}"))

    @staticmethod
    async def build(
        name: str,
        *,
        base: str | None = None,
        steps: Sequence[RecipeStep] | None = None,
        image_path: str | None = None,
        start: Sequence[str] | None = None,
        ready: ReadyProbe | None = None,
        default_cpu: float | None = None,
        default_memory_mb: int | None = None,
        max_cpu: float | None = None,
        max_memory_mb: int | None = None,
        on_log: BuildLogHandler | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> Template:
        """Builds a template from a recipe (``base`` + ``steps``) or an image path on the server.

        Returns the template when the build is done; a failed build raises its
        error (``TemplateBuildError`` with ``details["step"]`` for a failed step).
        """
        body = build_body(
            name, base, steps, image_path, start, ready, default_cpu, default_memory_mb, max_cpu, max_memory_mb
        )
        async with AsyncHttp(api_url, api_key) as http:
            return await _follow(http, await http.stream("POST", "/v1/templates", json=body), on_log)

    @staticmethod
    async def upload_image(
        name: str,
        image: bytes | IO[bytes] | AsyncIterable[bytes],
        *,
        start: Sequence[str] | None = None,
        ready: Sequence[str] | None = None,
        ready_timeout: float | None = None,
        default_cpu: float | None = None,
        default_memory_mb: int | None = None,
        max_cpu: float | None = None,
        max_memory_mb: int | None = None,
        on_log: BuildLogHandler | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> Template:
        """Uploads an image (OCI layout or ``docker save`` tar, optionally gzipped), streamed, and builds it."""
        query = image_query(start, ready, ready_timeout, default_cpu, default_memory_mb, max_cpu, max_memory_mb)
        content: bytes | AsyncIterable[bytes]
        if isinstance(image, bytes):
            content = image
        elif hasattr(image, "read"):
            content = afile_chunks(cast(IO[bytes], image))
        else:
            content = cast(AsyncIterable[bytes], image)
        async with AsyncHttp(api_url, api_key) as http:
            resp = await http.stream("POST", f"/v1/templates/{seg(name)}/image", query=query, content=content)
            return await _follow(http, resp, on_log)

    @staticmethod
    async def rebuild(
        name: str,
        *,
        on_log: BuildLogHandler | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> Template:
        """Builds a template again."""
        async with AsyncHttp(api_url, api_key) as http:
            return await _follow(http, await http.stream("POST", f"/v1/templates/{seg(name)}/rebuild"), on_log)

    @staticmethod
    async def delete(name: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes a template; ``ConflictError`` TEMPLATE_IN_USE while sandboxes or snapshots depend on it."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", f"/v1/templates/{seg(name)}")


class AsyncDatabase:
    """Managed PostgreSQL. ``create`` answers once the database takes queries."""

    @staticmethod
    async def create(
        label: str,
        *,
        cpu: float | None = None,
        memory_mb: int | None = None,
        disk_mb: int | None = None,
        scale_to_zero_seconds: int | None = None,
        archive_timeout_seconds: int | None = None,
        metadata: Mapping[str, str] | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> DatabaseInfo:
        body = drop_none(
            {
                "label": label,
                "cpu": cpu,
                "memory_mb": memory_mb,
                "disk_mb": disk_mb,
                "scale_to_zero_seconds": scale_to_zero_seconds,
                "archive_timeout_seconds": archive_timeout_seconds,
                "metadata": None if metadata is None else dict(metadata),
            }
        )
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("POST", "/v1/databases", json=body))

    @staticmethod
    async def list(*, api_url: str | None = None, api_key: str | None = None) -> list[DatabaseInfo]:
        """Newest first."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[DatabaseInfo], (await http.json("GET", "/v1/databases"))["items"])

    @staticmethod
    async def get(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> DatabaseInfo:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("GET", db_path(db_id)))

    @staticmethod
    async def update(
        db_id: str,
        *,
        label: str | None = None,
        scale_to_zero_seconds: int | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> DatabaseInfo:
        body = drop_none({"label": label, "scale_to_zero_seconds": scale_to_zero_seconds})
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("PATCH", db_path(db_id), json=body))

    @staticmethod
    async def delete(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes the server, its data and its archive: the data is gone for good."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", db_path(db_id))

    @staticmethod
    async def rotate_password(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> DatabaseInfo:
        """A new password (in the answer's URLs); the old one stops working at once."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("POST", db_path(db_id, "/password")))

    @staticmethod
    async def restore(
        db_id: str,
        *,
        target_time: str | datetime | None = None,
        label: str | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> DatabaseInfo:
        """A new database from this one's archive, at ``target_time`` or at the last archived WAL."""
        body = drop_none({"target_time": iso_time(target_time), "label": label})
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("POST", db_path(db_id, "/restore"), json=body))

    @staticmethod
    async def branch(
        db_id: str, *, label: str | None = None, api_url: str | None = None, api_key: str | None = None
    ) -> DatabaseInfo:
        """A new database with this one's data as of now; the parent keeps running."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, await http.json("POST", db_path(db_id, "/branches"), json=drop_none({"label": label})))

    @staticmethod
    async def events(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> list[DatabaseEvent]:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[DatabaseEvent], (await http.json("GET", db_path(db_id, "/events")))["items"])

    @staticmethod
    async def logs(
        db_id: str, lines: int = 200, *, api_url: str | None = None, api_key: str | None = None
    ) -> list[str]:
        """The last ``lines`` lines of the PostgreSQL server log."""
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[str], (await http.json("GET", db_path(db_id, "/logs"), query={"lines": lines}))["lines"])

    @staticmethod
    async def ca_certificate(*, api_url: str | None = None, api_key: str | None = None) -> str:
        """The install's database CA (PEM), for ``sslmode=verify-full``."""
        async with AsyncHttp(api_url, api_key) as http:
            return (await http.request("GET", "/v1/databases/ca.pem")).text


class AsyncKeys:
    """Scoped API keys of your organisation. A new key's secret is in the create answer only."""

    @staticmethod
    async def create(
        name: str,
        scopes: Sequence[str],
        *,
        ttl_seconds: int | None = None,
        expires_at: str | None = None,
        sandbox_id: str | None = None,
        sandbox_labels: Mapping[str, str] | None = None,
        org_id: str | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> CreatedKey:
        """A key with these scopes, optionally expiring and restricted to one sandbox or to labels."""
        body = drop_none(
            {
                "name": name,
                "scopes": list(scopes),
                "ttl_seconds": ttl_seconds,
                "expires_at": expires_at,
                "sandbox_id": sandbox_id,
                "sandbox_labels": dict(sandbox_labels) if sandbox_labels is not None else None,
                "org_id": org_id,
            }
        )
        async with AsyncHttp(api_url, api_key) as http:
            return cast(CreatedKey, await http.json("POST", "/v1/keys", json=body))

    @staticmethod
    async def list(*, api_url: str | None = None, api_key: str | None = None) -> list[ApiKey]:
        async with AsyncHttp(api_url, api_key) as http:
            return cast(list[ApiKey], (await http.json("GET", "/v1/keys"))["items"])

    @staticmethod
    async def revoke(key_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Revokes a key: it stops working at once."""
        async with AsyncHttp(api_url, api_key) as http:
            await http.request("DELETE", f"/v1/keys/{seg(key_id)}")
