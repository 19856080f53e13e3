"""Lifecycle, snapshots and forks, preview URLs and the network policy (synchronous client)."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest

import warren
from conftest import COUNTER, wait_for

Make = Callable[..., warren.Sandbox]
Track = Callable[[warren.Sandbox], warren.Sandbox]


def counter(sandbox: warren.Sandbox) -> int:
    return int(sandbox.files.read("/tmp/count") or 0)


def test_pause_resume_hibernate_wake(make_sandbox: Make) -> None:
    sandbox = make_sandbox()
    sandbox.commands.run("python3", args=["-c", COUNTER], background=True)
    wait_for(lambda: sandbox.files.exists("/tmp/count"), "the counter to start")

    assert sandbox.pause()["state"] == "paused"
    assert sandbox.info["state"] == "paused"
    with pytest.raises(warren.ConflictError) as twice:
        sandbox.pause()
    assert twice.value.code == "INVALID_STATE"
    assert sandbox.resume()["state"] == "running"

    assert sandbox.hibernate()["state"] == "hibernated"
    with pytest.raises(warren.ConflictError) as resume:
        sandbox.resume()
    assert resume.value.code == "INVALID_STATE"
    assert sandbox.wake()["state"] == "running"
    # The background process went on across hibernate and wake.
    before = counter(sandbox)
    wait_for(lambda: counter(sandbox) > before, "the counter to go on after wake")

    # A call that needs the sandbox wakes it implicitly.
    sandbox.hibernate()
    assert sandbox.commands.run("echo back").stdout == "back\n"
    causes = [e["cause"] for e in sandbox.events()]
    assert any("implicit" in c for c in causes)
    states = [e["to_state"] for e in sandbox.events()]
    assert states[:2] == ["creating", "running"] and "hibernated" in states


def test_snapshot_fork_and_fork_tree(make_sandbox: Make, track: Track) -> None:
    parent = make_sandbox()
    parent.files.write("/root/state.txt", "parent file\n")
    parent.commands.run("python3", args=["-c", COUNTER], background=True)
    wait_for(lambda: parent.files.exists("/tmp/count"), "the counter to start")

    snap = parent.snapshot()
    assert snap["id"].startswith("snap_") and snap["sandbox_id"] == parent.id
    assert snap["id"] in [s["id"] for s in warren.Snapshots.list()]
    assert warren.Snapshots.get(snap["id"])["size_bytes"] > 0

    restored = track(warren.Sandbox.create(from_snapshot=snap["id"], metadata={"suite": "python-sdk"}))
    assert restored.info["snapshot_id"] == snap["id"] and restored.info["parent_id"] == parent.id
    assert restored.files.read("/root/state.txt") == "parent file\n"
    # Memory and processes came along: the counter goes on in the copy.
    start = counter(restored)
    wait_for(lambda: counter(restored) > start, "the counter in the restored copy")
    warren.Snapshots.delete(snap["id"])
    with pytest.raises(warren.NotFoundError):
        warren.Snapshots.get(snap["id"])
    second = parent.snapshot()
    warren.Sandbox.delete_snapshot(second["id"])
    assert second["id"] not in [s["id"] for s in warren.Snapshots.list()]

    child = track(parent.fork(metadata={"suite": "python-sdk", "kind": "disk"}, timeout=300))
    assert child.info["fork_kind"] == "disk" and child.info["parent_id"] == parent.id
    assert child.info["ttl_seconds"] == 300 and child.info["metadata"]["kind"] == "disk"
    assert child.files.read("/root/state.txt") == "parent file\n"
    assert not _counting(child)  # a disk fork runs none of the parent's processes

    tree = parent.fork_tree(2, metadata={"suite": "python-sdk"})
    for c in tree.children:
        track(c)
    assert len(tree.children) == 2 and tree.parent_pause_ms >= 0
    assert all(c.info["fork_kind"] == "memory" for c in tree.children)
    assert all(c.info["lineage"][-1] == parent.id for c in tree.children)
    ids = {c.commands.run("hostname").stdout.strip() for c in tree.children}
    assert len(ids) == 2  # each copy has its own identity
    # Closing one child's connections leaves the others working.
    tree.children[0].close()
    assert tree.children[1].commands.run("echo ok").stdout == "ok\n"


def _counting(sandbox: warren.Sandbox) -> bool:
    if not sandbox.files.exists("/tmp/count"):
        return False
    first = counter(sandbox)
    sandbox.commands.run("sleep 0.5")
    return counter(sandbox) != first


def _preview_get(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """GET a preview URL through the API's loopback address, naming the preview host in Host."""
    parts = urlsplit(url)
    port = parts.port or 80
    host = {"host": parts.netloc}
    return httpx.get(f"http://127.0.0.1:{port}{parts.path or '/'}", headers={**host, **(headers or {})})


