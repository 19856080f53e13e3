/**
 * `node --import tsx bench/pty.ts`: terminal round trips through Warren (a
 * WebSocket viewer of a PTY session: API server, host agent, guest agent,
 * spawner, the sandbox's terminal) beside `runsc exec` of an interactive `sh`
 * through a pipe, in the same run. Two Warren rows:
 *
 * - keystroke echo: one byte sent, until its echo arrives (the terminal's line
 *   discipline echoes it: no program in the sandbox runs);
 * - newline to prompt: Enter sent to `sh`, until its next prompt arrives (the
 *   shell runs), the same work as the direct side's round trip.
 *
 * The direct side cannot echo a keystroke (a pipe has no terminal): it sends
 * Enter to `runsc exec <id> sh -i` and waits for the prompt. BENCH_PTY_ROUNDS
 * sets the number of samples (default 100).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { WebSocket } from 'ws';
import { RUNSC, startTestPlatform } from '../test/fixture';
import { Direct } from './direct';
import { now, printTable, type Row } from './stats';

const ROUNDS = Number(process.env.BENCH_PTY_ROUNDS ?? 100);
const PROMPT = /[#$] $/;

/** Sends `input`, then resolves with the ms until the output since then matches `done`. */
function roundTrip(
  send: () => void,
  output: { on(l: (s: string) => void): void; off(l: (s: string) => void): void },
  done: (seen: string) => boolean,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no answer; saw ${JSON.stringify(seen)}`)),
      10_000,
    );
    const started = now();
    const listener = (s: string) => {
      seen += s;
      if (!done(seen)) return;
      clearTimeout(timer);
      output.off(listener);
      resolve(now() - started);
    };
    output.on(listener);
    send();
  });
}

/** Text listeners over a stream of chunks. */
function fanOut() {
  const listeners = new Set<(s: string) => void>();
  return {
    emit: (s: string) => listeners.forEach((l) => l(s)),
    on: (l: (s: string) => void) => void listeners.add(l),
    off: (l: (s: string) => void) => void listeners.delete(l),
  };
}

async function main(): Promise<void> {
  const p = await startTestPlatform();
  const direct = new Direct(mkdtempSync('/tmp/wb-pty-'));
  let dsbx: string | null = null;
  try {
    const sbx = await p.json<{ id: string }>('/v1/sandboxes', {
      method: 'POST',
      json: { template: 'base' },
    });
    const pty = await p.json<{ pty_id: string }>(`/v1/sandboxes/${sbx.id}/pty`, {
      method: 'POST',
      json: { cols: 80, rows: 24, cmd: '/bin/sh' },
    });
    const url = `${p.url.replace(/^http/, 'ws')}/v1/sandboxes/${sbx.id}/pty/${pty.pty_id}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${p.adminToken}` } });
    const wOut = fanOut();
    ws.on('message', (d: Buffer, binary: boolean) => binary && wOut.emit(d.toString()));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const typed = (s: string) => () => ws.send(Buffer.from(s));

    [, dsbx] = await direct.restoreAndExec(p);
    const sh = spawn(RUNSC, ['--root', direct.root, '--network=none', 'exec', dsbx, 'sh', '-i'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const dOut = fanOut();
    for (const s of [sh.stdout, sh.stderr] as Readable[])
      s.on('data', (d: Buffer) => dOut.emit(d.toString()));
    const dIn = sh.stdin as Writable;
    const enter = () => dIn.write('\n');

    const echo: Row = {
      name: 'PTY keystroke echo (1 byte)',
      unit: 'ms',
      warren: [],
      direct: [],
      directName: 'runsc exec sh -i, Enter to prompt (pipe)',
    };
    const prompt: Row = { ...echo, name: 'PTY Enter to prompt (sh)', warren: [], direct: [] };
    // Warm both paths (the first prompt, page cache).
    await roundTrip(typed('\n'), wOut, (s) => PROMPT.test(s));
    await roundTrip(enter, dOut, (s) => PROMPT.test(s));
    for (let i = 0; i < ROUNDS; i++) {
      echo.warren.push(await roundTrip(typed('a'), wOut, (s) => s.includes('a')));
      // Erase it again (Ctrl-U), so the line stays empty.
      await roundTrip(typed('\u0015'), wOut, (s) => s.length > 0);
      prompt.warren.push(await roundTrip(typed('\n'), wOut, (s) => PROMPT.test(s)));
      const d = await roundTrip(enter, dOut, (s) => PROMPT.test(s));
      echo.direct.push(d);
      prompt.direct.push(d);
    }
    ws.close();
    dIn.end();
    sh.kill('SIGKILL');
    printTable([echo, prompt]);
  } finally {
    if (dsbx) await direct.driver.destroy(dsbx).catch(() => undefined);
    rmSync(direct.dir, { recursive: true, force: true });
    await p.stop();
  }
}

await main();
