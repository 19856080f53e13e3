/**
 * One delivery attempt: the JSON body POSTed with the Standard Webhooks
 * headers. Signing uses the `standardwebhooks` package (the reference
 * implementation of the scheme), so signatures are exactly what receivers'
 * verifiers expect; during a rotation's grace period both secrets sign and
 * webhook-signature carries both, space-separated.
 */
import { Webhook } from 'standardwebhooks';

export const RESPONSE_EXCERPT_BYTES = 500;

export interface AttemptResult {
  status: number | null;
  latencyMs: number;
  response: string;
  error: string | null;
  ok: boolean;
}

export function signatureHeaders(
  messageId: string,
  at: Date,
  body: string,
  secrets: readonly string[],
): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(messageId, at, body)).join(' '),
  };
}

async function excerpt(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
}

export async function attemptDelivery(o: {
  url: string;
  messageId: string;
  body: string;
  secrets: readonly string[];
  timeoutMs: number;
  /** Aborted when the platform shuts down. */
  signal: AbortSignal;
}): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const res = await fetch(o.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Warren-Webhooks/1',
        ...signatureHeaders(o.messageId, new Date(), o.body, o.secrets),
      },
      body: o.body,
      // A redirect is not a delivery: receivers answer 2xx themselves.
      redirect: 'manual',
      signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]),
    });
    const response = await excerpt(res);
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: res.status,
      latencyMs: latency(),
      response,
      error: ok ? null : `HTTP ${res.status}`,
      ok,
    };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const timedOut = e.name === 'TimeoutError';
    const why = timedOut
      ? `no answer within ${o.timeoutMs} ms`
      : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { status: null, latencyMs: latency(), response: '', error: why, ok: false };
  }
}
