/**
 * Starts user processes through the native spawner helper (native/spawner.c).
 *
 * Under gVisor, forking the big Node.js process is slow (65-110 ms for
 * /bin/true), while posix_spawn from a small process takes about 19 ms, so
 * one long-lived helper, started lazily, does the spawning. It talks to us
 * over its stdin/stdout with frames: u32 LE payload length | u8 type | u32 LE
 * id | payload (the id names one child; see spawner.c for the message types).
 *
 * Fallback: when the helper binary is missing (the fake driver runs this
 * agent on a host, where /opt/warren/spawner does not exist) or cannot be
 * executed, and permanently once the helper dies, processes are started with
 * child_process.spawn instead, transparently: SpawnedChild behaves the same
 * either way. Children that had not started yet when the helper died are
 * started again that way; running ones lost their pipes, so their process
 * groups are killed and they are reported as killed by SIGKILL.
 *
 * The helper does not keep the event loop alive on its own: it is unref'd
 * while no child of it runs (guest-agent tests start and stop Spawners).
 *
 * The frames and message types are in spawner/wire.ts, SpawnedChild in
 * spawner/child.ts, and the child_process fallback in spawner/direct.ts.
 */
import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { constants } from 'node:os';
import { WarrenError } from '@warren/protocol/errors';
import { GUEST_AGENT_DIR } from '@warren/protocol/guest';
import { type Backend, SpawnedChild, type SpawnOptions } from './spawner/child';
import { spawnDirect } from './spawner/direct';
import {
  errnoError,
  EV_EXITED,
  EV_SPAWN_FAILED,
  EV_STARTED,
  EV_STDERR,
  EV_STDERR_EOF,
  EV_STDOUT,
  EV_STDOUT_EOF,
  HEADER,
  REQ_HOSTNAME,
  ptySpawnPayload,
  REQ_RELEASE,
  REQ_RESIZE,
  REQ_SIGNAL,
  REQ_SPAWN,
  REQ_SPAWN_PTY,
  REQ_STDIN,
  REQ_STDIN_CLOSE,
  SIGNAL_NAMES,
  spawnPayload,
  sizePayload,
  STDIN_FRAME,
  type TerminalSize,
} from './spawner/wire';

export { SpawnedChild, type SpawnOptions };

/** Where the guest bundle puts the helper (the bundle is mounted at /opt/warren). */
export const DEFAULT_SPAWNER_PATH = `${GUEST_AGENT_DIR}/spawner`;

interface HelperEntry {
  child: SpawnedChild;
  started: boolean;
  exited: boolean;
  eofs: number;
}

export interface SpawnerOptions {
  /** The helper binary; default $WARREN_SPAWNER, else /opt/warren/spawner. */
  path?: string;
}

export class Spawner {
  private mode: 'idle' | 'helper' | 'fallback' = 'idle';
  private helper: ChildProcess | null = null;
  private readonly entries = new Map<number, HelperEntry>();
  private nextId = 1;
  private referenced = true;
  private closing = false;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private needed = HEADER;

  constructor(private readonly options: SpawnerOptions = {}) {}

  /** The helper binary (also the trampoline that starts a process as another user). */
  get path(): string {
    return this.options.path ?? process.env.WARREN_SPAWNER ?? DEFAULT_SPAWNER_PATH;
  }

  /** 'helper' while the helper runs, 'fallback' once child_process is used instead. */
  get backend(): 'idle' | 'helper' | 'fallback' {
    return this.mode;
  }

  spawn(options: SpawnOptions): SpawnedChild {
    if (this.mode === 'idle') this.startHelper();
    const child = new SpawnedChild(options);
    if (this.mode === 'fallback' || !this.helper) {
      spawnDirect(child, false);
      return child;
    }
    const payload = spawnPayload(options); // throws before anything is sent
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    this.entries.set(id, { child, started: false, exited: false, eofs: 0 });
    this.updateRef();
    child.attach(this.helperBackend(id), false);
    this.send(REQ_SPAWN, id, payload);
    return child;
  }

  /**
   * Starts a process on a new pseudo-terminal (stdin, stdout and stderr), the
   * leader of its own session. Its output all comes on stdout. Only the helper
   * can do this: without it, PTY_UNAVAILABLE.
   */
  spawnPty(options: SpawnOptions, size: TerminalSize): SpawnedChild {
    if (this.mode === 'idle') this.startHelper();
    if (this.mode !== 'helper' || !this.helper) {
      throw new WarrenError('PTY_UNAVAILABLE', 'terminals need the native spawner helper');
    }
    const payload = ptySpawnPayload(options, size);
    const child = new SpawnedChild(options);
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    // One output stream: stderr is over before it starts.
    this.entries.set(id, { child, started: false, exited: false, eofs: 1 });
    child.output('stderr', null);
    this.updateRef();
    child.attach(this.helperBackend(id), false);
    this.send(REQ_SPAWN_PTY, id, payload);
    return child;
  }

  /**
   * Sets the sandbox's host name through the helper (Node.js has no sethostname).
   * Returns false when there is no helper to do it.
   */
  setHostname(name: string): boolean {
    if (this.mode === 'idle') this.startHelper();
    if (this.mode !== 'helper' || !this.helper) return false;
    this.send(REQ_HOSTNAME, 0, Buffer.from(name));
    return true;
  }

  /** The helper's process id (it must survive a reset of the sandbox's processes). */
  get helperPid(): number | undefined {
    return this.helper?.pid;
  }

