/**
 * A small HostApi for the transport's unit test: only the calls the test
 * makes exist (any other fails on the agent's side, which the client sees as INTERNAL). What reached it is
 * recorded, so the test can check the far side of the wire.
 */
import { createHash } from 'node:crypto';
import { Duplex, Readable } from 'node:stream';
import type { ExecEvent, HostApi, PtyAttachHandlers } from '@warren/protocol';
import { WarrenError } from '@warren/protocol';

export interface FakeRecord {
  execAborted: boolean;
  written: { bytes: number; sha256: string; maxLead: number } | null;
  /** Bytes the test's producer has made so far (set by the test). */
  produced: () => number;
  closed: Array<{ destroy?: boolean } | undefined>;
  ptyInput: string;
  ptyDetached: boolean;
}

/** An echo connection that upper-cases what it is sent, then ends. */
function upperEcho(): Duplex {
  return new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      this.push(chunk.toString().toUpperCase());
      this.push(null);
      done();
    },
  });
}

export function fakeHost(rec: FakeRecord): HostApi {
  const any = {};
  const host = {
    id: 'host_fake',
    info: async () => ({
      id: 'host_fake',
      driver: 'fake',
      runtime_version: 'fake 1',
      capabilities: {
        checkpoint: true,
        pause: true,
        disk_limit: false,
        egress: true,
        volume_clone: 'copy',
      },
    }),
    capacity: async () => ({ memory_budget_mb: 1024, memory_reserved_mb: 0, sandboxes: 0 }),
    sandboxes: {
      ...any,
      create: async () => {
        throw new WarrenError('INSUFFICIENT_CAPACITY', 'no room for 300 MiB', { free_mb: 12 });
      },
      destroy: async () => undefined,
      live: async () => ['sandbox_a'],
      usage: async () => null,
      openPort: async (_id: string, port: number) => {
        if (port !== 7001) throw new WarrenError('PORT_NOT_LISTENING', `nothing on ${port}`);
        return upperEcho();
      },
      reclaim: async () => {
        throw new Error('disk on fire');
      },
    },
    processes: {
      ...any,
      exec: async (id: string, _start: unknown, o?: { signal?: AbortSignal }) => {
        if (id !== 'sandbox_a')
          throw new WarrenError('SANDBOX_NOT_RUNNING', `${id} is not running`);
        const signal = o?.signal;
        return (async function* (): AsyncGenerator<ExecEvent> {
          yield { type: 'start', pid: 42 } as ExecEvent;
          yield { type: 'stdout', data: 'hello\n' } as ExecEvent;
          await new Promise<void>((resolve) => {
            if (signal?.aborted) return resolve();
            signal?.addEventListener('abort', () => resolve());
          });
          rec.execAborted = Boolean(signal?.aborted);
        })();
      },
    },
    pty: {
      ...any,
      attach: async (_id: string, ptyId: string, h: PtyAttachHandlers, o?: { since?: number }) => {
        if (ptyId !== 'pty_a') throw new WarrenError('PTY_NOT_FOUND', `no ${ptyId}`);
        h.onStart?.(o?.since ?? 0);
        h.onData(Buffer.from('scrollback'));
        return {
          write(data: Buffer) {
            rec.ptyInput += data.toString();
            if (rec.ptyInput.endsWith('exit\n')) {
              h.onExit({ exit_code: 0, signal: null });
              h.onEnd();
            }
          },
          close() {
            rec.ptyDetached = true;
          },
        };
      },
    },
    code: any,
    files: {
      ...any,
      write: async (id: string, path: string, body: Readable) => {
        if (id !== 'sandbox_a')
          throw new WarrenError('SANDBOX_NOT_RUNNING', `${id} is not running`);
        const hash = createHash('sha256');
        let bytes = 0;
        let maxLead = 0;
        for await (const chunk of body) {
          bytes += (chunk as Buffer).length;
          hash.update(chunk as Buffer);
          maxLead = Math.max(maxLead, rec.produced() - bytes);
          // A slow disk: the sender has to wait for it.
          if (bytes % (4 * 1024 * 1024) < (chunk as Buffer).length)
            await new Promise((r) => setTimeout(r, 20));
        }
        rec.written = { bytes, sha256: hash.digest('hex'), maxLead };
        return { path, size: bytes };
      },
      read: async (_id: string, path: string) => {
        if (path === '/broken') {
          const broken = new Readable({ read() {} });
          broken.push(Buffer.alloc(1024));
          setTimeout(() => broken.destroy(new Error('disk gone')), 50);
          return { size: 1 << 20, stream: broken };
        }
        if (path !== '/data') throw new WarrenError('FILE_NOT_FOUND', `${path} does not exist`);
        return { size: 5, stream: Readable.from([Buffer.from('he'), Buffer.from('llo')]) };
      },
    },
    templates: {
      ...any,
      get: async () => null,
      build: async (req: { name: string }, progress: (line: string, step?: number) => void) => {
        progress('step one', 1);
        progress('step two', 2);
        if (req.name === 'broken') throw new WarrenError('TEMPLATE_BUILD_FAILED', 'step 2 failed');
        return { name: req.name, state: 'ready' };
      },
    },
    volumes: any,
    snapshots: any,
    archive: any,
    close: async (o?: { destroy?: boolean }) => {
      rec.closed.push(o);
    },
  };
  return host as unknown as HostApi;
}
