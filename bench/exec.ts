/** The exec round trip row: `true` through the API beside `runsc exec true`. */
import type { Harness } from './harness';
import { timed, type Row } from './stats';

const EXECS = Number(process.env.BENCH_EXECS ?? 40);

/** `sbx` is a running Warren sandbox, `dsbx` a container started directly. */
export async function execRoundTripRow(
  { p, direct }: Harness,
  sbx: string,
  dsbx: string,
): Promise<Row> {
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
  return row;
}
