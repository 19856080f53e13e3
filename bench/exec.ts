/**
 * The exec round trip row: `true` through the API beside `runsc exec true`;
 * and the floor under it: how long a process spawn of `true` takes inside the
 * sandbox itself (Python's posix_spawn and waitpid), in Warren's sandbox and
 * in the direct container.
 */
import { spawnSync } from 'node:child_process';
import { RUNSC } from '../test/fixture';
import type { Harness } from './harness';
import { timed, type Row } from './stats';

const EXECS = Number(process.env.BENCH_EXECS ?? 40);

/** Prints the milliseconds of each spawn-and-wait of /bin/true, as JSON. */
const SPAWN_FLOOR = `
import json, os, time
out = []
for _ in range(${EXECS}):
    t = time.perf_counter()
    pid = os.posix_spawn('/bin/true', ['true'], os.environ)
    os.waitpid(pid, 0)
    out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
`;

/** `sbx` is a running Warren sandbox, `dsbx` a container started directly. */
export async function execRoundTripRow(
  { p, direct }: Harness,
  sbx: string,
  dsbx: string,
): Promise<{ row: Row; floor: Row }> {
  const row: Row = {
    name: 'exec round trip of `true`',
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc exec true',
  };
  for (let i = 0; i < EXECS; i++) {
    row.warren.push(
      (
        await timed(() =>
          p.json(`/v1/sandboxes/${sbx}/exec`, { method: 'POST', json: { cmd: 'true' } }),
        )
      )[0],
    );
    row.direct.push((await timed(() => direct.runsc(['exec', dsbx, 'true'])))[0]);
  }
  const inWarren = await p.json<{ stdout: string }>(`/v1/sandboxes/${sbx}/exec`, {
    method: 'POST',
    json: { cmd: 'python3', args: ['-c', SPAWN_FLOOR] },
  });
  const inDirect = spawnSync(
    RUNSC,
    ['--root', direct.root, '--network=none', 'exec', dsbx, 'python3', '-c', SPAWN_FLOOR],
    { encoding: 'utf8' },
  );
  if (inDirect.status !== 0) throw new Error(`spawn floor: ${inDirect.stderr}`);
  const floor: Row = {
    name: 'spawn of `true` inside the sandbox (floor)',
    unit: 'ms',
    warren: JSON.parse(inWarren.stdout) as number[],
    direct: JSON.parse(inDirect.stdout) as number[],
    directName: 'the same inside the direct container',
  };
  return { row, floor };
}
