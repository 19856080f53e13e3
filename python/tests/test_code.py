"""run_code: the code interpreter through the Python SDK (a code-interpreter sandbox)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator

import pytest

import warren

from conftest import SUITE, kill_quietly


@pytest.fixture(scope="module")
def code_sbx() -> Iterator[warren.Sandbox]:
    sandbox = warren.Sandbox.create("code-interpreter", metadata=SUITE)
    try:
        yield sandbox
    finally:
        kill_quietly(sandbox.id)
        sandbox.close()


def test_state_streams_and_rich_results(code_sbx: warren.Sandbox) -> None:
    out: list[str] = []
    first = code_sbx.run_code("x = 20\nprint('hi')\nx", on_stdout=out.append)
    assert first.error is None
    assert first.text == "20"
    assert out == ["hi\n"]
    assert code_sbx.run_code("x + 22").text == "42"
    plot = code_sbx.run_code(
        "import matplotlib.pyplot as plt\nplt.figure(figsize=(1, 1), dpi=30)\nplt.plot([0, 1])\nplt.show()"
    )
    png = next(r.png for r in plot.results if r.png)
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    df = code_sbx.run_code("import pandas as pd\npd.DataFrame({'a': [1]})")
    assert df.results[0].json == {"columns": ["a"], "index": [0], "data": [[1]]}
    assert "<table" in (df.results[0].html or "")


def test_errors_and_timeout(code_sbx: warren.Sandbox) -> None:
    exe = code_sbx.run_code("1/0")
    assert exe.error is not None and exe.error.name == "ZeroDivisionError"
    loop = code_sbx.run_code("while True: pass", timeout=1.5)
    assert loop.cancelled == "timeout"
    assert code_sbx.run_code("x").text == "20"
    with pytest.raises(warren.NotFoundError) as info:
        code_sbx.run_code("1", context="ctx_nope")
    assert info.value.code == "CONTEXT_NOT_FOUND"


def test_async_run_code(code_sbx: warren.Sandbox) -> None:
    async def main() -> str | None:
        sandbox = await warren.AsyncSandbox.connect(code_sbx.id)
        try:
            exe = await sandbox.run_code("total = 0\nfor i in range(4): total += i\ntotal")
            bash = await sandbox.run_code("echo $((6*7))", language="bash")
            assert bash.stdout == ["42\n"]
            return exe.text
        finally:
            await sandbox.close()

    assert asyncio.run(main()) == "6"
