/**
 * File watches over the guest channel: one HTTP/2 stream of ndjson events.
 * Closing it (the caller's signal, or the channel ending attachments before a
 * pause or checkpoint) makes the guest drop its watchers.
 */
import { createInterface } from 'node:readline';
import { GUEST_PATHS, type FileWatchEvent } from '@warren/protocol';
import type { GuestChannel } from './channel';
import { errorFrom, readText } from './wire';

export async function watchFiles(
  channel: GuestChannel,
  path: string,
  o: { recursive: boolean; signal?: AbortSignal },
): Promise<AsyncIterable<FileWatchEvent>> {
  const res = await channel.request({
    path: GUEST_PATHS.filesWatch,
    query: { path, recursive: o.recursive ? '1' : '0' },
  });
  if (res.status >= 400) throw errorFrom(res.status, await readText(res.body));
  const stop = new AbortController();
  const end = () => {
    stop.abort();
    res.body.destroy();
  };
  const release = channel.holdAttachment(end);
  if (o.signal?.aborted) end();
  o.signal?.addEventListener('abort', end, { once: true });
  return (async function* () {
    try {
      const lines = createInterface({ input: res.body, crlfDelay: Infinity, signal: stop.signal });
      for await (const line of lines) if (line.trim()) yield JSON.parse(line) as FileWatchEvent;
    } catch (err) {
      if (!stop.signal.aborted) throw err; // closed on purpose: the events just end
    } finally {
      o.signal?.removeEventListener('abort', end);
      release();
      end();
    }
  })();
}
