"""Exceptions with the platform's stable error codes.

Every error of the API becomes a :class:`WarrenError` subclass chosen by its
code's family (the HTTP status of the code in the platform's one error table),
carrying ``code``, ``message``, ``status``, ``request_id`` and ``details``.
Failing to reach the API at all is :class:`WarrenConnectionError`
(code ``CONNECTION_FAILED``).
"""

from __future__ import annotations

import json
from typing import Any, cast

# The platform's table (packages/protocol/src/errors.ts): code -> HTTP status.
ERROR_STATUS: dict[str, int] = {
    "INVALID_JSON": 400,
    "INVALID_REQUEST": 400,
    "INVALID_PATH": 400,
    "CWD_NOT_FOUND": 400,
    "USER_NOT_FOUND": 400,
    "RESOURCES_OUT_OF_RANGE": 400,
    "INVALID_MOUNT_PATH": 400,
    "VOLUME_QUOTA_EXCEEDED": 400,
    "NOT_A_DIRECTORY": 400,
    "IS_A_DIRECTORY": 400,
    "INVALID_NETWORK_POLICY": 400,
    "INVALID_IMAGE": 400,
    "INVALID_RESTORE_TARGET": 400,
    "INVALID_WEBHOOK_URL": 400,
    "INVALID_EVENT_FILTER": 400,
    "POSITION_OUT_OF_RANGE": 400,
    "TEMPLATE_BUILD_FAILED": 422,
    "UNAUTHORIZED": 401,
    "PREVIEW_AUTH_REQUIRED": 401,
    "JOIN_TOKEN_INVALID": 401,
    "PERMISSION_DENIED": 403,
    "MISSING_SCOPE": 403,
    "KEY_RESTRICTED": 403,
    "NOT_FOUND": 404,
    "SANDBOX_NOT_FOUND": 404,
    "TEMPLATE_NOT_FOUND": 404,
    "SNAPSHOT_NOT_FOUND": 404,
    "VOLUME_NOT_FOUND": 404,
    "DATABASE_NOT_FOUND": 404,
    "KEY_NOT_FOUND": 404,
    "ORGANISATION_NOT_FOUND": 404,
    "ARCHIVE_OBJECT_NOT_FOUND": 404,
    "PROCESS_NOT_FOUND": 404,
    "HOST_NOT_FOUND": 404,
    "PTY_NOT_FOUND": 404,
    "CONTEXT_NOT_FOUND": 404,
    "EXECUTION_NOT_FOUND": 404,
    "FILE_NOT_FOUND": 404,
    "WEBHOOK_NOT_FOUND": 404,
    "WEBHOOK_MESSAGE_NOT_FOUND": 404,
    "SANDBOX_NOT_RUNNING": 409,
    "INVALID_STATE": 409,
    "FILE_EXISTS": 409,
    "DIRECTORY_NOT_EMPTY": 409,
    "PROCESS_NOT_RUNNING": 409,
    "VOLUME_EXISTS": 409,
    "VOLUME_IN_USE": 409,
    "SANDBOX_HAS_VOLUMES": 409,
    "TEMPLATE_EXISTS": 409,
    "TEMPLATE_IN_USE": 409,
    "TEMPLATE_NOT_BUILT": 409,
    "INTERPRETER_UNAVAILABLE": 409,
    "DATABASE_FENCED": 409,
    "HOST_FENCED": 409,
    "HOST_NOT_EMPTY": 409,
    "HOST_EXISTS": 409,
    "WEBHOOK_DISABLED": 409,
    "LANGUAGE_SERVER_NOT_INSTALLED": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "RATE_LIMITED": 429,
    "QUOTA_EXCEEDED": 429,
    "INTERNAL": 500,
    "RUNTIME_ERROR": 500,
    "DATABASE_COMMAND_FAILED": 500,
    "GUEST_UNAVAILABLE": 502,
    "SANDBOX_OUT_OF_MEMORY": 502,
    "PORT_NOT_LISTENING": 502,
    "INSUFFICIENT_CAPACITY": 503,
    "TEMPLATE_NOT_READY": 503,
    "PTY_UNAVAILABLE": 503,
    "LANGUAGE_SERVER_FAILED": 502,
    "DATABASE_NOT_READY": 503,
    "HOST_UNREACHABLE": 503,
    "STORE_UNAVAILABLE": 503,
    "SNAPSHOT_CORRUPT": 500,
    "SNAPSHOT_STORE_UNAVAILABLE": 502,
}

CONNECTION_FAILED = "CONNECTION_FAILED"


class WarrenError(Exception):
    """Base of every error the SDK raises. Match on ``code``, not on the message."""

    code: str
    message: str
    status: int | None
    request_id: str | None
    details: Any

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        details: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else ERROR_STATUS.get(code)
        self.request_id = request_id
        self.details = details

    def __str__(self) -> str:
        rid = f" (request {self.request_id})" if self.request_id else ""
        return f"[{self.code}] {self.message}{rid}"


