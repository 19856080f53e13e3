/**
 * HostCodeApi over a sandbox's guest channel: code runs streamed as ndjson,
 * contexts, and interrupts. Closing a run's stream (its signal aborted)
 * interrupts the run in the guest.
 */
import { createInterface } from 'node:readline';
import { GUEST_PATHS, type CodeContext, type CodeEvent, type HostCodeApi } from '@warren/protocol';
import type { GuestChannel, GuestResponse } from './channel';
import { errorFrom, readText } from './wire';

async function* codeEvents(res: GuestResponse, signal?: AbortSignal): AsyncGenerator<CodeEvent> {
  const stop = new AbortController();
  const abort = () => {
    stop.abort();
    res.body.destroy();
  };
  if (signal?.aborted) return abort();
  signal?.addEventListener('abort', abort, { once: true });
  let ended = false;
  try {
    const lines = createInterface({ input: res.body, crlfDelay: Infinity, signal: stop.signal });
    for await (const line of lines) {
      if (!line.trim()) continue;
      const event = JSON.parse(line) as CodeEvent;
      if (event.type === 'end') ended = true;
      yield event;
    }
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    signal?.removeEventListener('abort', abort);
    if (!ended) abort();
  }
}

export function guestCode(channelOf: (id: string) => GuestChannel): HostCodeApi {
  const base = GUEST_PATHS.code;
  const ctx = (cid: string, sub = '') => `${base}/contexts/${encodeURIComponent(cid)}${sub}`;
  return {
    async run(id, req, o = {}) {
      const res = await channelOf(id).request({ method: 'POST', path: `${base}/run`, json: req });
      if (res.status >= 400) throw errorFrom(res.status, await readText(res.body));
      return codeEvents(res, o.signal);
    },
    createContext: (id, req) =>
      channelOf(id).json<CodeContext>({ method: 'POST', path: `${base}/contexts`, json: req }),
    async listContexts(id) {
      return (await channelOf(id).json<{ items: CodeContext[] }>({ path: `${base}/contexts` }))
        .items;
    },
    restartContext: (id, cid) =>
      channelOf(id).json<CodeContext>({ method: 'POST', path: ctx(cid, '/restart') }),
    async deleteContext(id, cid) {
      await channelOf(id).json({ method: 'DELETE', path: ctx(cid) });
    },
    async interrupt(id, executionId) {
      await channelOf(id).json({
        method: 'DELETE',
        path: `${base}/executions/${encodeURIComponent(executionId)}`,
      });
    },
  };
}
