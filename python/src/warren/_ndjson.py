"""Newline-delimited JSON, as the exec, output and build routes stream it.

Network chunks do not respect line (or even UTF-8 character) boundaries, so
bytes are decoded incrementally and a partial line waits for the next chunk.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from ._errors import WarrenError


class LineDecoder:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._pending = ""

    def feed(self, chunk: bytes) -> list[Any]:
        self._pending += self._decoder.decode(chunk)
        *lines, self._pending = self._pending.split("\n")
        return [v for v in map(parse_line, lines) if v is not None]

    def finish(self) -> list[Any]:
        """What is left: a final line without a trailing newline still counts."""
        last = parse_line(self._pending + self._decoder.decode(b"", final=True))
        self._pending = ""
        return [] if last is None else [last]


def parse_line(raw: str) -> Any:
    line = raw.strip()
    # Blank lines carry nothing; servers may send them as keep-alives.
    if not line:
        return None
    try:
        return json.loads(line)
    except ValueError:
        raise WarrenError("INTERNAL", f"malformed ndjson line from server: {line[:200]}") from None
