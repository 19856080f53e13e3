"""Scoped API keys through ``Keys`` and ``AsyncKeys``: create, list, use, revoke."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import pytest

import warren


@pytest.fixture
def revoke_after() -> Iterator[Callable[[str], str]]:
    """Revokes, at teardown, every key id given (those a test revoked itself are skipped)."""
    made: list[str] = []

    def add(key_id: str) -> str:
        made.append(key_id)
        return key_id

    try:
        yield add
    finally:
        for key_id in made:
            try:
                warren.Keys.revoke(key_id)
            except warren.NotFoundError:
                pass


def test_keys_create_list_use_revoke(api: tuple[str, str], revoke_after: Callable[[str], str]) -> None:
    url, _ = api
    label = {"py-keys": uuid.uuid4().hex[:8]}
    before = datetime.now(timezone.utc)
    key = warren.Keys.create("py-reader", ["sandboxes:read", "keys"], ttl_seconds=600)
    revoke_after(key["id"])
    secret = key["key"]
    assert secret.startswith("wrn_") and len(secret) == 44
    assert key["name"] == "py-reader" and key["org_id"] == "org_default"
    assert key["prefix"] == secret[:12]
    assert key["scopes"] == ["sandboxes:read", "keys"]
    assert key["sandbox_id"] is None and key["sandbox_labels"] is None
    assert key["expires_at"] is not None
    expires = datetime.fromisoformat(key["expires_at"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=590) <= expires <= datetime.now(timezone.utc) + timedelta(seconds=610)

    # Listed with its prefix, never its secret.
    listed = [k for k in warren.Keys.list() if k["id"] == key["id"]]
    assert len(listed) == 1
    assert listed[0]["prefix"] == secret[:12] and "key" not in listed[0]
    assert secret[12:] not in repr(listed[0])

    # The key works for what its scopes allow, and only that.
    assert warren.Sandbox.list(metadata=label, api_url=url, api_key=secret) == []
    assert [k["id"] for k in warren.Keys.list(api_url=url, api_key=secret)] == [key["id"]]
    with pytest.raises(warren.PermissionDeniedError) as missing:
        warren.Volumes.list(api_url=url, api_key=secret)
    assert missing.value.code == "MISSING_SCOPE" and missing.value.status == 403
    with pytest.raises(warren.PermissionDeniedError) as wider:
        warren.Keys.create("wider", ["exec"], api_url=url, api_key=secret)
    assert wider.value.code == "MISSING_SCOPE"

    warren.Keys.revoke(key["id"])
    with pytest.raises(warren.AuthError) as revoked:
        warren.Sandbox.list(metadata=label, api_url=url, api_key=secret)
    assert revoked.value.code == "UNAUTHORIZED" and revoked.value.status == 401
    assert key["id"] not in [k["id"] for k in warren.Keys.list()]
    with pytest.raises(warren.NotFoundError) as gone:
        warren.Keys.revoke(key["id"])
    assert gone.value.code == "KEY_NOT_FOUND"


def test_async_keys_create_list_revoke(api: tuple[str, str], revoke_after: Callable[[str], str]) -> None:
    url, _ = api
    label = {"py-keys": uuid.uuid4().hex[:8]}

    async def main() -> None:
        key = await warren.AsyncKeys.create("py-async", ["sandboxes:read"], sandbox_labels=label)
        revoke_after(key["id"])
        assert key["scopes"] == ["sandboxes:read"] and key["sandbox_labels"] == label
        assert key["expires_at"] is None
        listed = [k for k in await warren.AsyncKeys.list() if k["id"] == key["id"]]
        assert len(listed) == 1 and listed[0]["sandbox_labels"] == label and "key" not in listed[0]
        assert await warren.AsyncSandbox.list(api_url=url, api_key=key["key"]) == []
        with pytest.raises(warren.PermissionDeniedError) as missing:
            await warren.AsyncKeys.list(api_url=url, api_key=key["key"])
        assert missing.value.code == "MISSING_SCOPE"
        await warren.AsyncKeys.revoke(key["id"])
        with pytest.raises(warren.AuthError) as revoked:
            await warren.AsyncSandbox.list(api_url=url, api_key=key["key"])
        assert revoked.value.code == "UNAUTHORIZED"
        assert key["id"] not in [k["id"] for k in await warren.AsyncKeys.list()]

    asyncio.run(main())
