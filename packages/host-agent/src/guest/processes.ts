/**
 * HostProcessApi over a sandbox's guest channel: exec with streamed events,
 * background processes, their output, stdin and signals.
 */
import {
  GUEST_PATHS,
  type ExecEvent,
  type ExecOptions,
  type GuestProcessStart,
  type HostProcessApi,
  type ProcessInfo,
} from '@warren/protocol';
import type { GuestChannel, GuestResponse } from './channel';
import { errorFrom, execEvents, readText } from './wire';

async function checked(res: GuestResponse): Promise<GuestResponse> {
  if (res.status >= 400) throw errorFrom(res.status, await readText(res.body));
  return res;
}

/**
 * The events of a guest stream. When `signal` aborts before the exit event,
 * the stream is closed and, with `killOnAbort`, the process is killed.
 */
async function* events(
  channel: GuestChannel,
  res: GuestResponse,
  o: ExecOptions & { killOnAbort: boolean },
): AsyncGenerator<ExecEvent> {
  let pid = 0;
  let exited = false;
  const stop = new AbortController();
  const abort = () => {
    stop.abort();
    if (!exited && o.killOnAbort && pid) {
      void channel
        .json({
          method: 'POST',
          path: `${GUEST_PATHS.processes}/${pid}/signal`,
          json: { signal: 'SIGKILL' },
        })
        .catch(() => undefined);
    }
    res.body.destroy();
  };
  if (o.signal?.aborted) return abort();
  o.signal?.addEventListener('abort', abort, { once: true });
  try {
    for await (const event of execEvents(res.body, stop.signal)) {
      if (event.type === 'start') pid = event.pid;
      if (event.type === 'exit') exited = true;
      yield event;
    }
  } catch (err) {
    if (!stop.signal.aborted) throw err; // aborted: the events just end
  } finally {
    o.signal?.removeEventListener('abort', abort);
    if (!exited) abort();
  }
}

export function guestProcesses(channelOf: (id: string) => GuestChannel): HostProcessApi {
  const start = (id: string, body: GuestProcessStart) =>
    channelOf(id)
      .request({ method: 'POST', path: GUEST_PATHS.processes, json: body })
      .then(checked);
  return {
    async exec(id, body, o = {}) {
      const channel = channelOf(id);
      const res = await start(id, { ...body, background: false });
      return events(channel, res, { ...o, killOnAbort: true });
    },
    async start(id, body) {
      const res = await start(id, { ...body, background: true });
      return JSON.parse(await readText(res.body)) as ProcessInfo;
    },
    async list(id) {
      const { items } = await channelOf(id).json<{ items: ProcessInfo[] }>({
        path: GUEST_PATHS.processes,
      });
      return items;
    },
    get: (id, pid) => channelOf(id).json<ProcessInfo>({ path: `${GUEST_PATHS.processes}/${pid}` }),
    async output(id, pid, o) {
      const channel = channelOf(id);
      const res = await channel
        .request({
          path: `${GUEST_PATHS.processes}/${pid}/events`,
          query: { follow: o.follow ? '1' : '0' },
        })
        .then(checked);
      return events(channel, res, { signal: o.signal, killOnAbort: false });
    },
    async writeStdin(id, pid, req) {
      await channelOf(id).json({
        method: 'POST',
        path: `${GUEST_PATHS.processes}/${pid}/stdin`,
        json: req,
      });
    },
    async signal(id, pid, req) {
      await channelOf(id).json({
        method: 'POST',
        path: `${GUEST_PATHS.processes}/${pid}/signal`,
        json: req,
      });
    },
  };
}
