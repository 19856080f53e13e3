/**
 * The code interpreter of the guest: one driver process (code/driver.py in the
 * guest bundle, started on first use) that holds every context of the sandbox
 * (Jupyter kernels for python, Node.js vm contexts, bash shells) and speaks
 * JSON lines on its stdin and stdout. This module keeps the driver, routes its
 * replies to the calls that wait for them and its events to the runs they
 * belong to, and keeps the default context of each language.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WarrenError, isErrorCode } from '@warren/protocol/errors';
import { GUEST_AGENT_DIR } from '@warren/protocol/guest';
import type { CodeContext, CodeEvent, CodeLanguage, CodeRunRequest } from '@warren/protocol';
import { resolveUser } from './users';

const TEMPLATE = 'code-interpreter';
const DEFAULT_TIMEOUT_MS = 300_000;

interface DriverContext {
  id: string;
  language: CodeLanguage;
  cwd: string | null;
  execution_count: number;
}

interface Reply {
  req: number;
  ok: boolean;
  code?: string;
  message?: string;
  context?: DriverContext;
  items?: DriverContext[];
}

type Listener = (e: CodeEvent) => void;

interface Driver {
  child: ChildProcess;
  pending: Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>;
  runs: Map<string, Listener>;
  ready: Promise<void>;
  stderr: string;
}

export interface CodeDefaults {
  env: () => NodeJS.ProcessEnv;
  cwd?: string;
  user?: string;
}

export interface CodeRun {
  executionId: string;
  /** Interrupts the run (a kernel interrupt); its end event still comes. */
  interrupt(): void;
}

function unavailable(what: string): WarrenError {
  return new WarrenError(
    'INTERPRETER_UNAVAILABLE',
    `${what}: create the sandbox from the ${TEMPLATE} template`,
  );
}

export class CodeInterpreter {
  private driver: Driver | null = null;
  private nextReq = 1;
  /** language -> id of its default context */
  private readonly defaults = new Map<CodeLanguage, string>();
  private readonly creating = new Map<CodeLanguage, Promise<DriverContext>>();

  constructor(
    private readonly settings: () => CodeDefaults,
    private readonly bundleDir = GUEST_AGENT_DIR,
  ) {}

