"""Platform-wide resources of the synchronous client: volumes, snapshots,
templates, databases and the health check. Each call takes ``api_url`` and
``api_key`` (found as for ``Sandbox.create`` when not given)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO, cast

import httpx

from .._http import SyncHttp
from .._templates import BuildLogHandler, build_body, image_query, read_build
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
from .._util import drop_none, file_chunks, seg


def get_health(*, api_url: str | None = None, api_key: str | None = None) -> Health:
    """Is the platform up, and with what capacity (needs no token)."""
    with SyncHttp(api_url, api_key) as http:
        return cast(Health, http.json("GET", "/v1/health"))


class Volumes:
    """Named persistent volumes; attach them with ``Sandbox.create(volumes=[...])``."""

    @staticmethod
    def create(name: str, size_mb: int, *, api_url: str | None = None, api_key: str | None = None) -> Volume:
        """Creates a volume of ``size_mb`` MiB (its size limit)."""
        with SyncHttp(api_url, api_key) as http:
            return cast(Volume, http.json("POST", "/v1/volumes", json={"name": name, "size_mb": size_mb}))

    @staticmethod
    def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Volume]:
        with SyncHttp(api_url, api_key) as http:
            return cast(list[Volume], http.json("GET", "/v1/volumes")["items"])

    @staticmethod
    def get(name: str, *, api_url: str | None = None, api_key: str | None = None) -> Volume:
        """A volume by name (or id)."""
        with SyncHttp(api_url, api_key) as http:
            return cast(Volume, http.json("GET", f"/v1/volumes/{seg(name)}"))

    @staticmethod
    def delete(name: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes a volume and its data; ``ConflictError`` VOLUME_IN_USE while a sandbox holds it."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", f"/v1/volumes/{seg(name)}")


class Snapshots:
    """Snapshots made with ``sandbox.snapshot()``; start from one with ``Sandbox.create(from_snapshot=...)``."""

    @staticmethod
    def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Snapshot]:
        """Newest first."""
        with SyncHttp(api_url, api_key) as http:
            return cast(list[Snapshot], http.json("GET", "/v1/snapshots")["items"])

    @staticmethod
    def get(snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None) -> Snapshot:
        with SyncHttp(api_url, api_key) as http:
            return cast(Snapshot, http.json("GET", f"/v1/snapshots/{seg(snapshot_id)}"))

    @staticmethod
    def delete(snapshot_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Frees its storage; sandboxes started from it are unaffected."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", f"/v1/snapshots/{seg(snapshot_id)}")


def _follow(http: SyncHttp, resp: httpx.Response, on_log: BuildLogHandler | None) -> Template:
    try:
        return read_build(http.ndjson(resp, "reading a build log"), on_log)
    finally:
        resp.close()


class Templates:
    """The images sandboxes start from. Builds stream their log to ``on_log(line, step)``."""

    @staticmethod
    def list(*, api_url: str | None = None, api_key: str | None = None) -> list[Template]:
        with SyncHttp(api_url, api_key) as http:
            return cast(list[Template], http.json("GET", "/v1/templates")["items"])

    @staticmethod
    def get(name: str, *, api_url: str | None = None, api_key: str | None = None) -> Template:
        with SyncHttp(api_url, api_key) as http:
            return cast(Template, http.json("GET", f"/v1/templates/{seg(name)}"))

    @staticmethod
    def build(
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
        with SyncHttp(api_url, api_key) as http:
            return _follow(http, http.stream("POST", "/v1/templates", json=body), on_log)

    @staticmethod
    def upload_image(
        name: str,
        image: bytes | IO[bytes] | Iterable[bytes],
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
        content: bytes | Iterable[bytes]
        if isinstance(image, bytes):
            content = image
        elif hasattr(image, "read"):
            content = file_chunks(cast(IO[bytes], image))
        else:
            content = cast(Iterable[bytes], image)
        with SyncHttp(api_url, api_key) as http:
            resp = http.stream("POST", f"/v1/templates/{seg(name)}/image", query=query, content=content)
            return _follow(http, resp, on_log)

    @staticmethod
    def rebuild(
        name: str,
        *,
        on_log: BuildLogHandler | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> Template:
        """Builds a template again."""
        with SyncHttp(api_url, api_key) as http:
            return _follow(http, http.stream("POST", f"/v1/templates/{seg(name)}/rebuild"), on_log)

    @staticmethod
    def delete(name: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes a template; ``ConflictError`` TEMPLATE_IN_USE while sandboxes or snapshots depend on it."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", f"/v1/templates/{seg(name)}")


def db_path(db_id: str, rest: str = "") -> str:
    return f"/v1/databases/{seg(db_id)}{rest}"


def iso_time(t: str | datetime | None) -> str | None:
    return t.isoformat() if isinstance(t, datetime) else t


class Database:
    """Managed PostgreSQL. ``create`` answers once the database takes queries."""

    @staticmethod
    def create(
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
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("POST", "/v1/databases", json=body))

    @staticmethod
    def list(*, api_url: str | None = None, api_key: str | None = None) -> list[DatabaseInfo]:
        """Newest first."""
        with SyncHttp(api_url, api_key) as http:
            return cast(list[DatabaseInfo], http.json("GET", "/v1/databases")["items"])

    @staticmethod
    def get(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> DatabaseInfo:
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("GET", db_path(db_id)))

    @staticmethod
    def update(
        db_id: str,
        *,
        label: str | None = None,
        scale_to_zero_seconds: int | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> DatabaseInfo:
        body = drop_none({"label": label, "scale_to_zero_seconds": scale_to_zero_seconds})
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("PATCH", db_path(db_id), json=body))

    @staticmethod
    def delete(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Deletes the server, its data and its archive: the data is gone for good."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", db_path(db_id))

    @staticmethod
    def rotate_password(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> DatabaseInfo:
        """A new password (in the answer's URLs); the old one stops working at once."""
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("POST", db_path(db_id, "/password")))

    @staticmethod
    def restore(
        db_id: str,
        *,
        target_time: str | datetime | None = None,
        label: str | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
    ) -> DatabaseInfo:
        """A new database from this one's archive, at ``target_time`` or at the last archived WAL."""
        body = drop_none({"target_time": iso_time(target_time), "label": label})
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("POST", db_path(db_id, "/restore"), json=body))

    @staticmethod
    def branch(
        db_id: str, *, label: str | None = None, api_url: str | None = None, api_key: str | None = None
    ) -> DatabaseInfo:
        """A new database with this one's data as of now; the parent keeps running."""
        with SyncHttp(api_url, api_key) as http:
            return cast(DatabaseInfo, http.json("POST", db_path(db_id, "/branches"), json=drop_none({"label": label})))

    @staticmethod
    def events(db_id: str, *, api_url: str | None = None, api_key: str | None = None) -> list[DatabaseEvent]:
        with SyncHttp(api_url, api_key) as http:
            return cast(list[DatabaseEvent], http.json("GET", db_path(db_id, "/events"))["items"])

    @staticmethod
    def logs(
        db_id: str, lines: int = 200, *, api_url: str | None = None, api_key: str | None = None
    ) -> list[str]:
        """The last ``lines`` lines of the PostgreSQL server log."""
        with SyncHttp(api_url, api_key) as http:
            return cast(list[str], http.json("GET", db_path(db_id, "/logs"), query={"lines": lines})["lines"])

    @staticmethod
    def ca_certificate(*, api_url: str | None = None, api_key: str | None = None) -> str:
        """The install's database CA (PEM), for ``sslmode=verify-full``."""
        with SyncHttp(api_url, api_key) as http:
            return http.request("GET", "/v1/databases/ca.pem").text


class Keys:
    """Scoped API keys of your organisation. A new key's secret is in the create answer only."""

    @staticmethod
    def create(
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
        with SyncHttp(api_url, api_key) as http:
            return cast(CreatedKey, http.json("POST", "/v1/keys", json=body))

    @staticmethod
    def list(*, api_url: str | None = None, api_key: str | None = None) -> list[ApiKey]:
        with SyncHttp(api_url, api_key) as http:
            return cast(list[ApiKey], (http.json("GET", "/v1/keys"))["items"])

    @staticmethod
    def revoke(key_id: str, *, api_url: str | None = None, api_key: str | None = None) -> None:
        """Revokes a key: it stops working at once."""
        with SyncHttp(api_url, api_key) as http:
            http.request("DELETE", f"/v1/keys/{seg(key_id)}")
