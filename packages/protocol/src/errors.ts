/**
 * Stable error codes and the one table that maps them to HTTP statuses.
 * The server, the host agent, the guest agent and the SDK all use this table,
 * so a code means the same thing on every side of the wire.
 */
export const ERROR_STATUS = {
  INVALID_JSON: 400,
  INVALID_REQUEST: 400,
  INVALID_PATH: 400,
  CWD_NOT_FOUND: 400,
  USER_NOT_FOUND: 400,
  RESOURCES_OUT_OF_RANGE: 400,
  INVALID_MOUNT_PATH: 400,
  VOLUME_QUOTA_EXCEEDED: 400,
  NOT_A_DIRECTORY: 400,
  IS_A_DIRECTORY: 400,
  INVALID_NETWORK_POLICY: 400,
  INVALID_IMAGE: 400,
  INVALID_RESTORE_TARGET: 400,
  INVALID_WEBHOOK_URL: 400,
  INVALID_EVENT_FILTER: 400,
  POSITION_OUT_OF_RANGE: 400,
  TEMPLATE_BUILD_FAILED: 422,
  UNAUTHORIZED: 401,
  PREVIEW_AUTH_REQUIRED: 401,
  JOIN_TOKEN_INVALID: 401,
  PERMISSION_DENIED: 403,
  MISSING_SCOPE: 403,
  KEY_RESTRICTED: 403,
  NOT_FOUND: 404,
  SANDBOX_NOT_FOUND: 404,
  TEMPLATE_NOT_FOUND: 404,
  SNAPSHOT_NOT_FOUND: 404,
  VOLUME_NOT_FOUND: 404,
  DATABASE_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
  ORGANISATION_NOT_FOUND: 404,
  ARCHIVE_OBJECT_NOT_FOUND: 404,
  PROCESS_NOT_FOUND: 404,
  HOST_NOT_FOUND: 404,
  PTY_NOT_FOUND: 404,
  CONTEXT_NOT_FOUND: 404,
  EXECUTION_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  WEBHOOK_MESSAGE_NOT_FOUND: 404,
  SANDBOX_NOT_RUNNING: 409,
  INVALID_STATE: 409,
  FILE_EXISTS: 409,
  DIRECTORY_NOT_EMPTY: 409,
  PROCESS_NOT_RUNNING: 409,
  VOLUME_EXISTS: 409,
  VOLUME_IN_USE: 409,
  SANDBOX_HAS_VOLUMES: 409,
  TEMPLATE_EXISTS: 409,
  TEMPLATE_IN_USE: 409,
  TEMPLATE_NOT_BUILT: 409,
  INTERPRETER_UNAVAILABLE: 409,
  DATABASE_FENCED: 409,
  HOST_FENCED: 409,
  HOST_NOT_EMPTY: 409,
  HOST_EXISTS: 409,
  WEBHOOK_DISABLED: 409,
  LANGUAGE_SERVER_NOT_INSTALLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  QUOTA_EXCEEDED: 429,
  INTERNAL: 500,
  RUNTIME_ERROR: 500,
  DATABASE_COMMAND_FAILED: 500,
  GUEST_UNAVAILABLE: 502,
  SANDBOX_OUT_OF_MEMORY: 502,
  PORT_NOT_LISTENING: 502,
  INSUFFICIENT_CAPACITY: 503,
  TEMPLATE_NOT_READY: 503,
  PTY_UNAVAILABLE: 503,
  LANGUAGE_SERVER_FAILED: 502,
  DATABASE_NOT_READY: 503,
  HOST_UNREACHABLE: 503,
  STORE_UNAVAILABLE: 503,
  SNAPSHOT_CORRUPT: 500,
  SNAPSHOT_STORE_UNAVAILABLE: 502,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code);
}

/** The JSON body of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id?: string; details?: unknown };
}

/** A typed error with a stable code; the HTTP status follows from the code. */
export class WarrenError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'WarrenError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(requestId?: string): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (requestId) error.request_id = requestId;
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}
