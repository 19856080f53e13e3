/** The one error handler: typed errors become JSON bodies with stable codes; nothing else leaks. */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { WarrenError, type ErrorCode } from '@warren/protocol';

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_REQUEST',
};

/**
 * The PostgreSQL store is down or restarting: refused or dropped connections,
 * and the server's shutdown and startup errors (SQLSTATE class 08, 57P01-57P03).
 */
function storeDown(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (/^08/.test(code) || /^57P0[123]$/.test(code))) return true;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE') return true;
  // The server's Unix socket is gone while it restarts.
  if (code === 'ENOENT' && /\.s\.PGSQL\./.test(err.message)) return true;
  return /^Connection terminated|^timeout exceeded when trying to connect|is not queryable/.test(
    err.message,
  );
}

export function toWarrenError(err: FastifyError | Error): WarrenError {
  if (err instanceof WarrenError) return err;
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext ?? 'request';
    const details = fe.validation.map((v) => ({
      path: v.instancePath || '/',
      message: v.message,
      params: v.params,
    }));
    const first = fe.validation[0];
    const what = first ? `${where}${first.instancePath} ${first.message}` : `invalid ${where}`;
    // A sandbox's network policy and secrets have a code of their own, wherever they are sent.
    const network = /^\/(network|secrets)\b/.test(first?.instancePath ?? '');
    return new WarrenError(network ? 'INVALID_NETWORK_POLICY' : 'INVALID_REQUEST', what, details);
  }
  if (fe.code && FASTIFY_CODES[fe.code])
    return new WarrenError(FASTIFY_CODES[fe.code]!, fe.message);
  if (storeDown(err))
    return new WarrenError('STORE_UNAVAILABLE', 'the store (PostgreSQL) is not answering; retry');
  if (err instanceof SyntaxError || fe.statusCode === 400)
    return new WarrenError('INVALID_JSON', 'request body is not valid JSON');
  return new WarrenError('INTERNAL', 'internal error');
}

export function errorHandler(
  err: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const e = toWarrenError(err);
  if (e.code === 'INTERNAL' || e.code === 'RUNTIME_ERROR')
    request.log.error({ err }, 'request failed');
  else request.log.info({ code: e.code }, e.message);
  // RATE_LIMITED and QUOTA_EXCEEDED say when to try again.
  const retry = (e.details as { retry_after_seconds?: unknown } | undefined)?.retry_after_seconds;
  if (typeof retry === 'number') void reply.header('retry-after', String(Math.max(1, retry)));
  void reply.status(e.status).send(e.toBody(request.id));
}