class InvalidRequestError(WarrenError):
    """400, 413, 415: the request was refused as it was (schema, path, sizes, policy...)."""


class AuthError(WarrenError):
    """401: no token, a wrong one (``UNAUTHORIZED``), or no preview token (``PREVIEW_AUTH_REQUIRED``)."""


class PermissionDeniedError(WarrenError):
    """403: the file system refused it (``PERMISSION_DENIED``), or the key may not do it
    (``MISSING_SCOPE``, ``KEY_RESTRICTED``)."""


class NotFoundError(WarrenError):
    """404: no such sandbox, template, snapshot, volume, database, process, file or route."""


class ConflictError(WarrenError):
    """409: the resource's state does not allow it (not running, exists, in use...)."""


class TemplateBuildError(WarrenError):
    """422 ``TEMPLATE_BUILD_FAILED``: a recipe step failed; ``details['step']`` names it."""


class ServerError(WarrenError):
    """500: ``INTERNAL``, ``RUNTIME_ERROR``, ``DATABASE_COMMAND_FAILED``, ``SNAPSHOT_CORRUPT``."""


class UpstreamError(WarrenError):
    """502: the guest agent, a preview port or the snapshot store did not answer."""


class CapacityError(WarrenError):
    """503 ``INSUFFICIENT_CAPACITY``: the host's budget cannot hold it; nothing was started."""


class NotReadyError(WarrenError):
    """503 ``TEMPLATE_NOT_READY`` or ``DATABASE_NOT_READY``."""


class RateLimitError(WarrenError):
    """429 ``QUOTA_EXCEEDED`` or ``RATE_LIMITED``: nothing was made; try again after ``retry_after``."""

    @property
    def retry_after(self) -> float | None:
        """Seconds to wait before trying again, as the server said (``Retry-After``)."""
        raw: object = self.details
        if not isinstance(raw, dict):
            return None
        value = cast(dict[str, object], raw).get("retry_after_seconds")
        return float(value) if isinstance(value, (int, float)) else None


class WarrenConnectionError(WarrenError):
    """The API could not be reached, or the connection broke mid-stream (``CONNECTION_FAILED``)."""

    def __init__(self, message: str) -> None:
        super().__init__(CONNECTION_FAILED, message)


_BY_STATUS: dict[int, type[WarrenError]] = {
    400: InvalidRequestError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    401: AuthError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: TemplateBuildError,
    429: RateLimitError,
    500: ServerError,
    502: UpstreamError,
}
_BY_CODE: dict[str, type[WarrenError]] = {
    "INSUFFICIENT_CAPACITY": CapacityError,
    "TEMPLATE_NOT_READY": NotReadyError,
    "DATABASE_NOT_READY": NotReadyError,
}
# Used when the body carries no code (a proxy's page, an unexpected answer).
_STATUS_FALLBACK = {
    400: "INVALID_REQUEST",
    401: "UNAUTHORIZED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def error_class(code: str, status: int | None = None) -> type[WarrenError]:
    """The exception class of a code; unknown codes are classed by their HTTP status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    known = ERROR_STATUS.get(code, status)
    if known is None:
        return WarrenError
    if known == 503:
        return NotReadyError
    return _BY_STATUS.get(known, ServerError if known >= 500 else WarrenError)


def make_error(
    code: str,
    message: str,
    *,
    status: int | None = None,
    request_id: str | None = None,
    details: Any = None,
) -> WarrenError:
    cls = error_class(code, status)
    return cls(code, message, status=status, request_id=request_id, details=details)


def error_from_response(status: int, body: bytes, request_id: str | None) -> WarrenError:
    """Maps a non-2xx answer (its status, body and ``x-request-id`` header) to an exception."""
    text = body.decode("utf-8", errors="replace")
    err: dict[str, Any] = {}
    try:
        parsed: Any = json.loads(text)
        if isinstance(parsed, dict) and isinstance(cast(dict[str, Any], parsed).get("error"), dict):
            err = cast(dict[str, Any], parsed["error"])
    except ValueError:
        pass
    raw_code = err.get("code")
    code = raw_code if isinstance(raw_code, str) and raw_code else None
    if code is None:
        code = _STATUS_FALLBACK.get(status, "INTERNAL")
    message = err.get("message")
    if not isinstance(message, str):
        message = f"HTTP {status}" + (f": {text[:200]}" if text else "")
    rid = err.get("request_id")
    if request_id is None and isinstance(rid, str):
        request_id = rid
    return make_error(code, message, status=status, request_id=request_id, details=err.get("details"))
