"""Where the API is and which token to send.

Explicit arguments win over the environment, and the environment wins over the
admin token that ``warren up`` writes, so a machine with a local platform needs
no configuration at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_API_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class ResolvedConfig:
    api_url: str
    api_key: str | None


def warren_home(env: Mapping[str, str] | None = None) -> Path:
    """``$WARREN_HOME``, or ``~/.warren``."""
    env = os.environ if env is None else env
    home = env.get("WARREN_HOME")
    return Path(home) if home else Path.home() / ".warren"


def token_file_path(env: Mapping[str, str] | None = None) -> Path:
    return warren_home(env) / "admin-token"


def resolve_config(
    api_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ResolvedConfig:
    """Arguments, then ``$WARREN_API``/``$WARREN_API_KEY``, then the defaults.

    An empty argument or variable counts as not set.
    """
    env = os.environ if env is None else env
    url = (api_url or env.get("WARREN_API") or DEFAULT_API_URL).rstrip("/")
    key = api_key or env.get("WARREN_API_KEY") or _read_token_file(env)
    return ResolvedConfig(api_url=url, api_key=key)


def _read_token_file(env: Mapping[str, str]) -> str | None:
    try:
        return token_file_path(env).read_text(encoding="utf-8").strip() or None
    except OSError:
        # No file (the platform never ran here) or unreadable: send no token and
        # let the 401 that follows explain where a token comes from.
        return None
