"""The synchronous client: sandboxes, commands, background processes, processes."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import warren
from conftest import SUITE, running_cmdlines, wait_for


def test_create_connect_list_update_kill(
    sbx: warren.Sandbox, make_sandbox: Callable[..., warren.Sandbox]
) -> None:
    sandbox = make_sandbox(template="base", timeout=600, metadata={"suite": "python-sdk", "t": "life"})
    assert sandbox.id.startswith("sbx_") and sandbox.sandbox_id == sandbox.id
    assert sandbox.info["state"] == "running"
    assert sandbox.info["ttl_seconds"] == 600

    other = warren.Sandbox.connect(sandbox.id)
    try:
        assert other.info["id"] == sandbox.id
        assert other.commands.run("echo connected").stdout == "connected\n"
    finally:
        other.close()

    listed = warren.Sandbox.list(metadata={"t": "life"})
    assert [s["id"] for s in listed] == [sandbox.id]
    page = warren.Sandbox.list_page(metadata={"suite": "python-sdk"}, limit=1)
    assert len(page.items) == 1
    assert page.next_cursor is not None  # the shared sandbox matches too
    rest = warren.Sandbox.list_page(metadata={"suite": "python-sdk"}, limit=500, cursor=page.next_cursor)
    assert page.items[0]["id"] not in [s["id"] for s in rest.items]

    assert sandbox.set_timeout(900)["ttl_seconds"] == 900
    assert sandbox.set_metadata({"suite": "python-sdk", "t": "changed"})["metadata"]["t"] == "changed"
    assert sandbox.get_info()["metadata"] == {"suite": "python-sdk", "t": "changed"}
    persistent = sandbox.set_persistence(persistent=True, idle_timeout=120)
    assert persistent["persistent"] and persistent["idle_timeout_seconds"] == 120

    assert sandbox.kill() is True
    assert sandbox.kill() is False  # already stopped
    assert sandbox.get_info()["state"] == "stopped"
    assert sandbox.get_info()["stop_reason"] == "deleted"
    assert [e["to_state"] for e in sandbox.events()][-1] == "stopped"
    with pytest.raises(warren.ConflictError) as info:
        sandbox.commands.run("true")
    assert info.value.code == "SANDBOX_NOT_RUNNING"


def test_context_manager_kills_and_kill_by_id() -> None:
    with warren.Sandbox.create(metadata=SUITE, memory_mb=256) as sandbox:
        assert sandbox.commands.run("echo $((6 * 7))").stdout == "42\n"
    assert warren.Sandbox.connect(sandbox.id).info["state"] == "stopped"

    # The block is left by an exception: the sandbox is killed all the same.
    ids: list[str] = []
    with pytest.raises(RuntimeError):
        with warren.Sandbox.create(metadata=SUITE, memory_mb=256) as failing:
            ids.append(failing.id)
            raise RuntimeError("test failure")
    assert warren.Sandbox.connect(ids[0]).info["state"] == "stopped"

    other = warren.Sandbox.create(metadata=SUITE, memory_mb=256)
    other.close()
    assert warren.Sandbox.kill(other.id) is True
    with pytest.raises(warren.NotFoundError):
        warren.Sandbox.kill("sbx_doesnotexist0000")


def test_run_shell_line_args_env_cwd_user_stdin(sbx: warren.Sandbox) -> None:
    r = sbx.commands.run("echo one; echo two >&2; exit 3")
    assert (r.exit_code, r.stdout, r.stderr) == (3, "one\n", "two\n")
    assert r.pid > 0 and r.signal is None and not r.timed_out and r.duration_ms >= 0
    # A plain string runs through /bin/sh -c; with args the program runs directly.
    assert sbx.commands.run("ls / | grep -c '^etc$'").stdout == "1\n"
    assert sbx.commands.run("echo", args=["$HOME", "a b"]).stdout == "$HOME a b\n"
    # Sandbox-wide envs, overridden per command.
    assert sbx.commands.run("echo $GREETING").stdout == "hi\n"
    assert sbx.commands.run("echo $GREETING $X", envs={"GREETING": "yo", "X": "1"}).stdout == "yo 1\n"
    assert sbx.commands.run("pwd", cwd="/tmp").stdout == "/tmp\n"
    assert sbx.commands.run("id -u", user="nobody").stdout.strip() != "0"
    assert sbx.commands.run("cat", args=[], stdin="fed\n").stdout == "fed\n"
    assert sbx.commands.run("no-such-program-here").exit_code == 127

    slow = sbx.commands.run("sleep 30", timeout=1)
    assert slow.timed_out and slow.exit_code == 137

    with pytest.raises(warren.InvalidRequestError) as cwd:
        sbx.commands.run("true", cwd="/no/such/dir")
    assert cwd.value.code == "CWD_NOT_FOUND"
    with pytest.raises(warren.InvalidRequestError) as user:
        sbx.commands.run("true", user="no-such-user")
    assert user.value.code == "USER_NOT_FOUND"


def test_streaming_output_to_callbacks(sbx: warren.Sandbox) -> None:
    seen: list[tuple[str, float]] = []
    errs: list[str] = []
    start = time.monotonic()
    r = sbx.commands.run(
        "for i in 1 2 3; do echo line $i; sleep 0.4; done; echo bad >&2",
        on_stdout=lambda d: seen.append((d, time.monotonic() - start)),
        on_stderr=errs.append,
    )
    assert r.exit_code == 0
    assert "".join(d for d, _ in seen) == "line 1\nline 2\nline 3\n" == r.stdout
    assert "".join(errs) == "bad\n" == r.stderr
    # Output arrived while the command ran, not all at the end.
    assert seen[0][1] < seen[-1][1] - 0.5
    # Large output streams whole.
    big = sbx.commands.run("seq 1 200000", on_stdout=lambda _: None)
    assert big.stdout.count("\n") == 200000 and big.stdout.endswith("200000\n")


def test_keyboard_interrupt_closes_the_stream_and_kills_the_command(sbx: warren.Sandbox) -> None:
    def interrupt(data: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sbx.commands.run("echo started; exec sleep 4242", on_stdout=interrupt)
    # The connection closed, so the platform killed the command's process group.
    wait_for(lambda: "sleep 4242" not in running_cmdlines(sbx), "the interrupted command to die")
    # The client still works after the interrupt.
    assert sbx.commands.run("echo still").stdout == "still\n"


def test_background_handles(sbx: warren.Sandbox) -> None:
    chunks: list[str] = []
    handle = sbx.commands.run(
        "while read line; do echo got $line; done; echo done",
        background=True,
        on_stdout=chunks.append,
    )
    assert handle.pid > 0
    handle.send_stdin("a\n")
    wait_for(lambda: "got a\n" in "".join(chunks), "output of the first stdin line")  # live, before wait()
    sbx.commands.send_stdin(handle.pid, "b\n")
    handle.close_stdin()
    result = handle.wait()
    assert result.exit_code == 0
    assert result.stdout == "got a\ngot b\ndone\n" == "".join(chunks)
    assert handle.info()["state"] == "exited"

    # Reattach: the buffered output is replayed from the start.
    again: list[str] = []
    assert sbx.commands.connect(handle.pid, on_stdout=again.append).wait().stdout == result.stdout
    assert "".join(again) == result.stdout

    sleeper = sbx.commands.run("sleep 600", background=True)
    assert sleeper.pid in [p["pid"] for p in sbx.commands.list()]
    sleeper.kill()
    killed = sleeper.wait()
    assert killed.signal == "SIGTERM" and killed.exit_code == 143

    other = sbx.commands.run("sleep 600", background=True)
    sbx.commands.kill(other.pid, "SIGKILL")
    assert other.wait().signal == "SIGKILL"
    with pytest.raises(warren.ConflictError) as gone:
        other.send_stdin("late")
    assert gone.value.code == "PROCESS_NOT_RUNNING"
    with pytest.raises(warren.NotFoundError) as missing:
        sbx.commands.connect(999999)
    assert missing.value.code == "PROCESS_NOT_FOUND"


def test_processes_wire_level(sbx: warren.Sandbox) -> None:
    info = sbx.processes.start(warren.to_exec_request("echo out; echo err >&2; sleep 600"))
    pid = info["pid"]
    assert info["state"] == "running"
    assert sbx.processes.get(pid)["cmd"] == "/bin/sh"
    assert pid in [p["pid"] for p in sbx.processes.list()]
    wait_for(
        lambda: any(e["type"] == "stderr" for e in sbx.processes.output(pid, follow=False)),
        "buffered output",
    )
    with sbx.processes.output(pid, follow=False) as events:
        kinds = [e["type"] for e in events]
    assert "stdout" in kinds and "exit" not in kinds
    # The shell's SIGINT reaches `sleep` only once the shell has forked it (before, the shell
    # catches it and waits for its command, which never got it).
    wait_for(lambda: "sleep 600" in running_cmdlines(sbx), "the shell's sleep to start")
    sbx.processes.signal(pid, "SIGINT")
    with sbx.processes.output(pid) as events:
        last = list(events)[-1]
    assert last["type"] == "exit" and last["signal"] == "SIGINT"
    assert sbx.processes.get(pid)["exit_code"] == 130
    with pytest.raises(warren.NotFoundError):
        sbx.processes.get(999999)
