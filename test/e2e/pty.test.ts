/**
 * Terminal sessions on a real platform (gVisor) with real WebSocket clients:
 * typing and output, resize, scrollback replay, several viewers, pause/resume
 * and hibernate/wake, exit frames, query tokens, other organisations, kill,
 * bad input; and `warren sandbox shell` driven through tmux as a person would.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { Sandbox } from '@warren/sdk';
import { createSandbox, exec, startTestPlatform, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';
import { runShellInTmux } from './pty-tmux';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A WebSocket viewer: everything it received, as text, and the JSON frames. */
class Viewer {
  out = '';
  /** Terminal bytes received. */
  bytes = 0;
  readonly frames: Json[] = [];
  closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        this.out += data.toString('utf8');
        this.bytes += data.length;
      } else this.frames.push(JSON.parse(data.toString('utf8')));
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /** Opens; rejects with `HTTP <status> <body>` when the upgrade is refused. */
  static open(url: string, token?: string): Promise<Viewer> {
    const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    const viewer = new Viewer(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(viewer));
      ws.on('error', reject); // later errors end in 'close', which `closed` reports
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => reject(new Error(`HTTP ${res.statusCode} ${body}`)));
      });
    });
  }

  /** The output offset reached (the first frame says where the replay started). */
  get offset(): number {
    return (this.frames.find((f) => f.type === 'attached')?.offset as number) + this.bytes;
  }

  type(text: string): void {
    this.ws.send(Buffer.from(text));
  }

  async see(pattern: RegExp, what = String(pattern)): Promise<void> {
    await waitFor(() => pattern.test(this.out), {
      what: () => `${what} in ${JSON.stringify(this.out.slice(-300))}`,
      timeoutMs: 15_000,
    });
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }
}

