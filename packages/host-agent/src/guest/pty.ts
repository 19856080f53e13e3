/**
 * Terminal sessions through the guest channel. An attachment is one HTTP/2
 * stream both ways (see PTY_FRAME_* in @warren/protocol/guest); the channel
 * ends attachments before a pause or checkpoint, and the viewer attaches again.
 */
import { PassThrough } from 'node:stream';
import type { HostPtyApi, PtyAttachHandlers, PtyInfo } from '@warren/protocol';
import {
  GUEST_PATHS,
  PTY_FRAME_EXIT,
  PTY_FRAME_HEADER,
  PTY_FRAME_OUTPUT,
  PTY_FRAME_START,
} from '@warren/protocol/guest';
import type { GuestChannel, GuestResponse } from './channel';
import { errorFrom, readText } from './wire';

/** Splits the attach stream into frames (a frame may span chunks, a chunk hold many). */
function frameReader(handlers: PtyAttachHandlers): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let off = 0;
    while (pending.length - off >= PTY_FRAME_HEADER) {
      const len = pending.readUInt32LE(off + 1);
      if (pending.length - off < PTY_FRAME_HEADER + len) break;
      const type = pending.readUInt8(off);
      const payload = pending.subarray(off + PTY_FRAME_HEADER, off + PTY_FRAME_HEADER + len);
      if (type === PTY_FRAME_OUTPUT) handlers.onData(Buffer.from(payload));
      else if (type === PTY_FRAME_START)
        handlers.onStart?.((JSON.parse(payload.toString()) as { offset: number }).offset);
      else if (type === PTY_FRAME_EXIT)
        handlers.onExit(JSON.parse(payload.toString()) as { exit_code: number; signal: string });
      off += PTY_FRAME_HEADER + len;
    }
    pending = pending.subarray(off);
  };
}

export function guestPty(channelOf: (id: string) => GuestChannel): HostPtyApi {
  const path = (ptyId: string, sub = '') => `${GUEST_PATHS.pty}/${encodeURIComponent(ptyId)}${sub}`;
  return {
    create: (id, start) =>
      channelOf(id).json<PtyInfo>({ method: 'POST', path: GUEST_PATHS.pty, json: start }),
    async list(id) {
      return (await channelOf(id).json<{ items: PtyInfo[] }>({ path: GUEST_PATHS.pty })).items;
    },
    get: (id, ptyId) => channelOf(id).json<PtyInfo>({ path: path(ptyId) }),
    resize: (id, ptyId, size) =>
      channelOf(id).json<PtyInfo>({ method: 'POST', path: path(ptyId, '/resize'), json: size }),
    async kill(id, ptyId) {
      await channelOf(id).json({ method: 'DELETE', path: path(ptyId) });
    },
    async attach(id, ptyId, handlers, o = {}) {
      const channel = channelOf(id);
      const input = new PassThrough();
      let res: GuestResponse | undefined = undefined;
      let ended = false;
      let endedEarly = () => undefined as void;
      const end = () => {
        if (ended) return;
        ended = true;
        release();
        input.destroy();
        res?.body.destroy();
        endedEarly();
        handlers.onEnd();
      };
      // Held before the guest answers: a pause that begins while the attach is
      // in flight (the frozen guest would answer only after a resume) ends it too.
      const release = channel.holdAttachment(end);
      const early = new Promise<null>((resolve) => (endedEarly = () => resolve(null)));
      const pending = channel.request({
        method: 'POST',
        path: path(ptyId, '/attach'),
        query: { since: o.since !== undefined ? String(o.since) : undefined },
        body: input,
      });
      const answer = await Promise.race([pending, early]).catch((err: unknown) => {
        ended = true;
        release();
        input.destroy();
        throw err;
      });
      if (answer === null || ended) {
        if (answer) answer.body.destroy();
        // Ended before the answer: onEnd told the viewer to attach again.
        pending.then((r) => r.body.destroy()).catch(() => undefined);
        return { write: () => undefined, close: () => undefined };
      }
      res = answer;
      if (res.status >= 400) {
        ended = true;
        release();
        input.destroy();
        throw errorFrom(res.status, await readText(res.body));
      }
      res.body.on('data', frameReader(handlers));
      res.body.once('end', end);
      res.body.once('close', end);
      res.body.once('error', end);
      return {
        write: (data) => {
          if (!ended) input.write(data);
        },
        close: end,
      };
    },
  };
}
