"""Files through the synchronous client: every call, streamed 20 MB transfers, file errors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import warren
from conftest import sha256, sha256_file

MB20 = 20 * 1024 * 1024


def test_read_write_list_stat_mkdir_rename_remove(sbx: warren.Sandbox) -> None:
    f = sbx.files
    res = f.write("/root/py/notes.txt", "héllo\n")  # parents are made
    assert res == {"path": "/root/py/notes.txt", "size": len("héllo\n".encode())}
    assert f.read("/root/py/notes.txt") == "héllo\n"
    assert f.read("/root/py/notes.txt", format="bytes") == "héllo\n".encode()
    assert f.read_bytes("/root/py/notes.txt") == "héllo\n".encode()
    with f.read("/root/py/notes.txt", format="stream") as chunks:
        assert b"".join(chunks) == "héllo\n".encode()

    f.write("/root/py/run.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
    assert f.stat("/root/py/run.sh")["mode"] == "755"
    assert sbx.commands.run("/root/py/run.sh").stdout == "ran\n"
    f.write("/root/py/gen.bin", (bytes([i]) * 1000 for i in range(5)), mode="600")
    assert f.read_bytes("/root/py/gen.bin") == b"".join(bytes([i]) * 1000 for i in range(5))

    info = f.mkdir("/root/py/a/b")
    assert info["type"] == "dir" and info["path"] == "/root/py/a/b"
    assert f.mkdir("/root/py/a/b")["type"] == "dir"  # with parents an existing dir is fine
    with pytest.raises(warren.ConflictError) as exists:
        f.mkdir("/root/py/a/b", parents=False)
    assert exists.value.code == "FILE_EXISTS"

    names = [e["name"] for e in f.list("/root/py")]
    assert names == sorted(names) and {"a", "gen.bin", "notes.txt", "run.sh"} <= set(names)
    st = f.stat("/root/py/notes.txt")
    assert st["type"] == "file" and st["size"] == 7 and st["name"] == "notes.txt"

    moved = f.rename("/root/py/notes.txt", "/root/py/a/b/c/moved.txt")
    assert moved["path"] == "/root/py/a/b/c/moved.txt"
    assert not f.exists("/root/py/notes.txt") and f.exists("/root/py/a/b/c/moved.txt")
    assert not f.exists("/root/py/run.sh/inside")  # through a file: does not exist either

    with pytest.raises(warren.ConflictError) as not_empty:
        f.remove("/root/py/a")
    assert not_empty.value.code == "DIRECTORY_NOT_EMPTY"
    f.remove("/root/py/a", recursive=True)
    f.remove("/root/py/gen.bin")
    assert not f.exists("/root/py/a")


def test_file_errors_are_typed(sbx: warren.Sandbox) -> None:
    f = sbx.files
    with pytest.raises(warren.NotFoundError) as nf:
        f.read("/root/no-such-file")
    assert nf.value.code == "FILE_NOT_FOUND" and nf.value.request_id
    with pytest.raises(warren.InvalidRequestError) as rel:
        f.read("relative/path")
    assert rel.value.code == "INVALID_PATH"
    with pytest.raises(warren.InvalidRequestError) as isdir:
        f.read("/root")
    assert isdir.value.code == "IS_A_DIRECTORY"
    with pytest.raises(warren.InvalidRequestError) as notdir:
        f.list("/etc/hostname")
    assert notdir.value.code == "NOT_A_DIRECTORY"
    with pytest.raises(warren.NotFoundError):
        f.download("/root/no-such-file", "/tmp/never-written")
    assert not os.path.exists("/tmp/never-written")


def test_upload_and_download_20mb_streamed(sbx: warren.Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    with src.open("wb") as out:
        for _ in range(20):
            out.write(os.urandom(1024 * 1024))
    os.chmod(src, 0o640)
    digest = sha256_file(src)

    res = sbx.files.upload(src, "/root/big.bin")
    assert res["size"] == MB20
    assert sbx.files.stat("/root/big.bin")["mode"] == "640"  # permission bits kept
    inside = sbx.commands.run("sha256sum /root/big.bin").stdout.split()[0]
    assert inside == digest

    dst = tmp_path / "copy.bin"
    got = sbx.files.download("/root/big.bin", dst)
    assert got == {"path": str(dst), "size": MB20}
    assert sha256_file(dst) == digest

    # Chunks stream without the whole file in one piece.
    sizes: list[int] = []
    with sbx.files.read_stream("/root/big.bin") as chunks:
        h = hashlib.sha256()
        for chunk in chunks:
            sizes.append(len(chunk))
            h.update(chunk)
    assert h.hexdigest() == digest and len(sizes) > 1 and max(sizes) < MB20

    # A file object is streamed too, in chunks.
    with src.open("rb") as fobj:
        assert sbx.files.write("/root/big2.bin", fobj)["size"] == MB20
    assert sha256(sbx.files.read_bytes("/root/big2.bin")) == digest
    sbx.files.remove("/root/big.bin")
    sbx.files.remove("/root/big2.bin")

    with pytest.raises(warren.InvalidRequestError):
        sbx.files.upload(tmp_path, "/root/dir")
