"""``sandbox.network`` of the async client: the egress policy, bound secrets and the egress log."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from .._http import AsyncHttp
from .._types import EgressEvent, EgressSecret, NetworkView
from .._util import drop_none, seg

Mode = Literal["none", "restricted", "open"]


class AsyncNetwork:
    def __init__(self, http: AsyncHttp, sandbox_id: str) -> None:
        self._http = http
        self._base = f"/v1/sandboxes/{seg(sandbox_id)}"

    async def get(self) -> NetworkView:
        """The policy, and the hosts and headers secrets go to (never their values)."""
        return cast(NetworkView, await self._http.json("GET", f"{self._base}/network"))

    async def set(
        self,
        mode: Mode,
        *,
        allow: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        secrets: Sequence[EgressSecret] | None = None,
    ) -> NetworkView:
        """Replaces the policy (and the secrets, when given); new connections follow it at once."""
        body = drop_none(
            {
                "mode": mode,
                "allow": None if allow is None else list(allow),
                "deny": None if deny is None else list(deny),
                "secrets": None if secrets is None else list(secrets),
            }
        )
        return cast(NetworkView, await self._http.json("PUT", f"{self._base}/network", json=body))

    async def log(
        self,
        *,
        decision: Literal["allowed", "denied"] | None = None,
        limit: int | None = None,
        before: int | None = None,
    ) -> list[EgressEvent]:
        """Egress decisions, newest first; ``before`` pages on by event id."""
        query = {"decision": decision, "limit": limit, "before": before}
        res = await self._http.json("GET", f"{self._base}/egress", query=query)
        return cast(list[EgressEvent], res["items"])
