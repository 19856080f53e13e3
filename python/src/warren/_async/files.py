"""``sandbox.files`` of the async client: the sandbox's file system, streamed both ways."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from pathlib import Path
from typing import IO, Literal, cast, overload

from .._errors import InvalidRequestError, WarrenError
from .._http import AsyncHttp
from .._streams import AsyncByteStream
from .._types import FileInfo, WriteResult
from .._util import afile_chunks, mode_text, seg

AsyncWriteData = str | bytes | IO[bytes] | Iterable[bytes] | AsyncIterable[bytes]


async def _aiter(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


class AsyncFiles:
    def __init__(self, http: AsyncHttp, sandbox_id: str) -> None:
        self._http = http
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}/files"

    @overload
    async def read(self, path: str, *, format: Literal["text"] = "text") -> str: ...
    @overload
    async def read(self, path: str, *, format: Literal["bytes"]) -> bytes: ...
    @overload
    async def read(self, path: str, *, format: Literal["stream"]) -> AsyncByteStream: ...

    async def read(
        self, path: str, *, format: Literal["text", "bytes", "stream"] = "text"
    ) -> str | bytes | AsyncByteStream:
        """The file's content: text (UTF-8, the default), ``bytes``, or a ``stream`` of chunks."""
        if format == "stream":
            return self.read_stream(path)
        data = await self.read_bytes(path)
        return data if format == "bytes" else data.decode("utf-8")

    async def read_bytes(self, path: str) -> bytes:
        return (await self._http.request("GET", self._base, query={"path": path})).content

    def read_stream(self, path: str) -> AsyncByteStream:
        """The content as an async iterator of byte chunks; use it with ``async with``."""
        return AsyncByteStream(
            lambda: self._http.stream("GET", self._base, query={"path": path}), f"reading {path}"
        )

    async def write(
        self, path: str, data: AsyncWriteData, *, mode: str | int | None = None
    ) -> WriteResult:
        """Creates or replaces the file (and makes its parent directories).

        ``data`` may be text, bytes, a binary file object, or a (sync or async)
        iterable of byte chunks; all but text and bytes are streamed.
        """
        content: bytes | AsyncIterable[bytes]
        if isinstance(data, str):
            content = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            content = bytes(data)
        elif hasattr(data, "read"):
            content = afile_chunks(cast(IO[bytes], data))
        elif hasattr(data, "__aiter__"):
            content = cast(AsyncIterable[bytes], data)
        else:
            content = _aiter(cast(Iterable[bytes], data))
        query = {"path": path, "mode": mode_text(mode)}
        res = await self._http.json("PUT", self._base, query=query, content=content)
        return cast(WriteResult, res)

    async def list(self, path: str) -> list[FileInfo]:
        """The entries of a directory, sorted by name."""
        res = await self._http.json("GET", f"{self._base}/list", query={"path": path})
        return cast(list[FileInfo], res["items"])

    async def stat(self, path: str) -> FileInfo:
        """One file's info; symbolic links are not followed."""
        res = await self._http.json("GET", f"{self._base}/stat", query={"path": path})
        return cast(FileInfo, res)

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
            return True
        except WarrenError as err:
            if err.code in ("FILE_NOT_FOUND", "NOT_A_DIRECTORY"):
                return False
            raise

    async def mkdir(self, path: str, *, parents: bool = True) -> FileInfo:
        """Makes a directory, with its parents unless ``parents=False``."""
        body = {"path": path, "parents": parents}
        return cast(FileInfo, await self._http.json("POST", f"{self._base}/mkdir", json=body))

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file or an empty directory; ``recursive=True`` removes a whole tree."""
        query = {"path": path, "recursive": recursive}
        await self._http.request("DELETE", self._base, query=query)

    async def rename(self, old_path: str, new_path: str) -> FileInfo:
        """Renames or moves; missing parents of ``new_path`` are made."""
        body = {"from": old_path, "to": new_path}
        return cast(FileInfo, await self._http.json("POST", f"{self._base}/rename", json=body))

    async def upload(
        self, local_path: str | os.PathLike[str], remote_path: str, *, mode: str | int | None = None
    ) -> WriteResult:
        """Streams a local file into the sandbox, keeping its permission bits unless ``mode`` is given."""
        local = Path(local_path)
        info = local.stat()
        if not local.is_file():
            raise InvalidRequestError("IS_A_DIRECTORY", f"{local} is not a regular file")
        with local.open("rb") as f:
            bits = mode if mode is not None else info.st_mode & 0o777
            return await self.write(remote_path, f, mode=bits)

    async def download(self, remote_path: str, local_path: str | os.PathLike[str]) -> WriteResult:
        """Streams a sandbox file to a local path; a partial file is removed if the transfer fails."""
        local = Path(local_path)
        size = 0
        try:
            with local.open("wb") as out:
                async with self.read_stream(remote_path) as chunks:
                    async for chunk in chunks:
                        await asyncio.to_thread(out.write, chunk)
                        size += len(chunk)
        except BaseException:
            local.unlink(missing_ok=True)
            raise
        return {"path": str(local), "size": size}
