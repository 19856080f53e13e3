/**
 * Turns everything that can go wrong on the wire into errors with a stable
 * `code`: API error bodies become the protocol's WarrenError (same code as the
 * server used), and failures to talk to the server at all become
 * WarrenConnectionError, which has the same shape so callers can print both alike.
 */
import { WarrenError, isErrorCode, type ErrorCode } from '@warren/protocol';

/** The server could not be reached, or the connection broke mid-stream. */
export class WarrenConnectionError extends Error {
  readonly code = 'CONNECTION_FAILED';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WarrenConnectionError';
  }
}

/** A WarrenError built from an API response; `requestId` matches the server's logs. */
export type ApiError = WarrenError & { requestId?: string };

// Used when the body carries no code this SDK knows (a proxy's HTML page, a newer server).
const STATUS_FALLBACK: Record<number, ErrorCode> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** Maps a non-2xx response (its status and body text) to a WarrenError. */
export function errorFromResponse(status: number, bodyText: string): ApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  const body = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : {};
  const rawCode = body.code;
  const code: ErrorCode = isErrorCode(rawCode) ? rawCode : (STATUS_FALLBACK[status] ?? 'INTERNAL');
  const message =
    typeof body.message === 'string'
      ? body.message
      : `HTTP ${status}${bodyText ? `: ${bodyText.slice(0, 200)}` : ''}`;
  // An unknown code is kept in details rather than lost.
  const details = isErrorCode(rawCode)
    ? body.details
    : { status, code: rawCode, details: body.details };
  const err: ApiError = new WarrenError(code, message, details);
  if (typeof body.request_id === 'string') err.requestId = body.request_id;
  return err;
}

/** Builds a WarrenError from an `{type:'error'}` event of an exec stream. */
export function errorFromEvent(code: string, message: string): WarrenError {
  return new WarrenError(isErrorCode(code) ? code : 'INTERNAL', message);
}

/**
 * Classifies an error thrown while reading or writing a body stream: our own
 * errors, aborts and local file-system errors pass through; anything else is
 * the connection dying under us.
 */
export function streamFailure(err: unknown, what: string): unknown {
  if (err instanceof WarrenError || err instanceof WarrenConnectionError) return err;
  if (isRecord(err) && (err.name === 'AbortError' || typeof err.syscall === 'string')) return err;
  const reason = err instanceof Error ? err.message : String(err);
  return new WarrenConnectionError(`connection to the Warren API lost while ${what}: ${reason}`, {
    cause: err,
  });
}