describe('terminal sessions (real gVisor, real WebSockets)', () => {
  let p: TestPlatform;
  let id: string;
  let keyB: string;
  const viewers: Viewer[] = [];
  const wsUrl = (ptyId: string, query = '') =>
    `${p.url.replace(/^http/, 'ws')}/v1/sandboxes/${id}/pty/${ptyId}${query}`;
  const open = async (ptyId: string, token: string | null = p.adminToken, query = '') => {
    const v = await Viewer.open(wsUrl(ptyId, query), token ?? undefined);
    viewers.push(v);
    return v;
  };
  const create = (body: Json = { cols: 80, rows: 24 }) =>
    p.json(`/v1/sandboxes/${id}/pty`, { method: 'POST', json: body });
  const state = async () => (await p.json(`/v1/sandboxes/${id}`)).state as string;

  before(async () => {
    p = await startTestPlatform();
    id = await createSandbox(p, { template: 'base' });
    const org = await p.json('/v1/orgs', { method: 'POST', json: { name: 'pty-b' } });
    keyB = (
      await p.json('/v1/keys', {
        method: 'POST',
        json: { name: 'b', scopes: ['admin'], org_id: org.id },
      })
    ).key;
  });
  after(async () => {
    for (const v of viewers) v.ws.terminate();
    await p?.stop();
  });

  let shell: Json;

  it('types, echoes, resizes; a second viewer sees the same; reconnect replays', async () => {
    shell = await create();
    assert.match(shell.pty_id, /^pty_/);
    assert.equal(shell.state, 'running');
    const a = await open(shell.pty_id);
    a.type('export KEEP=kept-$((40+2)); echo hi-$((6*7))\n');
    await a.see(/hi-42/);
    a.ws.send(JSON.stringify({ type: 'resize', cols: 100, rows: 40 }));
    await waitFor(
      async () => (await p.json(`/v1/sandboxes/${id}/pty/${shell.pty_id}`)).cols === 100,
      {
        what: 'the resize',
      },
    );
    a.type('stty size\n');
    await a.see(/40 100/);
    const resized = await p.json(`/v1/sandboxes/${id}/pty/${shell.pty_id}/resize`, {
      method: 'POST',
      json: { cols: 120, rows: 50 },
    });
    assert.equal(resized.cols, 120);
    a.type('stty size\n');
    await a.see(/50 120/);
    // The terminal is the shell's controlling terminal: Ctrl-C interrupts the foreground job.
    a.type('sleep 600\n');
    const sleeping = { cmd: 'sh', args: ['-c', 'cat /proc/[0-9]*/comm | grep -qx sleep'] };
    await waitFor(async () => (await exec(p, id, sleeping)).exit_code === 0, {
      what: 'the sleep to run',
    });
    a.type('\u0003');
    a.type('echo after-$((1+1))\n');
    await a.see(/after-2/);

    const b = await open(shell.pty_id);
    await b.see(/hi-42/, 'the scrollback replayed to a second viewer');
    b.type('echo both-$((1+1))\n');
    await a.see(/both-2/);
    await b.see(/both-2/);
    const listed = await p.json(`/v1/sandboxes/${id}/pty`);
    assert.equal(listed.items.find((s: Json) => s.pty_id === shell.pty_id)?.viewers, 2);

    await a.close();
    await b.close();
    const c = await open(shell.pty_id);
    await c.see(/hi-42[\s\S]*both-2/, 'the scrollback after a reconnect');
    // An attached viewer keeps the sandbox from being idle, until it leaves.
    assert.equal(p.context.sandboxes.hasOperations(id), true);
    await c.close();
    await waitFor(() => !p.context.sandboxes.hasOperations(id), {
      what: 'the viewer to count off',
    });
    // A viewer that says how far it got is replayed only the rest.
    const d = await open(shell.pty_id);
    d.type('echo later-$((3+4))\n');
    await d.see(/later-7/);
    await d.close();
    const e = await open(shell.pty_id, p.adminToken, `?since=${c.offset}`);
    await e.see(/later-7/);
    assert.doesNotMatch(e.out, /hi-42/);
    await e.close();
  });

  it('survives pause/resume and hibernate/wake: the connection closes, a reconnect carries on', async () => {
    const v = await open(shell.pty_id);
    assert.equal((await p.api(`/v1/sandboxes/${id}/pause`, { method: 'POST' })).status, 200);
    assert.equal((await v.closed).code, 1012);
    assert.equal(await state(), 'paused');
    const after = await open(shell.pty_id); // attaching resumes the sandbox
    assert.equal(await state(), 'running');
    after.type('echo "$KEEP"-resumed\n');
    await after.see(/kept-42-resumed/);

    assert.equal((await p.api(`/v1/sandboxes/${id}/hibernate`, { method: 'POST' })).status, 200);
    assert.equal((await after.closed).code, 1012);
    assert.equal(await state(), 'hibernated');
    const woken = await open(shell.pty_id);
    await woken.see(/kept-42-resumed/, 'the scrollback after a wake');
    woken.type('echo "$KEEP"-woken\n');
    await woken.see(/kept-42-woken/);
    await woken.close();
  });

  it('the exit of the process is a frame with its code, then the close', async () => {
    const v = await open(shell.pty_id);
    v.type('exit 3\n');
    assert.deepEqual(await v.closed, { code: 1000, reason: 'exited' });
    assert.deepEqual(v.frames.at(-1), { type: 'exit', exit_code: 3, signal: null });
    const info = await p.json(`/v1/sandboxes/${id}/pty/${shell.pty_id}`);
    assert.equal(info.state, 'exited');
    assert.equal(info.exit_code, 3);
  });

  it('a query token opens one WebSocket; a used, wrong or expired one is refused', async () => {
    const s = await create({ cols: 80, rows: 24, cmd: '/bin/sh' });
    const issue = (ttl?: number) =>
      p.json(`/v1/sandboxes/${id}/pty/${s.pty_id}/token`, {
        method: 'POST',
        json: ttl ? { ttl_seconds: ttl } : {},
      });
    const t = await issue();
    assert.match(t.token, /^wpty_/);
    const v = await open(s.pty_id, null, `?token=${t.token}`);
    v.type('echo tok-$((2*3))\n');
    await v.see(/tok-6/);
    await v.close();
    await assert.rejects(open(s.pty_id, null, `?token=${t.token}`), /HTTP 401/);
    await assert.rejects(open(s.pty_id, null, '?token=wpty_wrong'), /HTTP 401/);
    await assert.rejects(open(s.pty_id, null), /HTTP 401/);
    const short = await issue(1);
    await waitFor(() => Date.now() > Date.parse(short.expires_at), { what: 'the expiry' });
    await assert.rejects(open(s.pty_id, null, `?token=${short.token}`), /HTTP 401.*expired/);
    // A token is bound to its session.
    const other = await create({ cols: 80, rows: 24, cmd: '/bin/sh' });
    const forOther = await p.json(`/v1/sandboxes/${id}/pty/${other.pty_id}/token`, {
      method: 'POST',
    });
    await assert.rejects(open(s.pty_id, null, `?token=${forOther.token}`), /HTTP 401/);
  });

  it("another organisation's key gets 404 for the sessions and their WebSocket", async () => {
    const s = await create({ cols: 80, rows: 24, cmd: '/bin/sh' });
    const asB = (path: string, init: Json = {}) =>
      p.api(`/v1/sandboxes/${id}/pty${path}`, { token: keyB, ...init });
    assert.equal((await asB('')).status, 404);
    assert.equal((await asB(`/${s.pty_id}`)).status, 404);
    assert.equal((await asB(`/${s.pty_id}`, { method: 'DELETE' })).status, 404);
    assert.equal((await asB(`/${s.pty_id}/token`, { method: 'POST', json: {} })).status, 404);
    assert.equal((await asB('', { method: 'POST', json: { cols: 80, rows: 24 } })).status, 404);
    await assert.rejects(open(s.pty_id, keyB), /HTTP 404.*SANDBOX_NOT_FOUND/);
  });

  it('bad input gets typed errors; kill ends the session', async () => {
    for (const body of [{ cols: 0, rows: 24 }, { cols: 80 }, { cols: 80, rows: 5000 }]) {
      const res = await p.api(`/v1/sandboxes/${id}/pty`, { method: 'POST', json: body });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    const missing = await p.api(`/v1/sandboxes/${id}/pty/pty_nosuchsession`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as Json).error.code, 'PTY_NOT_FOUND');
    await assert.rejects(open('pty_nosuchsession'), /HTTP 404.*PTY_NOT_FOUND/);
    const badCmd = await p.api(`/v1/sandboxes/${id}/pty`, {
      method: 'POST',
      json: { cols: 80, rows: 24, cmd: 'no-such-program' },
    });
    assert.equal(badCmd.status, 400);

    const s = await create({ cols: 80, rows: 24, cmd: '/bin/sh' });
    const v = await open(s.pty_id);
    v.ws.send('not json');
    v.ws.send(JSON.stringify({ type: 'resize', cols: -1, rows: 2 }));
    v.ws.send(JSON.stringify({ type: 'dance' }));
    const errorFrames = () => v.frames.filter((f: Json) => f.type === 'error');
    await waitFor(() => errorFrames().length >= 3, { what: 'three error frames' });
    assert.deepEqual(
      errorFrames().map((f: Json) => f.code),
      ['INVALID_JSON', 'INVALID_REQUEST', 'INVALID_REQUEST'],
    );
    v.type('echo still-$((5+5))\n');
    await v.see(/still-10/);
    v.ws.send(Buffer.alloc(1024 * 1024 + 1, 0x61));
    assert.equal((await v.closed).code, 1009);
    assert.equal(v.frames.at(-1).code, 'PAYLOAD_TOO_LARGE');

    const w = await open(s.pty_id);
    assert.equal(
      (await p.api(`/v1/sandboxes/${id}/pty/${s.pty_id}`, { method: 'DELETE' })).status,
      204,
    );
    assert.equal((await w.closed).code, 1000);
    assert.equal(w.frames.at(-1).signal, 'SIGKILL');
    assert.equal((await p.api(`/v1/sandboxes/${id}/pty/${s.pty_id}`)).status, 404);
    assert.equal(
      (await p.api(`/v1/sandboxes/${id}/pty/${s.pty_id}`, { method: 'DELETE' })).status,
      404,
    );
  });

  it('the SDK: create, connect, write, resize, list, token, kill', async () => {
    const sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const s = await sbx.pty.create({ cols: 90, rows: 30, cmd: '/bin/sh' });
    let out = '';
    let exit: { exitCode: number; signal: string | null } | null = null;
    const term = await sbx.pty.connect(s.pty_id, {
      onData: (b) => (out += b.toString()),
      onExit: (e) => (exit = e),
    });
    term.write('echo sdk-$((8*8)); stty size\n');
    await waitFor(() => /sdk-64/.test(out) && /30 90/.test(out), { what: () => out });
    term.resize(70, 20);
    await waitFor(async () => (await sbx.pty.get(s.pty_id)).cols === 70, { what: 'the resize' });
    assert.equal((await sbx.pty.resize(s.pty_id, { cols: 71, rows: 21 })).rows, 21);
    assert.ok((await sbx.pty.list()).some((x) => x.pty_id === s.pty_id));
    assert.match(
      (await sbx.pty.token(s.pty_id, { ttlSeconds: 5 })).websocket_path,
      /\?token=wpty_/,
    );
    await sbx.pty.kill(s.pty_id);
    assert.equal((await term.closed).code, 1000);
    assert.equal(exit!.signal, 'SIGKILL');
    await assert.rejects(sbx.pty.connect(s.pty_id), { code: 'PTY_NOT_FOUND' });
  });

  it('`warren sandbox shell` in tmux: a person types, sees the answer, survives a pause, gets the exit code', async () => {
    // A pause in the middle ends the CLI's connection; it attaches again, which resumes the sandbox.
    const { screen, exitCode } = await runShellInTmux(p, id, async () => {
      assert.equal((await p.api(`/v1/sandboxes/${id}/pause`, { method: 'POST' })).status, 200);
    });
    assert.match(screen, /hi-42/);
    assert.equal(exitCode, 3);
  });
});
