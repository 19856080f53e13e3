/** File transfer rows: upload and download of a large file, beside runsc exec with a pipe. */
import { Readable } from 'node:stream';
import type { Harness } from './harness';
import { timed, type Row } from './stats';

const FILE_MB = 100;
const FILE_RUNS = Number(process.env.BENCH_FILE_RUNS ?? 3);

function bytes(mb: number): Readable {
  const chunk = Buffer.alloc(1024 * 1024, 7);
  return Readable.from(
    (function* () {
      for (let i = 0; i < mb; i++) yield chunk;
    })(),
  );
}

/** `sbx` is a running Warren sandbox, `dsbx` a container started directly. */
export async function fileRows({ p, direct }: Harness, sbx: string, dsbx: string): Promise<Row[]> {
  const up: Row = {
    name: `${FILE_MB} MB upload`,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc exec -i sh -c "cat > file"',
  };
  const down: Row = {
    name: `${FILE_MB} MB download`,
    unit: 'ms',
    warren: [],
    direct: [],
    directName: 'runsc exec cat file, stdout read by the bench',
  };
  for (let i = 0; i < FILE_RUNS; i++) {
    up.warren.push(
      (
        await timed(async () => {
          const res = await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`, {
            method: 'PUT',
            body: Readable.toWeb(bytes(FILE_MB)) as ReadableStream,
            headers: { 'content-type': 'application/octet-stream' },
            duplex: 'half',
          } as RequestInit);
          await res.json();
        })
      )[0],
    );
    down.warren.push(
      (
        await timed(async () => {
          const res = await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`);
          for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>) void _;
        })
      )[0],
    );
    up.direct.push(
      (
        await timed(() =>
          direct.runsc(['exec', dsbx, 'sh', '-c', 'cat > /tmp/big'], bytes(FILE_MB)),
        )
      )[0],
    );
    // The bench reads both downloads to the end, each from its own pipe or socket.
    down.direct.push(
      (await timed(() => direct.runsc(['exec', dsbx, 'cat', '/tmp/big'], undefined, true)))[0],
    );
    await p.api(`/v1/sandboxes/${sbx}/files?path=/tmp/big`, { method: 'DELETE' });
    await direct.runsc(['exec', dsbx, 'rm', '-f', '/tmp/big']);
  }
  return [up, down];
}
