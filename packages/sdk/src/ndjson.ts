/**
 * Newline-delimited JSON, as the exec and output endpoints stream it. Network
 * chunks do not respect line (or even UTF-8 character) boundaries, so bytes are
 * decoded in streaming mode and a partial line waits for the next chunk.
 */
import { WarrenError } from '@warren/protocol';
import { streamFailure } from './errors';

export async function* parseNdjson<T = unknown>(
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<T, void, undefined> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of readChunks(body)) {
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const event = parseLine<T>(line);
      if (event !== undefined) yield event;
    }
  }
  // A final line without a trailing newline still counts.
  const last = parseLine<T>(pending + decoder.decode());
  if (last !== undefined) yield last;
}

function parseLine<T>(raw: string): T | undefined {
  const line = raw.trim();
  // Blank lines carry nothing; servers may send them as keep-alives.
  if (!line) return undefined;
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new WarrenError('INTERNAL', `malformed ndjson line from server: ${line.slice(0, 200)}`);
  }
}

/** Re-throws read failures as connection errors; a consumer that stops early cancels the body. */
async function* readChunks(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (err) {
    throw streamFailure(err, 'reading a stream');
  }
}
