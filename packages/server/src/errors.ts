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
