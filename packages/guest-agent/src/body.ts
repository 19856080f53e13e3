import type { ServerHttp2Stream } from 'node:http2';
import { WarrenError } from '@warren/protocol/errors';

/** Reads a small JSON request body (control messages only; file data is streamed). */
export async function readJson<T>(stream: ServerHttp2Stream, limit = 32 * 1024 * 1024): Promise<T> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new WarrenError('PAYLOAD_TOO_LARGE', 'request body too large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {} as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new WarrenError('INVALID_JSON', 'request body is not valid JSON');
  }
}