  /** Stops the helper (it kills its children's process groups); a later spawn starts it again. */
  close(): void {
    const helper = this.helper;
    if (!helper) return;
    this.closing = true;
    helper.stdin?.end();
    this.helperGone(helper);
    this.closing = false;
  }

  private startHelper(): void {
    const path = this.path;
    try {
      accessSync(path, fsConstants.X_OK);
    } catch {
      this.mode = 'fallback'; // no helper here (e.g. the fake driver on a host)
      return;
    }
    let helper: ChildProcess;
    try {
      helper = spawnProcess(path, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    } catch {
      this.mode = 'fallback';
      return;
    }
    this.helper = helper;
    this.mode = 'helper';
    this.referenced = true;
    this.updateRef();
    helper.stdout?.on('data', (chunk: Buffer) => {
      if (this.helper === helper) this.onData(chunk);
    });
    helper.stdin?.on('error', () => {}); // EPIPE once it died; 'close' tells us
    helper.on('error', () => this.helperGone(helper));
    helper.once('close', () => this.helperGone(helper));
  }

  private helperBackend(id: number): Backend {
    return {
      writeStdin: (data) => {
        for (let off = 0; off < data.length; off += STDIN_FRAME) {
          this.send(REQ_STDIN, id, data.subarray(off, off + STDIN_FRAME));
        }
      },
      closeStdin: () => this.send(REQ_STDIN_CLOSE, id),
      kill: (signal) => this.send(REQ_SIGNAL, id, Buffer.from(String(signal))),
      resize: (cols, rows) => this.send(REQ_RESIZE, id, sizePayload({ cols, rows })),
      release: () => {
        this.send(REQ_RELEASE, id);
        this.forget(id);
      },
    };
  }

  private send(type: number, id: number, payload?: Buffer): void {
    const stdin = this.helper?.stdin;
    if (!stdin || stdin.destroyed) return;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32LE(payload?.length ?? 0, 0);
    header.writeUInt8(type, 4);
    header.writeUInt32LE(id, 5);
    stdin.write(payload?.length ? Buffer.concat([header, payload]) : header);
  }

  /** Splits the helper's output into frames (a frame may span chunks). */
  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.needed) return;
    const buf = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks, this.buffered);
    const helper = this.helper;
    let off = 0;
    this.needed = HEADER;
    while (buf.length - off >= HEADER) {
      const len = buf.readUInt32LE(off);
      if (buf.length - off < HEADER + len) {
        this.needed = HEADER + len;
        break;
      }
      const payload = buf.subarray(off + HEADER, off + HEADER + len);
      this.onFrame(buf.readUInt8(off + 4), buf.readUInt32LE(off + 5), payload);
      if (this.helper !== helper) return; // closed by an event handler
      off += HEADER + len;
    }
    const rest = buf.subarray(off);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
  }

  private onFrame(type: number, id: number, payload: Buffer): void {
    const entry = this.entries.get(id);
    if (!entry) return; // released, or the helper is talking about a forgotten child
    const { child } = entry;
    switch (type) {
      case EV_STARTED:
        entry.started = true;
        child.started(Number(payload.toString()));
        break;
      case EV_SPAWN_FAILED:
        this.forget(id);
        child.failed(errnoError(Number(payload.toString()), child.options));
        break;
      case EV_STDOUT:
      case EV_STDERR:
        child.output(type === EV_STDOUT ? 'stdout' : 'stderr', payload);
        break;
      case EV_STDOUT_EOF:
      case EV_STDERR_EOF:
        entry.eofs += 1;
        child.output(type === EV_STDOUT_EOF ? 'stdout' : 'stderr', null);
        if (entry.exited && entry.eofs === 2) this.forget(id);
        break;
      case EV_EXITED: {
        entry.exited = true;
        if (entry.eofs === 2) this.forget(id);
        const text = payload.toString();
        if (text.startsWith('signal:')) {
          child.exited(null, SIGNAL_NAMES.get(Number(text.slice(7))) ?? null);
        } else {
          child.exited(Number(text), null);
        }
        break;
      }
    }
  }

  private forget(id: number): void {
    this.entries.delete(id);
    this.updateRef();
  }

  /** Keeps the event loop alive only while the helper has children. */
  private updateRef(): void {
    const helper = this.helper;
    const want = this.entries.size > 0;
    if (!helper || want === this.referenced) return;
    this.referenced = want;
    for (const handle of [helper, helper.stdin, helper.stdout]) {
      const h = handle as { ref?: () => void; unref?: () => void } | null;
      if (want) h?.ref?.();
      else h?.unref?.();
    }
  }

  private helperGone(helper: ChildProcess): void {
    if (this.helper !== helper) return;
    this.helper = null;
    this.chunks = [];
    this.buffered = 0;
    this.needed = HEADER;
    if (this.closing) {
      this.mode = 'idle';
    } else {
      this.mode = 'fallback';
      process.stderr.write('warren: spawner helper exited; using child_process.spawn\n');
    }
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const { child, started, exited } of entries) {
      if (!started && this.closing) {
        child.failed(errnoError(constants.errno.ECANCELED, child.options));
        continue;
      }
      if (!started) {
        // Never started: start it the other way, replaying the stdin given so far.
        try {
          spawnDirect(child, true);
        } catch (err) {
          child.failed(err as NodeJS.ErrnoException);
        }
        continue;
      }
      // Its pipes died with the helper: make sure the group is gone and report a kill.
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.output('stdout', null);
      child.output('stderr', null);
      if (!exited) child.exited(null, 'SIGKILL');
    }
  }
}
