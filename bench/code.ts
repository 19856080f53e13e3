/**
 * Code interpreter round trip: `runCode('1+1')` in a warm python context (a
 * Jupyter kernel that has already run code) beside `python3 -c 1+1` through
 * exec, on the same code-interpreter sandbox. The two take turns so a busy
 * moment falls on both alike. The first run (the kernel's start) is reported
 * on its own line. Run: node --import tsx bench/code.ts (BENCH_CODE_RUNS, default 100).
 */
import { Sandbox } from '@warren/sdk';
import { createSandbox, startTestPlatform } from '../test/fixture';
import { now, printTable } from './stats';

const RUNS = Number(process.env.BENCH_CODE_RUNS ?? 100);
const WARMUP = 10;

async function main(): Promise<void> {
  const p = await startTestPlatform();
  try {
    const id = await createSandbox(p, { template: 'code-interpreter' });
    const sbx = await Sandbox.connect(id, { apiUrl: p.url, apiKey: p.adminToken });
    const t0 = now();
    const first = await sbx.runCode('1+1');
    const coldMs = now() - t0;
    if (first.text !== '2') throw new Error(`runCode gave ${JSON.stringify(first)}`);
    const code = async () => {
      const exe = await sbx.runCode('1+1');
      if (exe.text !== '2') throw new Error(`runCode gave ${JSON.stringify(exe)}`);
    };
    const exec = async () => {
      const r = await p.json<{ stdout: string }>(`/v1/sandboxes/${id}/exec`, {
        method: 'POST',
        json: { cmd: 'python3', args: ['-c', 'print(1+1)'] },
      });
      if (r.stdout !== '2\n') throw new Error(`exec gave ${JSON.stringify(r)}`);
    };
    for (let i = 0; i < WARMUP; i++) {
      await code();
      await exec();
    }
    const viaCode: number[] = [];
    const viaExec: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      let t = now();
      await code();
      viaCode.push(now() - t);
      t = now();
      await exec();
      viaExec.push(now() - t);
    }
    console.log(`\nWarren code interpreter — ${RUNS} runs each, ${new Date().toISOString()}\n`);
    console.log(`first runCode (starts the kernel): ${coldMs.toFixed(0)} ms\n`);
    printTable([
      {
        name: "runCode('1+1'), warm python context",
        unit: 'ms',
        warren: viaCode,
        direct: viaExec,
        directName: 'exec python3 -c 1+1',
      },
    ]);
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  } finally {
    await p.stop();
  }
}

await main();
