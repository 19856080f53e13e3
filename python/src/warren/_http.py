"""The one place that speaks HTTP, for the synchronous and the asynchronous clients.

It builds URLs, adds the token, encodes JSON and turns failures into coded
exceptions; everything else only ever sees successful responses. Requests have
a connect timeout but no read timeout: a long command or a large transfer takes
as long as it takes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any

import httpx

from ._config import resolve_config, token_file_path
from ._errors import WarrenConnectionError, WarrenError, error_from_response
from ._ndjson import LineDecoder

QueryValue = str | int | float | bool | Sequence[str] | None
Query = Mapping[str, QueryValue]
TIMEOUT = httpx.Timeout(None, connect=30.0)


def _query(query: Query | None) -> list[tuple[str, str | int | float | bool | None]]:
    out: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in (query or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        elif isinstance(value, (str, int, float)):
            out.append((key, str(value)))
        else:
            out.extend((key, v) for v in value)  # repeated parameters (argv lists)
    return out


class _Base:
    def __init__(self, api_url: str | None, api_key: str | None) -> None:
        config = resolve_config(api_url, api_key)
        self.api_url = config.api_url
        self.api_key = config.api_key

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _build(
        self,
        client: httpx.Client | httpx.AsyncClient,
        method: str,
        path: str,
        query: Query | None,
        json: Any,
        content: Any,
    ) -> httpx.Request:
        headers: dict[str, str] = {}
        if content is not None:
            headers["content-type"] = "application/octet-stream"
        return client.build_request(
            method,
            self.api_url + path,
            params=_query(query),
            json=json,
            content=content,
            headers=headers,
        )

    def _api_error(self, resp: httpx.Response) -> WarrenError:
        err = error_from_response(resp.status_code, resp.content, resp.headers.get("x-request-id"))
        if err.code == "UNAUTHORIZED" and not self.api_key:
            err.message += (
                " (no API key was sent: pass api_key, set WARREN_API_KEY,"
                f" or start the platform with `warren up`, which writes {token_file_path()})"
            )
            err.args = (err.message,)
        return err

    def _connection_error(self, err: Exception) -> WarrenConnectionError:
        return WarrenConnectionError(
            f"cannot reach the Warren API at {self.api_url} ({str(err) or type(err).__name__});"
            " is it running? (`warren up`)"
        )


def lost(err: Exception, what: str) -> WarrenConnectionError:
    return WarrenConnectionError(f"connection to the Warren API lost while {what}: {err!r}")


def _json(resp: httpx.Response, method: str, path: str) -> Any:
    if resp.status_code == 204 or not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        raise WarrenError("INTERNAL", f"invalid JSON in the response to {method} {path}") from None


class SyncHttp(_Base):
    """A connection pool to one API, with one token."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None) -> None:
        super().__init__(api_url, api_key)
        self._client = httpx.Client(timeout=TIMEOUT, headers=self._headers())

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SyncHttp:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def stream(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        json: Any = None,
        content: bytes | Iterable[bytes] | None = None,
    ) -> httpx.Response:
        """Sends a request and returns the 2xx response with its body unread; the caller closes it."""
        req = self._build(self._client, method, path, query, json, content)
        try:
            resp = self._client.send(req, stream=True)
        except httpx.TransportError as err:
            raise self._connection_error(err) from err
        if resp.is_success:
            return resp
        try:
            resp.read()
        except httpx.TransportError as err:
            raise lost(err, f"reading the error of {method} {path}") from err
        finally:
            resp.close()
        raise self._api_error(resp)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Like stream(), with the body read."""
        resp = self.stream(method, path, **kwargs)
        try:
            resp.read()
        except httpx.TransportError as err:
            raise lost(err, f"reading the answer to {method} {path}") from err
        finally:
            resp.close()
        return resp

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return _json(self.request(method, path, **kwargs), method, path)

    def ndjson(self, resp: httpx.Response, what: str) -> Iterator[Any]:
        """The JSON values of a streamed body; the caller closes the response."""
        decoder = LineDecoder()
        try:
            for chunk in resp.iter_bytes():
                yield from decoder.feed(chunk)
        except httpx.TransportError as err:
            raise lost(err, what) from err
        yield from decoder.finish()


class AsyncHttp(_Base):
    """The asynchronous twin of SyncHttp."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None) -> None:
        super().__init__(api_url, api_key)
        self._client = httpx.AsyncClient(timeout=TIMEOUT, headers=self._headers())

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> AsyncHttp:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def stream(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        json: Any = None,
        content: bytes | AsyncIterable[bytes] | None = None,
    ) -> httpx.Response:
        req = self._build(self._client, method, path, query, json, content)
        try:
            resp = await self._client.send(req, stream=True)
        except httpx.TransportError as err:
            raise self._connection_error(err) from err
        if resp.is_success:
            return resp
        try:
            await resp.aread()
        except httpx.TransportError as err:
            raise lost(err, f"reading the error of {method} {path}") from err
        finally:
            await resp.aclose()
        raise self._api_error(resp)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        resp = await self.stream(method, path, **kwargs)
        try:
            await resp.aread()
        except httpx.TransportError as err:
            raise lost(err, f"reading the answer to {method} {path}") from err
        finally:
            await resp.aclose()
        return resp

    async def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return _json(await self.request(method, path, **kwargs), method, path)

    async def ndjson(self, resp: httpx.Response, what: str) -> AsyncIterator[Any]:
        decoder = LineDecoder()
        try:
            async for chunk in resp.aiter_bytes():
                for value in decoder.feed(chunk):
                    yield value
        except httpx.TransportError as err:
            raise lost(err, what) from err
        for value in decoder.finish():
            yield value
