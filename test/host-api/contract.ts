/**
 * The HostApi contract: what every host agent does, whatever carries the
 * calls. One suite, registered against a factory: today the in-process agent
 * (test/e2e/host-api-local.test.ts); an agent behind a network transport runs
 * the same checks. Each check makes and removes its own sandboxes.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { newId, type ExecEvent, type HostApi, type HostCreateRequest } from '@warren/protocol';
import { waitFor } from '../wait';
import { hostApiChecks2 } from './contract-lifecycle';
import { hostApiUsageChecks } from './contract-usage';

/** Opens an agent on `home`: the same home twice is the same host after a restart. */
export type OpenHost = (home: string) => Promise<HostApi>;

export interface ContractFixture {
  open: OpenHost;
  /** A fresh state directory for one agent, removed by `cleanup`. */
  home(): string;
  cleanup(): Promise<void>;
  /** A ready template every check may restore from. */
  template: string;
}

export interface Ctx {
  host: HostApi;
  fx: ContractFixture;
  /** Creates a sandbox that is destroyed when the check ends, whatever happens. */
  create(over?: Partial<HostCreateRequest>): Promise<string>;
}

export async function collect(events: AsyncIterable<ExecEvent>): Promise<{
  stdout: string;
  stderr: string;
  exit: Extract<ExecEvent, { type: 'exit' }> | null;
  pid: number;
}> {
  const out = { stdout: '', stderr: '', exit: null as Extract<ExecEvent, { type: 'exit' }> | null };
  let pid = 0;
  for await (const e of events) {
    if (e.type === 'start') pid = e.pid;
    else if (e.type === 'stdout') out.stdout += e.data;
    else if (e.type === 'stderr') out.stderr += e.data;
    else if (e.type === 'exit') out.exit = e;
  }
  return { ...out, pid };
}

export async function sh(host: HostApi, id: string, line: string) {
  return collect(await host.processes.exec(id, { cmd: '/bin/sh', args: ['-c', line] }));
}

/** What a host holds (memory used, which moves by itself, left out). */
export async function holdings(host: HostApi) {
  const { memory_used_mb, ...held } = await host.capacity();
  assert.ok(memory_used_mb === undefined || memory_used_mb >= 0);
  return held;
}

export async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: { code?: string }) => {
    assert.equal(err.code, code);
    return true;
  });
}

