/**
 * Egress throughput: a 100 MiB HTTP download from a server in a test network
 * namespace, by Python inside a sandbox through the egress path (guest proxy
 * port -> agent data socket -> host egress proxy -> server), beside the same
 * Python download run directly on the host to the same server. Also the same
 * through SOCKS5. Times are measured inside the Python client.
 * Run: node --import tsx bench/egress.ts (part of `npm run bench`).
 */
import { spawnSync } from 'node:child_process';
import { createSandbox, exec, startTestPlatform } from '../test/fixture';
import { startTestNet } from '../test/net/netns';
import { percentile, printTable, type Row } from './stats';

const MB = 100;
const RUNS = Number(process.env.BENCH_EGRESS_RUNS ?? 3);

const CLIENT = `
import socket, struct, sys, time, urllib.request
mode, host, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
n = 0
if mode == 'http':
    with urllib.request.urlopen(f'http://{host}/bytes?mb={mb}') as r:
        while True:
            b = r.read(1 << 20)
            if not b: break
            n += len(b)
else:
    s = socket.create_connection(('127.0.0.1', 1080))
    s.sendall(b'\\x05\\x01\\x00'); s.recv(2)
    s.sendall(b'\\x05\\x01\\x00\\x03' + bytes([len(host)]) + host.encode() + struct.pack('>H', 80))
    s.recv(10)
    s.sendall(f'GET /bytes?mb={mb} HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n'.encode())
    while True:
        b = s.recv(1 << 20)
        if not b: break
        n += len(b)
assert n >= mb << 20, n
print(time.perf_counter() - t)
`;

async function main(): Promise<void> {
  const net = await startTestNet(['bench.test']);
  const p = await startTestPlatform({ egressHostsFile: net.hostsFile });
  try {
    const id = await createSandbox(p, {
      template: 'base',
      memory_mb: 512,
      network: { mode: 'restricted', allow: ['bench.test:80'] },
    });
    const inSandbox = async (mode: string) => {
      const r = await exec(p, id, {
        cmd: 'python3',
        args: ['-c', CLIENT, mode, 'bench.test', String(MB)],
      });
      if (r.exit_code !== 0) throw new Error(r.stderr);
      return Number(r.stdout) * 1000;
    };
    const onHost = () => {
      const r = spawnSync('python3', ['-c', CLIENT, 'http', net.remoteAddress, String(MB)], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH },
      });
      if (r.status !== 0) throw new Error(r.stderr);
      return Number(r.stdout) * 1000;
    };
    const rows: Row[] = [
      { name: `${MB} MiB download via HTTP proxy`, unit: 'ms', warren: [], direct: [], directName: 'same client on the host, direct' },
      { name: `${MB} MiB download via SOCKS5`, unit: 'ms', warren: [], direct: [], directName: 'same client on the host, direct' },
    ]; // prettier-ignore
    await inSandbox('http'); // warm
    for (let i = 0; i < RUNS; i++) {
      rows[0]!.warren.push(await inSandbox('http'));
      rows[1]!.warren.push(await inSandbox('socks'));
      const d = onHost();
      rows[0]!.direct.push(d);
      rows[1]!.direct.push(onHost());
    }
    console.log(`\nWarren egress benchmark — ${new Date().toISOString()}\n`);
    printTable(rows);
    const mbps = (ms: number) => (MB / (ms / 1000)).toFixed(0);
    for (const r of rows) {
      const w = percentile(r.warren, 50);
      const d = percentile(r.direct, 50);
      console.log(
        `${r.name}: ${mbps(w)} MiB/s through the egress path, ${mbps(d)} MiB/s direct: ${(d / w).toFixed(2)} of direct (target at least 0.5)`,
      );
    }
    await p.api(`/v1/sandboxes/${id}`, { method: 'DELETE' });
  } finally {
    await p.stop();
    net.close();
  }
}

await main();
