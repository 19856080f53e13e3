"""Fixtures of the Python SDK's tests, against a real platform.

The platform is the one at $WARREN_API with the token $WARREN_API_KEY (the
Node test test/e2e/python-sdk.test.ts starts one and runs this suite). Every
sandbox a test makes is killed at teardown, whether the test passed or not.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import warren

SUITE = {"suite": "python-sdk"}
# Small sandboxes: the suite shares the machine with other tests.
SMALL: dict[str, Any] = {"memory_mb": 256}


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("WARREN_API") or not os.environ.get("WARREN_API_KEY"):
        raise pytest.UsageError("set WARREN_API and WARREN_API_KEY to a running Warren platform")


@pytest.fixture(scope="session")
def api() -> tuple[str, str]:
    return os.environ["WARREN_API"], os.environ["WARREN_API_KEY"]


def kill_quietly(sandbox_id: str) -> None:
    try:
        warren.Sandbox.kill(sandbox_id)
    except warren.WarrenError:
        pass


@pytest.fixture(scope="session")
def sbx() -> Iterator[warren.Sandbox]:
    """One running sandbox shared by the tests that leave it as they found it."""
    sandbox = warren.Sandbox.create("base", metadata=SUITE, envs={"GREETING": "hi"}, **SMALL)
    try:
        yield sandbox
    finally:
        kill_quietly(sandbox.id)
        sandbox.close()


@pytest.fixture
def make_sandbox() -> Iterator[Callable[..., warren.Sandbox]]:
    """Creates sandboxes for one test and kills them all when it ends."""
    made: list[warren.Sandbox] = []

    def make(**kwargs: Any) -> warren.Sandbox:
        sandbox = warren.Sandbox.create(**{"metadata": SUITE, **SMALL, **kwargs})
        made.append(sandbox)
        return sandbox

    try:
        yield make
    finally:
        for sandbox in made:
            kill_quietly(sandbox.id)
            sandbox.close()


@pytest.fixture
def track() -> Iterator[Callable[[warren.Sandbox], warren.Sandbox]]:
    """Kills, at teardown, sandboxes a test got another way (forks, snapshots)."""
    made: list[warren.Sandbox] = []

    def add(sandbox: warren.Sandbox) -> warren.Sandbox:
        made.append(sandbox)
        return sandbox

    try:
        yield add
    finally:
        for sandbox in made:
            kill_quietly(sandbox.id)
            sandbox.close()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def running_cmdlines(sandbox: warren.Sandbox) -> str:
    """The command lines of every process in the sandbox (from /proc; there is no ps)."""
    script = (
        "import os\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n"
        "        try: print(open(f'/proc/{p}/cmdline','rb').read().replace(b'\\0',b' ').decode())\n"
        "        except OSError: pass\n"
    )
    return sandbox.commands.run("python3", args=["-c", script]).stdout


# A python3 program for a background process that counts to /tmp/count 20 times a second.
COUNTER = "\n".join(
    [
        "import os, time",
        "i = 0",
        "while True:",
        "    i += 1",
        "    open('/tmp/count.tmp', 'w').write(str(i))",
        "    os.replace('/tmp/count.tmp', '/tmp/count')",
        "    time.sleep(0.05)",
    ]
)
