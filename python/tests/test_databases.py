"""Managed PostgreSQL through both clients: one database and one branch, checked with psql."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

import warren


def psql(url: str, sql: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "30"}
    return subprocess.run(
        ["psql", f"{url}?sslmode=require", "-X", "-At", "-c", sql],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


@pytest.fixture(scope="module")
def db() -> Iterator[warren.DatabaseInfo]:
    info = warren.Database.create("py-sdk-db", metadata={"suite": "python-sdk"}, archive_timeout_seconds=30)
    try:
        yield info
    finally:
        try:
            warren.Database.delete(info["id"])
        except warren.NotFoundError:
            pass


def test_database_calls(db: warren.DatabaseInfo) -> None:
    assert db["state"] == "ready" and db["version"] == "17" and db["id"].startswith("db_")
    assert db["metadata"] == {"suite": "python-sdk"} and db["archive_timeout_seconds"] == 30
    r = psql(db["connection_url"], "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept'); SELECT 1")
    assert r.returncode == 0 and r.stdout.strip().endswith("1"), r.stderr

    assert warren.Database.get(db["id"])["connection_url"] == db["connection_url"]
    assert db["id"] in [d["id"] for d in warren.Database.list()]
    updated = warren.Database.update(db["id"], label="py-sdk-renamed", scale_to_zero_seconds=0)
    assert updated["label"] == "py-sdk-renamed"
    assert "created" in [e["kind"] for e in warren.Database.events(db["id"])]
    logs = warren.Database.logs(db["id"], lines=20)
    assert isinstance(logs, list) and len(logs) <= 20
    assert "BEGIN CERTIFICATE" in warren.Database.ca_certificate(api_key="")  # needs no token

    rotated = warren.Database.rotate_password(db["id"])
    assert rotated["password"] != db["password"]
    assert psql(rotated["connection_url"], "SELECT v FROM t").stdout.strip() == "kept"
    assert psql(db["connection_url"], "SELECT 1").returncode != 0  # the old password is refused

    future = datetime.now(timezone.utc) + timedelta(days=1)
    with pytest.raises(warren.InvalidRequestError) as bad_time:
        warren.Database.restore(db["id"], target_time=future)
    assert bad_time.value.code == "INVALID_RESTORE_TARGET"
    with pytest.raises(warren.NotFoundError) as missing:
        warren.Database.branch("db_doesnotexist0000")
    assert missing.value.code == "DATABASE_NOT_FOUND"
    with pytest.raises(warren.InvalidRequestError) as bad:
        warren.Database.create("py-sdk-big", memory_mb=1 << 16)
    assert bad.value.code in ("RESOURCES_OUT_OF_RANGE", "INVALID_REQUEST")


def test_async_database_calls_and_branch(db: warren.DatabaseInfo) -> None:
    async def main() -> None:
        assert (await warren.AsyncDatabase.get(db["id"]))["id"] == db["id"]
        assert db["id"] in [d["id"] for d in await warren.AsyncDatabase.list()]
        assert (await warren.AsyncDatabase.update(db["id"], label="py-sdk-async"))["label"] == "py-sdk-async"
        assert await warren.AsyncDatabase.events(db["id"])
        assert isinstance(await warren.AsyncDatabase.logs(db["id"], 5), list)
        assert "BEGIN CERTIFICATE" in await warren.AsyncDatabase.ca_certificate()
        current = await warren.AsyncDatabase.rotate_password(db["id"])
        with pytest.raises(warren.InvalidRequestError) as bad_time:
            await warren.AsyncDatabase.restore(db["id"], target_time="2000-01-01T00:00:00Z")
        assert bad_time.value.code == "INVALID_RESTORE_TARGET"

        branch = await warren.AsyncDatabase.branch(db["id"], label="py-sdk-branch")
        try:
            assert branch["parent_id"] == db["id"] and branch["password"] != current["password"]
            # The branch has the parent's data as of now; its writes stay its own.
            assert psql(branch["connection_url"], "SELECT v FROM t").stdout.strip() == "kept"
            assert psql(branch["connection_url"], "INSERT INTO t VALUES ('branch only')").returncode == 0
            assert psql(current["connection_url"], "SELECT count(*) FROM t").stdout.strip() == "1"
        finally:
            await warren.AsyncDatabase.delete(branch["id"])
        with pytest.raises(warren.NotFoundError) as gone:
            await warren.AsyncDatabase.get(branch["id"])
        assert gone.value.code == "DATABASE_NOT_FOUND"

    asyncio.run(main())
    warren.Database.delete(db["id"])
    with pytest.raises(warren.NotFoundError):
        warren.Database.get(db["id"])
