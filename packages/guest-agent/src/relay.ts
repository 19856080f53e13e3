/**
 * The native relay (native/relay.c) moves bulk bytes between the sandbox and
 * the host's data socket: file transfers, port connections (preview URLs) and
 * egress. It does blocking reads and writes of 1 MiB on a thread per
 * direction, several times faster under gVisor than this event loop's
 * non-blocking 64 KiB reads. It is started with the agent, so a template's
 * snapshot holds it running and a restored sandbox pays nothing to start it.
 *
 * Without the binary (the fake driver runs this agent on a host) or once it
 * died, `relay()` is null and callers use their Node.js streams instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { constants } from 'node:os';
import { GUEST_AGENT_DIR } from '@warren/protocol/guest';
import { DATA_SOCKET } from './data';

export const DEFAULT_RELAY_PATH = `${GUEST_AGENT_DIR}/relay`;

/** What the relay answers a request with: `ok`, `done`, `dropped`, or an errno. */
interface Answer {
  word: string;
  errno?: NodeJS.ErrnoException;
}

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([k, v]) => [v, k]));

function errnoError(n: number): NodeJS.ErrnoException {
  const code = ERRNO_NAMES.get(n) ?? `E${n}`;
  return Object.assign(new Error(code), { code, errno: n });
}

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

export class Relay {
  private readonly waiting = new Map<number, (a: Answer) => void>();
  private nextId = 1;
  private rest = '';
  private alive = true;

  constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => this.read(text));
    child.once('exit', () => this.die());
    child.once('error', () => this.die());
    child.stdin!.on('error', () => this.die());
  }

  get running(): boolean {
    return this.alive;
  }

  /** Its process id: a reset of the sandbox's processes leaves it running. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends the first `size` bytes of a file on the data connection of `token`. */
  send(token: string, path: string, size: number): void {
    this.write(this.id(), `send ${token} ${hex(path)} ${size}`);
  }

  /**
   * Receives a file on the data connection of `token`; resolves once it is
   * written (or rejects with its errno) and then `answer` is what goes back
   * on that connection before it closes.
   */
  async receive(
    token: string,
    path: string,
    mode: number | undefined,
    answer: (err: NodeJS.ErrnoException | null) => Promise<string>,
  ): Promise<void> {
    const id = this.id();
    const a = await this.ask(id, `recv ${token} ${hex(path)} ${mode ?? '-'}`);
    const text = await answer(a.errno ? Object.assign(a.errno, { path }) : null);
    this.write(id, `reply ${hex(text)}`);
  }

  /** Connects to a port on the sandbox's loopback and bridges it to `token`'s connection. */
  async port(token: string, port: number): Promise<void> {
    const a = await this.ask(this.id(), `port ${token} ${port}`);
    if (a.errno) throw a.errno;
  }

  /** Connects to the Unix socket `path` in the sandbox and bridges it to `token`'s connection. */
  async unix(token: string, path: string): Promise<void> {
    const a = await this.ask(this.id(), `unix ${token} ${hex(path)}`);
    if (a.errno) throw a.errno;
  }

  /**
   * Hands `token`'s connection, by descriptor, to the server listening on the
   * Unix socket `path` (see native/handoff.c), or bridges it to `port` when
   * nothing listens there.
   */
  async handoff(token: string, path: string, port: number): Promise<void> {
    const a = await this.ask(this.id(), `hand ${token} ${hex(path)} ${port}`);
    if (a.errno) throw a.errno;
  }

  /** Listens on the egress ports (once) and bridges each connection with `token`. */
  async egress(token: string, http: number, socks: number): Promise<void> {
    const a = await this.ask(this.id(), `egress ${token} ${http} ${socks}`);
    if (a.errno) throw a.errno;
  }

  /** Ends every bridge: before a checkpoint no host socket may stay open. */
  async drop(): Promise<void> {
    await this.ask(this.id(), 'drop');
  }

  private id(): number {
    const id = this.nextId;
    this.nextId = this.nextId >= 0x7fffffff ? 1 : this.nextId + 1;
    return id;
  }

  private ask(id: number, request: string): Promise<Answer> {
    if (!this.alive) return Promise.resolve({ word: 'error', errno: errnoError(32) });
    const answer = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    this.write(id, request);
    return answer;
  }

  private write(id: number, request: string): void {
    if (this.alive) this.child.stdin!.write(`${id} ${request}\n`);
  }

  private read(text: string): void {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) {
      const [id, word, errno] = line.split(' ');
      const resolve = this.waiting.get(Number(id));
      if (!resolve || !word) continue;
      this.waiting.delete(Number(id));
      resolve({ word, errno: word === 'error' ? errnoError(Number(errno)) : undefined });
    }
  }

  private die(): void {
    if (!this.alive) return;
    this.alive = false;
    current = null;
    for (const resolve of this.waiting.values()) resolve({ word: 'error', errno: errnoError(32) });
    this.waiting.clear();
  }
}

let current: Relay | null = null;

/** Starts the relay if its binary is there; call once, at the agent's start. */
export function startRelay(path = process.env.WARREN_RELAY ?? DEFAULT_RELAY_PATH): void {
  try {
    accessSync(path, fsConstants.X_OK);
  } catch {
    return;
  }
  const child = spawn(path, [], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { WARREN_DATA_CHANNEL: DATA_SOCKET },
  });
  current = new Relay(child);
}

/** The running relay, or null: callers then move the bytes themselves. */
export function relay(): Relay | null {
  return current?.running ? current : null;
}
