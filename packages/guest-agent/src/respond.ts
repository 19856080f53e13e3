import type { ServerHttp2Stream } from 'node:http2';
import { ERROR_STATUS, WarrenError, type ErrorCode } from '@warren/protocol/errors';

export function sendJson(stream: ServerHttp2Stream, status: number, body: unknown): void {
  if (stream.destroyed || stream.closed) return;
  const text = body === undefined ? '' : JSON.stringify(body);
  if (!stream.headersSent)
    stream.respond({ ':status': status, 'content-type': 'application/json' });
  stream.end(text);
}

export function sendError(stream: ServerHttp2Stream, err: unknown): void {
  const e = toWarrenError(err);
  if (stream.headersSent) {
    stream.close();
    return;
  }
  sendJson(stream, e.status, e.toBody());
}

const ERRNO_CODES: Record<string, ErrorCode> = {
  ENOENT: 'FILE_NOT_FOUND',
  ENOTDIR: 'NOT_A_DIRECTORY',
  EISDIR: 'IS_A_DIRECTORY',
  EEXIST: 'FILE_EXISTS',
  ENOTEMPTY: 'DIRECTORY_NOT_EMPTY',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  EROFS: 'PERMISSION_DENIED',
};

/** Classifies file-system errors at the guest boundary so the host sees stable codes. */
export function toWarrenError(err: unknown): WarrenError {
  if (err instanceof WarrenError) return err;
  const errno = (err as NodeJS.ErrnoException | undefined)?.code;
  if (errno && ERRNO_CODES[errno]) {
    const path = (err as NodeJS.ErrnoException).path;
    return new WarrenError(ERRNO_CODES[errno], `${errno}: ${path ?? ''}`.trim());
  }
  return new WarrenError('INTERNAL', err instanceof Error ? err.message : String(err));
}

export { ERROR_STATUS, WarrenError };
