"""``sandbox.files``: the sandbox's file system.

Reads and writes stream in both directions, so ``upload`` and ``download`` move
files of any size with constant memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Literal, cast, overload

from .._errors import InvalidRequestError, WarrenError
from .._http import SyncHttp
from .._streams import ByteStream
from .._types import FileInfo, WriteResult
from .._util import file_chunks, mode_text, seg

WriteData = str | bytes | IO[bytes] | Iterable[bytes]


class Files:
    def __init__(self, http: SyncHttp, sandbox_id: str) -> None:
        self._http = http
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}/files"

    @overload
    def read(self, path: str, *, format: Literal["text"] = "text") -> str: ...
    @overload
    def read(self, path: str, *, format: Literal["bytes"]) -> bytes: ...
    @overload
    def read(self, path: str, *, format: Literal["stream"]) -> ByteStream: ...

    def read(
        self, path: str, *, format: Literal["text", "bytes", "stream"] = "text"
    ) -> str | bytes | ByteStream:
        """The file's content: text (UTF-8, the default), ``bytes``, or a ``stream`` of chunks."""
        if format == "stream":
            return self.read_stream(path)
        data = self.read_bytes(path)
        return data if format == "bytes" else data.decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        return self._http.request("GET", self._base, query={"path": path}).content

    def read_stream(self, path: str) -> ByteStream:
        """The content as an iterator of byte chunks; use it in a ``with`` block."""
        return ByteStream(
            lambda: self._http.stream("GET", self._base, query={"path": path}), f"reading {path}"
        )

    def write(self, path: str, data: WriteData, *, mode: str | int | None = None) -> WriteResult:
        """Creates or replaces the file (and makes its parent directories).

        ``data`` may be text, bytes, a binary file object or an iterable of
        byte chunks; the last two are streamed (chunked), never buffered.
        ``mode`` is the permission bits: ``"755"`` or ``0o755``.
        """
        content: bytes | Iterable[bytes]
        if isinstance(data, str):
            content = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            content = bytes(data)
        elif hasattr(data, "read"):
            content = file_chunks(cast(IO[bytes], data))
        else:
            content = cast(Iterable[bytes], data)
        query = {"path": path, "mode": mode_text(mode)}
        return cast(WriteResult, self._http.json("PUT", self._base, query=query, content=content))

    def list(self, path: str) -> list[FileInfo]:
        """The entries of a directory, sorted by name."""
        res = self._http.json("GET", f"{self._base}/list", query={"path": path})
        return cast(list[FileInfo], res["items"])

    def stat(self, path: str) -> FileInfo:
        """One file's info; symbolic links are not followed."""
        return cast(FileInfo, self._http.json("GET", f"{self._base}/stat", query={"path": path}))

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except WarrenError as err:
            # A path through a non-directory does not exist either.
            if err.code in ("FILE_NOT_FOUND", "NOT_A_DIRECTORY"):
                return False
            raise

    def mkdir(self, path: str, *, parents: bool = True) -> FileInfo:
        """Makes a directory, with its parents unless ``parents=False``."""
        body = {"path": path, "parents": parents}
        return cast(FileInfo, self._http.json("POST", f"{self._base}/mkdir", json=body))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file or an empty directory; ``recursive=True`` removes a whole tree."""
        self._http.request("DELETE", self._base, query={"path": path, "recursive": recursive})

    def rename(self, old_path: str, new_path: str) -> FileInfo:
        """Renames or moves; missing parents of ``new_path`` are made."""
        body = {"from": old_path, "to": new_path}
        return cast(FileInfo, self._http.json("POST", f"{self._base}/rename", json=body))

    def upload(
        self, local_path: str | os.PathLike[str], remote_path: str, *, mode: str | int | None = None
    ) -> WriteResult:
        """Streams a local file into the sandbox, keeping its permission bits unless ``mode`` is given."""
        local = Path(local_path)
        info = local.stat()  # a bad local path is reported as such, not as a network failure
        if not local.is_file():
            raise InvalidRequestError("IS_A_DIRECTORY", f"{local} is not a regular file")
        with local.open("rb") as f:
            return self.write(remote_path, f, mode=mode if mode is not None else info.st_mode & 0o777)

    def download(self, remote_path: str, local_path: str | os.PathLike[str]) -> WriteResult:
        """Streams a sandbox file to a local path; a partial file is removed if the transfer fails."""
        local = Path(local_path)
        size = 0
        try:
            with self.read_stream(remote_path) as chunks, local.open("wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                    size += len(chunk)
        except BaseException:
            local.unlink(missing_ok=True)
            raise
        return {"path": str(local), "size": size}
