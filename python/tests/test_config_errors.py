"""Where credentials come from, the error table, and typed errors from the real API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import warren

REPO = Path(__file__).resolve().parents[2]


def test_config_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "admin-token").write_text("wrn_from_file\n")
    env = {"WARREN_HOME": str(tmp_path)}
    # Nothing set: the default URL and the token file of $WARREN_HOME.
    assert warren.resolve_config(env=env) == warren.ResolvedConfig(
        "http://127.0.0.1:8080", "wrn_from_file"
    )
    # The environment wins over the defaults; an empty variable counts as unset.
    env |= {"WARREN_API": "http://10.0.0.1:9000/", "WARREN_API_KEY": "wrn_env"}
    assert warren.resolve_config(env=env) == warren.ResolvedConfig("http://10.0.0.1:9000", "wrn_env")
    assert warren.resolve_config(env={**env, "WARREN_API_KEY": ""}).api_key == "wrn_from_file"
    # Arguments win over everything.
    cfg = warren.resolve_config("http://a:1", "wrn_arg", env=env)
    assert cfg == warren.ResolvedConfig("http://a:1", "wrn_arg")
    # Without $WARREN_HOME the token file is ~/.warren/admin-token.
    monkeypatch.setenv("HOME", str(tmp_path))
    assert warren.token_file_path({}) == tmp_path / ".warren" / "admin-token"


def test_token_file_is_used_by_the_client(
    api: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = api
    (tmp_path / "admin-token").write_text(token + "\n")
    monkeypatch.setenv("WARREN_HOME", str(tmp_path))
    monkeypatch.delenv("WARREN_API_KEY")
    assert isinstance(warren.Sandbox.list(api_url=url), list)
    # No token anywhere: UNAUTHORIZED, with a hint where a token comes from.
    monkeypatch.setenv("WARREN_HOME", str(tmp_path / "none"))
    with pytest.raises(warren.AuthError) as info:
        warren.Sandbox.list()
    assert info.value.code == "UNAUTHORIZED"
    assert "no API key was sent" in info.value.message


def test_error_table_matches_the_platform() -> None:
    source = (REPO / "packages/protocol/src/errors.ts").read_text()
    table = source.split("export const ERROR_STATUS = {")[1].split("} as const")[0]
    codes = dict(re.findall(r"^\s*([A-Z_]+): (\d{3}),", table, re.M))
    assert {k: int(v) for k, v in codes.items()} == warren.ERROR_STATUS
    families = {
        400: warren.InvalidRequestError,
        401: warren.AuthError,
        403: warren.PermissionDeniedError,
        404: warren.NotFoundError,
        409: warren.ConflictError,
        422: warren.TemplateBuildError,
        500: warren.ServerError,
        502: warren.UpstreamError,
        429: warren.RateLimitError,
    }
    for code, status in warren.ERROR_STATUS.items():
        cls = warren.error_class(code)
        if status in families:
            assert cls is families[status], code
        elif status == 503:
            assert cls in (warren.CapacityError, warren.NotReadyError), code
        assert issubclass(cls, warren.WarrenError)
    assert warren.error_class("INSUFFICIENT_CAPACITY") is warren.CapacityError
    assert warren.error_class("PAYLOAD_TOO_LARGE") is warren.InvalidRequestError
    # A code this SDK does not know is classed by its HTTP status.
    assert warren.error_class("SOMETHING_NEW", 409) is warren.ConflictError
    quota = warren.RateLimitError("QUOTA_EXCEEDED", "over", details={"retry_after_seconds": 3})
    assert warren.error_class("QUOTA_EXCEEDED") is warren.RateLimitError and quota.retry_after == 3.0
    assert warren.RateLimitError("RATE_LIMITED", "slow down").retry_after is None


def test_typed_errors_carry_code_status_and_request_id(api: tuple[str, str]) -> None:
    url, _ = api
    with pytest.raises(warren.NotFoundError) as nf:
        warren.Sandbox.connect("sbx_doesnotexist0000")
    err = nf.value
    assert (err.code, err.status) == ("SANDBOX_NOT_FOUND", 404)
    assert re.fullmatch(r"req_[0-9a-z]{16}", err.request_id or "")
    assert str(err.request_id) in str(err) and "SANDBOX_NOT_FOUND" in str(err)

    with pytest.raises(warren.AuthError) as auth:
        warren.Sandbox.list(api_url=url, api_key="wrn_wrong")
    assert (auth.value.code, auth.value.status) == ("UNAUTHORIZED", 401)
    assert auth.value.request_id

    # Schema validation: details name the field.
    with pytest.raises(warren.InvalidRequestError) as bad:
        warren.Sandbox.create("base", timeout=0)
    assert bad.value.code == "INVALID_REQUEST" and bad.value.status == 400
    assert "ttl_seconds" in str(bad.value.details)

    with pytest.raises(warren.NotFoundError) as tpl:
        warren.Sandbox.create("no-such-template")
    assert tpl.value.code == "TEMPLATE_NOT_FOUND"

    with pytest.raises(warren.InvalidRequestError) as big:
        warren.Sandbox.create("base", memory_mb=1 << 20)
    assert big.value.code == "RESOURCES_OUT_OF_RANGE"
    assert big.value.details["max_memory_mb"] > 0

    with pytest.raises(warren.NotFoundError) as snap:
        warren.Snapshots.get("snap_doesnotexist00")
    assert snap.value.code == "SNAPSHOT_NOT_FOUND"


def test_connection_failure_is_a_coded_error() -> None:
    with pytest.raises(warren.WarrenConnectionError) as info:
        warren.Sandbox.list(api_url="http://127.0.0.1:1", api_key="wrn_x")
    assert info.value.code == "CONNECTION_FAILED"
    assert info.value.status is None
    assert "http://127.0.0.1:1" in info.value.message
    assert isinstance(info.value, warren.WarrenError)


def test_health(api: tuple[str, str]) -> None:
    url, _ = api
    health = warren.get_health(api_url=url, api_key="")  # needs no token
    assert health["status"] == "ok"
    assert health["runtime"]["driver"] == "gvisor"
    assert health["hosts"][0]["memory_budget_mb"] > 0
