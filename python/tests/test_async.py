"""The asyncio client, against the same platform (run with asyncio.run: pytest alone, no plugin)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

import warren
from conftest import SUITE, kill_quietly, running_cmdlines, sha256_file, wait_for

T = TypeVar("T")


def run(main: Callable[[list[str]], Coroutine[Any, Any, T]]) -> T:
    """Runs main(made) in a fresh event loop; sandboxes whose ids it adds to made are killed after."""
    made: list[str] = []
    try:
        return asyncio.run(main(made))
    finally:
        for sandbox_id in made:
            kill_quietly(sandbox_id)


def test_async_sandbox_commands_and_handles() -> None:
    async def main(made: list[str]) -> None:
        async with warren.AsyncSandbox.create(metadata=SUITE, envs={"A": "1"}, memory_mb=256) as sbx:
            made.append(sbx.id)
            assert sbx.info["state"] == "running"
            r = await sbx.commands.run("echo $A; echo err >&2; exit 2")
            assert (r.exit_code, r.stdout, r.stderr) == (2, "1\n", "err\n")
            assert (await sbx.commands.run("pwd", cwd="/tmp")).stdout == "/tmp\n"
            assert (await sbx.commands.run("echo", args=["$A"], envs={"A": "2"})).stdout == "$A\n"

            # Streaming to a coroutine handler, awaited in order.
            seen: list[str] = []

            async def on_stdout(data: str) -> None:
                await asyncio.sleep(0)
                seen.append(data)

            streamed = await sbx.commands.run("for i in 1 2 3; do echo $i; sleep 0.2; done", on_stdout=on_stdout)
            assert "".join(seen) == "1\n2\n3\n" == streamed.stdout

            # Background: stdin, live output, wait, reattach, kill.
            out: list[str] = []
            h = await sbx.commands.run("cat", args=[], background=True, on_stdout=out.append)
            await h.send_stdin("ping\n")
            for _ in range(100):
                if "".join(out) == "ping\n":
                    break
                await asyncio.sleep(0.1)
            assert "".join(out) == "ping\n"
            await h.close_stdin()
            assert (await h.wait()).stdout == "ping\n"
            assert (await (await sbx.commands.connect(h.pid)).wait()).exit_code == 0
            assert (await h.info())["state"] == "exited"

            sleeper = await sbx.commands.run("sleep 600", background=True)
            assert sleeper.pid in [p["pid"] for p in await sbx.commands.list()]
            await sbx.commands.send_stdin(sleeper.pid, "ignored\n")
            await sleeper.kill("SIGKILL")
            assert (await sleeper.wait()).signal == "SIGKILL"
            other = await sbx.commands.run("sleep 600", background=True)
            await sbx.commands.kill(other.pid)
            assert (await other.output()).exit_code == 143

            # Wire-level processes.
            info = await sbx.processes.start(warren.to_exec_request("echo wire"))
            async with sbx.processes.output(info["pid"]) as events:
                kinds = [e["type"] async for e in events]
            assert kinds[-1] == "exit" and "stdout" in kinds
            assert (await sbx.processes.get(info["pid"]))["exit_code"] == 0
            assert info["pid"] in [p["pid"] for p in await sbx.processes.list()]
            # No shell: `sh -c` catches a SIGINT that comes before it forks its command and
            # then waits for that command (which never got it) to end.
            bg = await sbx.processes.start(warren.to_exec_request("sleep", args=["600"]))
            await sbx.processes.signal(bg["pid"], "SIGINT")
            async with sbx.processes.output(bg["pid"]) as events:
                last = [e async for e in events][-1]
            assert last["type"] == "exit" and last["signal"] == "SIGINT"
            with pytest.raises(warren.ConflictError) as done:
                await sbx.processes.send_stdin(info["pid"], "x", eof=True)
            assert done.value.code == "PROCESS_NOT_RUNNING"
            with pytest.raises(warren.InvalidRequestError) as cwd:
                await sbx.commands.run("true", cwd="/nope")
            assert cwd.value.code == "CWD_NOT_FOUND"
        # The block killed the sandbox.
        assert (await warren.AsyncSandbox.connect(sbx.id)).info["state"] == "stopped"

    run(main)


def test_async_cancellation_closes_the_exec_stream(sbx: warren.Sandbox) -> None:
    async def main(_: list[str]) -> None:
        other = await warren.AsyncSandbox.connect(sbx.id)
        started = asyncio.Event()
        task = asyncio.create_task(
            other.commands.run("echo go; exec sleep 4343", on_stdout=lambda _: started.set())
        )
        await asyncio.wait_for(started.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await other.close()

    run(main)
    wait_for(lambda: "sleep 4343" not in running_cmdlines(sbx), "the cancelled command to die")


def test_async_files_20mb_and_errors(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(20 * 1024 * 1024))
    digest = sha256_file(src)

    async def main(made: list[str]) -> None:
        sbx = await warren.AsyncSandbox.create(metadata=SUITE, memory_mb=256)
        made.append(sbx.id)
        f = sbx.files
        assert (await f.write("/root/a/t.txt", "text\n"))["size"] == 5
        assert await f.read("/root/a/t.txt") == "text\n"
        assert await f.read("/root/a/t.txt", format="bytes") == b"text\n"

        async def gen():  # an async iterable is streamed
            for i in range(3):
                yield bytes([65 + i]) * 10

        await f.write("/root/a/g.txt", gen(), mode=0o600)
        assert await f.read_bytes("/root/a/g.txt") == b"A" * 10 + b"B" * 10 + b"C" * 10
        assert (await f.stat("/root/a/g.txt"))["mode"] == "600"
        assert [e["name"] for e in await f.list("/root/a")] == ["g.txt", "t.txt"]
        assert (await f.mkdir("/root/a/d"))["type"] == "dir"
        assert (await f.rename("/root/a/t.txt", "/root/a/d/t.txt"))["path"] == "/root/a/d/t.txt"
        assert await f.exists("/root/a/d/t.txt") and not await f.exists("/root/a/t.txt")
        with pytest.raises(warren.ConflictError):
            await f.remove("/root/a")
        await f.remove("/root/a", recursive=True)
        with pytest.raises(warren.NotFoundError) as nf:
            await f.read("/root/a/g.txt")
        assert nf.value.code == "FILE_NOT_FOUND"

        assert (await f.upload(src, "/root/big.bin"))["size"] == src.stat().st_size
        dst = tmp_path / "copy.bin"
        assert (await f.download("/root/big.bin", dst))["size"] == src.stat().st_size
        assert sha256_file(dst) == digest
        h = hashlib.sha256()
        stream = await f.read("/root/big.bin", format="stream")
        async with stream:
            async for chunk in stream:
                h.update(chunk)
        assert h.hexdigest() == digest
        await sbx.kill()
        await sbx.close()

    run(main)


def test_async_lifecycle_network_preview_and_resources() -> None:
    async def main(made: list[str]) -> None:
        sbx = await warren.AsyncSandbox.create(metadata=SUITE, memory_mb=256, preview_auth=True, timeout=600)
        made.append(sbx.id)
        assert sbx.preview_token and sbx.get_preview_url(8000).startswith("http://8000-sbx_")
        assert await sbx.rotate_preview_token() == sbx.preview_token
        assert (await sbx.set_timeout(700))["ttl_seconds"] == 700
        assert (await sbx.set_metadata({**SUITE, "x": "y"}))["metadata"]["x"] == "y"
        assert (await sbx.set_persistence(persistent=False))["persistent"] is False
        assert (await sbx.pause())["state"] == "paused"
        assert (await sbx.resume())["state"] == "running"
        assert (await sbx.hibernate())["state"] == "hibernated"
        assert (await sbx.wake())["state"] == "running"
        assert [e["to_state"] for e in await sbx.events()][-1] == "running"
        assert (await sbx.get_info())["state"] == "running"

        view = await sbx.network.set("restricted", allow=["pypi.org:443"])
        assert view["allow"] == ["pypi.org:443"] and (await sbx.network.get())["mode"] == "restricted"
        assert await sbx.network.log() == []

        await sbx.files.write("/root/s.txt", "snap\n")
        snap = await sbx.snapshot()
        assert snap["id"] in [s["id"] for s in await warren.AsyncSnapshots.list()]
        assert (await warren.AsyncSnapshots.get(snap["id"]))["sandbox_id"] == sbx.id
        copy = await warren.AsyncSandbox.create(from_snapshot=snap["id"], metadata=SUITE)
        made.append(copy.id)
        assert await copy.files.read("/root/s.txt") == "snap\n"
        await warren.AsyncSnapshots.delete(snap["id"])
        other = await sbx.snapshot()
        await warren.AsyncSandbox.delete_snapshot(other["id"])
        fork = await sbx.fork(metadata=SUITE)
        made.append(fork.id)
        assert fork.info["fork_kind"] == "disk" and await fork.files.read("/root/s.txt") == "snap\n"
        tree = await sbx.fork_tree(1, metadata=SUITE)
        made.extend(c.id for c in tree.children)
        assert (await tree.children[0].commands.run("cat /root/s.txt")).stdout == "snap\n"

        ids = {s["id"] for s in await warren.AsyncSandbox.list(metadata=SUITE)}
        assert {sbx.id, copy.id, fork.id} <= ids
        page = await warren.AsyncSandbox.list_page(metadata=SUITE, limit=1)
        assert len(page.items) == 1 and page.next_cursor
        assert await warren.AsyncSandbox.kill(copy.id) is True
        assert await fork.kill() is True
        for s in (sbx, copy, fork, *tree.children):
            await s.close()

        assert (await warren.async_get_health())["status"] == "ok"
        assert "base" in [t["name"] for t in await warren.AsyncTemplates.list()]
        assert (await warren.AsyncTemplates.get("base"))["name"] == "base"
        with pytest.raises(warren.NotFoundError):
            await warren.AsyncTemplates.delete("no-such-template")
        with pytest.raises(warren.TemplateBuildError) as failed:
            await warren.AsyncTemplates.build("py-async-fail", base="base", steps=[{"run": "exit 1"}])
        assert failed.value.details == {"step": 1}
        with pytest.raises(warren.InvalidRequestError):
            await warren.AsyncTemplates.upload_image("py-async-img", b"not an image")
        with pytest.raises(warren.NotFoundError):
            await warren.AsyncTemplates.rebuild("no-such-template")

        name = f"py-async-{os.getpid()}"
        vol = await warren.AsyncVolumes.create(name, 8)
        try:
            assert (await warren.AsyncVolumes.get(name))["id"] == vol["id"]
            assert name in [v["name"] for v in await warren.AsyncVolumes.list()]
        finally:
            await warren.AsyncVolumes.delete(name)
        with pytest.raises(warren.NotFoundError):
            await warren.AsyncVolumes.get(name)

    run(main)