def test_preview_urls_tokens_and_rotation(make_sandbox: Make) -> None:
    server = "python3 -m http.server 3000 --bind 127.0.0.1 --directory /root"
    sandbox = make_sandbox(preview_auth=True)
    token = sandbox.preview_token
    assert token and token.startswith("wpt_")
    sandbox.files.write("/root/index.html", "hello preview\n")
    sandbox.commands.run(server, background=True)
    url = sandbox.get_preview_url(3000)
    assert url.startswith(f"http://3000-{sandbox.id}.")

    def served() -> bool:
        return _preview_get(url, {"x-warren-preview-token": token or ""}).status_code == 200

    wait_for(served, "the preview server")
    ok = _preview_get(url, {"x-warren-preview-token": token})
    assert ok.text == "hello preview\n"
    denied = _preview_get(url)
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "PREVIEW_AUTH_REQUIRED"

    new = sandbox.rotate_preview_token()
    assert new != token and sandbox.preview_token == new
    assert _preview_get(url, {"x-warren-preview-token": token}).status_code == 401
    assert _preview_get(url, {"x-warren-preview-token": new}).status_code == 200

    # Rotation needs preview_auth.
    open_sandbox = make_sandbox()
    assert open_sandbox.preview_token is None
    with pytest.raises(warren.ConflictError) as info:
        open_sandbox.rotate_preview_token()
    assert info.value.code == "INVALID_STATE"


PROBE = """
import json, sys, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=20)
    print(json.dumps({"status": r.status}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code}))
"""


def test_network_policy_and_egress_log(make_sandbox: Make) -> None:
    sandbox = make_sandbox(network={"mode": "restricted", "allow": ["allowed.test:80"]})
    view = sandbox.network.get()
    assert view == {"mode": "restricted", "allow": ["allowed.test:80"], "deny": [], "secrets": []}

    # A name the policy does not allow is refused by the host-side proxy (nothing leaves the host).
    r = sandbox.commands.run("python3", args=["-c", PROBE, "http://denied.test/"], timeout=60)
    assert json.loads(r.stdout)["status"] == 403, r.stderr
    log = sandbox.network.log(decision="denied")
    assert log and log[0]["host"] == "denied.test" and log[0]["decision"] == "denied"
    assert all(e["decision"] == "denied" for e in log)
    assert sandbox.network.log(limit=1)[0]["id"] == log[0]["id"]
    assert sandbox.network.log(before=log[0]["id"]) == [e for e in sandbox.network.log() if e["id"] < log[0]["id"]]

    updated = sandbox.network.set(
        "open",
        deny=["denied.test"],
        secrets=[{"host": "api.example.test", "header": "Authorization", "value": "Bearer s3cret"}],
    )
    assert updated["mode"] == "open" and updated["deny"] == ["denied.test"]
    assert updated["secrets"] == [{"host": "api.example.test", "header": "Authorization"}]
    assert "s3cret" not in json.dumps(sandbox.network.get())
    with pytest.raises(warren.InvalidRequestError) as bad:
        sandbox.network.set("restricted", allow=["not a rule at all::"])
    assert bad.value.code == "INVALID_NETWORK_POLICY"