  private async startDriver(): Promise<Driver> {
    const s = this.settings();
    const user = s.user !== undefined ? await resolveUser(s.user) : undefined;
    let cwd = s.cwd ?? user?.home ?? '/root';
    if (!(await stat(cwd).catch(() => null))?.isDirectory()) cwd = '/';
    const env: NodeJS.ProcessEnv = {
      ...s.env(),
      ...(user && { HOME: user.home, USER: user.name, LOGNAME: user.name }),
      PYTHONUNBUFFERED: '1',
    };
    const child = spawn('python3', [join(this.bundleDir, 'code/driver.py')], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(user && (user.uid !== 0 || user.gid !== 0) && { uid: user.uid, gid: user.gid }),
    });
    const driver: Driver = {
      child,
      pending: new Map(),
      runs: new Map(),
      stderr: '',
      ready: Promise.resolve(),
    };
    driver.ready = new Promise<void>((resolve, reject) => {
      child.once('error', (err: NodeJS.ErrnoException) => {
        reject(
          err.code === 'ENOENT'
            ? unavailable('this sandbox has no python3 to run the code interpreter')
            : new WarrenError('RUNTIME_ERROR', `cannot start the code interpreter: ${err.message}`),
        );
      });
      child.once('exit', (code, signal) => {
        reject(
          new WarrenError(
            'RUNTIME_ERROR',
            `the code interpreter exited (${signal ?? code}): ${driver.stderr.slice(-1000)}`,
          ),
        );
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (msg.ready === true) return resolve();
        this.dispatch(driver, msg);
      });
    });
    child.stderr!.on('data', (d: Buffer) => {
      driver.stderr = (driver.stderr + d.toString()).slice(-8000);
    });
    child.stdin!.on('error', () => undefined);
    child.once('exit', () => this.lost(driver));
    return driver;
  }

  private dispatch(driver: Driver, msg: Record<string, unknown>): void {
    if (typeof msg.req === 'number') {
      const p = driver.pending.get(msg.req);
      driver.pending.delete(msg.req);
      p?.resolve(msg as unknown as Reply);
      return;
    }
    if (typeof msg.exec === 'string') {
      const listener = driver.runs.get(msg.exec);
      const { exec, ...event } = msg;
      if (event.type === 'end') driver.runs.delete(exec);
      listener?.(event as unknown as CodeEvent);
    }
  }

  /** The driver went away: every call and run in flight ends, and every context is gone. */
  private lost(driver: Driver): void {
    if (this.driver === driver) this.driver = null;
    this.defaults.clear();
    const err = new WarrenError(
      'RUNTIME_ERROR',
      `the code interpreter exited: ${driver.stderr.slice(-1000)}`,
    );
    for (const p of driver.pending.values()) p.reject(err);
    driver.pending.clear();
    for (const listener of driver.runs.values()) {
      listener({ type: 'error', name: 'InterpreterExited', value: err.message, traceback: '' });
      listener({ type: 'end', execution_count: 0, duration_ms: 0, cancelled: null });
    }
    driver.runs.clear();
  }

  private async ensureDriver(): Promise<Driver> {
    if (!this.driver) this.driver = await this.startDriver();
    const driver = this.driver;
    try {
      await driver.ready;
    } catch (err) {
      if (this.driver === driver) this.driver = null;
      throw err;
    }
    return driver;
  }

  private async call(op: string, fields: Record<string, unknown>): Promise<Reply> {
    const driver = await this.ensureDriver();
    const req = this.nextReq++;
    const reply = await new Promise<Reply>((resolve, reject) => {
      driver.pending.set(req, { resolve, reject });
      driver.child.stdin!.write(JSON.stringify({ op, req, ...fields }) + '\n');
    });
    if (!reply.ok) {
      const code = isErrorCode(reply.code) ? reply.code : 'RUNTIME_ERROR';
      throw new WarrenError(code, reply.message ?? `code interpreter ${op} failed`);
    }
    return reply;
  }

  private view(c: DriverContext): CodeContext {
    return { ...c, default: this.defaults.get(c.language) === c.id };
  }

  async createContext(language: CodeLanguage, cwd?: string): Promise<CodeContext> {
    const id = `ctx_${randomBytes(10).toString('hex')}`;
    const reply = await this.call('create', { context: id, language, cwd });
    return this.view(reply.context!);
  }

  async listContexts(): Promise<CodeContext[]> {
    if (!this.driver) return [];
    return ((await this.call('list', {})).items ?? []).map((c) => this.view(c));
  }

  async restartContext(id: string): Promise<CodeContext> {
    this.checkId(id);
    return this.view((await this.call('restart', { context: id })).context!);
  }

  async deleteContext(id: string): Promise<void> {
    this.checkId(id);
    await this.call('delete', { context: id });
    for (const [lang, cid] of this.defaults) if (cid === id) this.defaults.delete(lang);
  }

  private checkId(id: string): void {
    if (!this.driver) throw new WarrenError('CONTEXT_NOT_FOUND', `no code context ${id}`);
  }

  private async defaultContext(language: CodeLanguage): Promise<DriverContext> {
    const known = this.defaults.get(language);
    if (known) {
      const c = (await this.listContexts()).find((x) => x.id === known);
      if (c) return c;
    }
    let pending = this.creating.get(language);
    if (!pending) {
      pending = this.call('create', { context: `ctx_default_${language}`, language }).then(
        (r) => r.context!,
      );
      this.creating.set(language, pending);
      void pending.then(
        (c) => {
          this.defaults.set(language, c.id);
          this.creating.delete(language);
        },
        () => this.creating.delete(language),
      );
    }
    return pending;
  }

  /** Starts a run; its events (start first, end last) go to `listener`. */
  async run(req: CodeRunRequest, listener: Listener): Promise<CodeRun> {
    let ctx: DriverContext;
    if (req.context_id !== undefined) {
      this.checkId(req.context_id);
      const found = (await this.listContexts()).find((c) => c.id === req.context_id);
      if (!found) throw new WarrenError('CONTEXT_NOT_FOUND', `no code context ${req.context_id}`);
      if (req.language !== undefined && req.language !== found.language)
        throw new WarrenError(
          'INVALID_REQUEST',
          `context ${found.id} is a ${found.language} context, not ${req.language}`,
        );
      ctx = found;
    } else {
      ctx = await this.defaultContext(req.language ?? 'python');
    }
    const driver = await this.ensureDriver();
    const executionId = `exe_${randomBytes(10).toString('hex')}`;
    // Events may arrive before the driver's reply is handled: held until start has gone out.
    let held: CodeEvent[] | null = [];
    driver.runs.set(executionId, (e) => (held ? held.push(e) : listener(e)));
    try {
      await this.call('run', {
        exec: executionId,
        context: ctx.id,
        code: req.code,
        timeout_ms: req.timeout_ms ?? DEFAULT_TIMEOUT_MS,
      });
    } catch (err) {
      driver.runs.delete(executionId);
      throw err;
    }
    listener({
      type: 'start',
      execution_id: executionId,
      context_id: ctx.id,
      language: ctx.language,
    });
    const early = held;
    held = null;
    for (const e of early) listener(e);
    return { executionId, interrupt: () => void this.interrupt(executionId).catch(() => {}) };
  }

  /** EXECUTION_NOT_FOUND when no run of that id is going on. */
  async interrupt(executionId: string): Promise<void> {
    if (!this.driver?.runs.has(executionId))
      throw new WarrenError('EXECUTION_NOT_FOUND', `no running execution ${executionId}`);
    await this.call('interrupt', { exec: executionId });
  }

  /** Stops the driver and every context (a reset of the sandbox's processes). */
  reset(): void {
    this.driver?.child.kill('SIGKILL');
    this.driver = null;
    this.defaults.clear();
  }
}