export function hostApiContract(name: string, fx: ContractFixture): void {
  describe(`HostApi contract: ${name}`, { timeout: 600_000 }, () => {
    const made = new Set<string>();
    const ctx = { fx } as Ctx;
    before(async () => {
      ctx.host = await fx.open(fx.home());
      ctx.create = async (over = {}) => {
        const id = newId('sandbox');
        made.add(id);
        await ctx.host.sandboxes.create({
          id,
          template: fx.template,
          cpu: 1,
          memory_mb: 256,
          disk_mb: 256,
          env: {},
          ...over,
        });
        return id;
      };
    });
    afterEach(async () => {
      for (const id of made) await ctx.host.sandboxes.destroy(id).catch(() => undefined);
      made.clear();
    });
    after(async () => {
      await ctx.host.close({ destroy: true });
      await fx.cleanup();
    });

    it('reports what it is and counts what it holds', async () => {
      const info = await ctx.host.info();
      assert.equal(info.id, ctx.host.id);
      assert.ok(info.driver && info.runtime_version);
      assert.equal(typeof info.capabilities.checkpoint, 'boolean');
      const before = await holdings(ctx.host);
      const id = await ctx.create({ memory_mb: 300 });
      const during = await holdings(ctx.host);
      assert.equal(during.memory_reserved_mb, before.memory_reserved_mb + 300);
      assert.equal(during.sandboxes, before.sandboxes + 1);
      await ctx.host.sandboxes.destroy(id);
      assert.deepEqual(await holdings(ctx.host), before);
    });

    it('lists templates without host paths', async () => {
      const list = await ctx.host.templates.list();
      const t = list.find((x) => x.name === fx.template);
      assert.ok(t, 'the template is listed');
      assert.equal(t.state, 'ready');
      for (const key of ['rootfs', 'snapshot', 'guest_key']) assert.ok(!(key in t), key);
      assert.equal(await ctx.host.templates.get('no-such-template'), null);
    });

    it('refuses what does not fit and leaves nothing behind', async () => {
      const before = await holdings(ctx.host);
      const t = (await ctx.host.templates.get(fx.template))!;
      assert.ok(
        before.memory_budget_mb - before.memory_reserved_mb < t.max_memory_mb,
        'the fixture gives the agent less memory than the template allows',
      );
      const id = newId('sandbox');
      await rejectsWith(
        ctx.host.sandboxes.create({
          id,
          template: fx.template,
          cpu: 1,
          memory_mb: before.memory_budget_mb - before.memory_reserved_mb + 1,
          env: {},
        }),
        'INSUFFICIENT_CAPACITY',
      );
      await rejectsWith(
        ctx.host.sandboxes.create({
          id,
          template: 'no-such-template',
          cpu: 1,
          memory_mb: 256,
          env: {},
        }),
        'TEMPLATE_NOT_FOUND',
      );
      const bad = { id, template: fx.template, env: {} };
      await rejectsWith(ctx.host.sandboxes.create({ ...bad, cpu: 1000 }), 'RESOURCES_OUT_OF_RANGE');
      await rejectsWith(
        ctx.host.sandboxes.create({ ...bad, disk_mb: 1 }),
        'RESOURCES_OUT_OF_RANGE',
      );
      await rejectsWith(
        ctx.host.sandboxes.create({
          ...bad,
          network: { policy: { mode: 'restricted', allow: ['not a host!'] }, secrets: [] },
        }),
        'INVALID_NETWORK_POLICY',
      );
      assert.deepEqual(await holdings(ctx.host), before);
      await rejectsWith(sh(ctx.host, id, 'true'), 'SANDBOX_NOT_RUNNING');
    });

    it('sizes a sandbox from its template unless the request says otherwise', async () => {
      const t = (await ctx.host.templates.get(fx.template))!;
      const id = newId('sandbox');
      made.add(id);
      const { phases_ms, ...size } = await ctx.host.sandboxes.create({
        id,
        template: fx.template,
        env: {},
      });
      assert.deepEqual(size, {
        cpu: t.default_cpu,
        memory_mb: t.default_memory_mb,
        disk_mb: t.default_disk_mb,
      });
      // Where the create's time went, phase by phase, in milliseconds.
      assert.deepEqual(Object.keys(phases_ms), [
        'prepare',
        'disk',
        'restore',
        'connect',
        'hello',
        'finish',
      ]);
      for (const ms of Object.values(phases_ms)) assert.ok(Number.isFinite(ms) && ms >= 0, `${ms}`);
      const other = newId('sandbox');
      made.add(other);
      const asked = { cpu: 1, memory_mb: 200, disk_mb: 300 };
      const { phases_ms: _, ...got } = await ctx.host.sandboxes.create({
        id: other,
        template: fx.template,
        env: {},
        ...asked,
      });
      assert.deepEqual(got, asked);
      await ctx.host.sandboxes.destroy(id);
      await ctx.host.sandboxes.destroy(other);
    });

    it('execs with env, output and exit code; start errors throw before any event', async () => {
      const id = await ctx.create({ env: { GREETING: 'hello' } });
      const r = await sh(ctx.host, id, 'echo $GREETING; echo oops >&2; exit 3');
      assert.equal(r.stdout, 'hello\n');
      assert.equal(r.stderr, 'oops\n');
      assert.equal(r.exit?.exit_code, 3);
      assert.ok(r.pid > 0);
      await rejectsWith(
        ctx.host.processes.exec(id, { cmd: 'true', args: [], cwd: '/no/such/dir' }),
        'CWD_NOT_FOUND',
      );
    });

    it('an aborted exec kills its process', async () => {
      const id = await ctx.create();
      const stop = new AbortController();
      const events = await ctx.host.processes.exec(
        id,
        { cmd: '/bin/sh', args: ['-c', 'echo $$; exec sleep 600'] },
        { signal: stop.signal },
      );
      let pid = '';
      for await (const e of events) {
        if (e.type === 'stdout') {
          pid = e.data.trim();
          stop.abort();
        }
      }
      assert.match(pid, /^\d+$/);
      await waitFor(async () => (await sh(ctx.host, id, `test -e /proc/${pid}`)).exit?.exit_code, {
        what: `process ${pid} to be gone after the abort`,
      });
    });

    it('runs background processes: list, stdin, output replay, signal', async () => {
      const id = await ctx.create();
      const p = await ctx.host.processes.start(id, { cmd: 'cat', args: [] });
      assert.equal(p.state, 'running');
      assert.ok((await ctx.host.processes.list(id)).some((x) => x.pid === p.pid));
      await ctx.host.processes.writeStdin(id, p.pid, { data: 'line one\n' });
      await waitFor(
        async () =>
          (await collect(await ctx.host.processes.output(id, p.pid, { follow: false }))).stdout,
        { what: 'cat to echo its input' },
      );
      await ctx.host.processes.signal(id, p.pid, { signal: 'SIGTERM' });
      await waitFor(async () => (await ctx.host.processes.get(id, p.pid)).state === 'exited', {
        what: 'cat to stop on SIGTERM',
      });
      await rejectsWith(ctx.host.processes.get(id, 999_999), 'PROCESS_NOT_FOUND');
    });

    it('moves files as streams, byte for byte, and manages paths', async () => {
      const id = await ctx.create();
      const data = randomBytes(3 * 1024 * 1024 + 17);
      const w = await ctx.host.files.write(id, '/tmp/c/data.bin', Readable.from([data]));
      assert.deepEqual(w, { path: '/tmp/c/data.bin', size: data.length });
      const { size, stream } = await ctx.host.files.read(id, '/tmp/c/data.bin');
      assert.equal(size, data.length);
      const hash = createHash('sha256');
      for await (const chunk of stream) hash.update(chunk as Buffer);
      assert.equal(hash.digest('hex'), createHash('sha256').update(data).digest('hex'));
      await ctx.host.files.mkdir(id, { path: '/tmp/c/sub', parents: true });
      await ctx.host.files.rename(id, { from: '/tmp/c/data.bin', to: '/tmp/c/sub/moved.bin' });
      assert.equal((await ctx.host.files.stat(id, '/tmp/c/sub/moved.bin')).size, data.length);
      const names = (await ctx.host.files.list(id, '/tmp/c')).items.map((f) => f.name);
      assert.deepEqual(names, ['sub']);
      await ctx.host.files.remove(id, '/tmp/c', true);
      await rejectsWith(ctx.host.files.stat(id, '/tmp/c'), 'FILE_NOT_FOUND');
    });

    it('opens connections to ports in the sandbox', async () => {
      const id = await ctx.create();
      const server =
        'import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n' +
        "s.bind(('127.0.0.1',7001));s.listen()\nwhile True:\n c,_=s.accept();c.sendall(c.recv(100).upper());c.close()";
      await ctx.host.processes.start(id, { cmd: 'python3', args: ['-c', server] });
      const conn = await waitFor(() => ctx.host.sandboxes.openPort(id, 7001).catch(() => null), {
        what: 'the echo server to listen',
      });
      conn.write('ping');
      const chunks: Buffer[] = [];
      for await (const c of conn) chunks.push(c as Buffer);
      assert.equal(Buffer.concat(chunks).toString(), 'PING');
      await rejectsWith(ctx.host.sandboxes.openPort(id, 7999), 'PORT_NOT_LISTENING');
    });

    it('opens connections to Unix sockets in the sandbox', async () => {
      const id = await ctx.create();
      const path = '/tmp/echo.sock';
      const server =
        `import socket\ns=socket.socket(socket.AF_UNIX);s.bind('${path}');s.listen()\n` +
        'while True:\n c,_=s.accept();c.sendall(c.recv(100)[::-1]);c.close()';
      await ctx.host.processes.start(id, { cmd: 'python3', args: ['-c', server] });
      const open = () => ctx.host.sandboxes.openPort(id, 0, { unix: path });
      const conn = await waitFor(() => open().catch(() => null), {
        what: 'the Unix socket server to listen',
      });
      conn.write('abc');
      const chunks: Buffer[] = [];
      for await (const c of conn) chunks.push(c as Buffer);
      assert.equal(Buffer.concat(chunks).toString(), 'cba');
      await rejectsWith(
        ctx.host.sandboxes.openPort(id, 0, { unix: '/tmp/nothing.sock' }),
        'PORT_NOT_LISTENING',
      );
      await rejectsWith(
        ctx.host.sandboxes.openPort(id, 0, { unix: 'relative.sock' }),
        'INVALID_REQUEST',
      );
      await rejectsWith(
        ctx.host.sandboxes.openPort(id, 0, { unix: `/tmp/${'x'.repeat(120)}` }),
        'INVALID_REQUEST',
      );
    });

    hostApiChecks2(ctx);
    hostApiUsageChecks(ctx);
  });
}
