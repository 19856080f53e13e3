/**
 * A network namespace of a test's own, joined to the root namespace by a
 * veth pair on 10.213.<n>.0/30: the host side is .1 (an address of the host,
 * so the egress proxy must refuse it), the namespace side .2 (as far as the
 * sandbox's policy goes, a machine elsewhere). Servers started in it
 * (upstream.ts) play the outside world; nothing leaves the machine.
 * A test CA signs the HTTPS server's certificate, for the names given.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface TestNet {
  name: string;
  hostAddress: string;
  remoteAddress: string;
  dir: string;
  /** PEM of the CA that signed the HTTPS server's certificate. */
  caFile: string;
  /** A hosts file mapping the given names (see start()). */
  hostsFile: string;
  close(): void;
}

function sh(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function freeSubnet(): number {
  const used = execFileSync('ip', ['-4', 'addr'], { encoding: 'utf8' });
  for (let tries = 0; tries < 50; tries++) {
    const n = 1 + Math.floor(Math.random() * 250);
    if (!used.includes(`10.213.${n}.`)) return n;
  }
  throw new Error('no free 10.213.x.0/30 subnet');
}

/** Creates the namespace and starts the servers; `names` map to its address, `hostNames` to the host side. */
export async function startTestNet(names: string[], hostNames: string[] = []): Promise<TestNet> {
  const tag = randomBytes(3).toString('hex');
  const name = `warren-test-${tag}`;
  const n = freeSubnet();
  const hostAddress = `10.213.${n}.1`;
  const remoteAddress = `10.213.${n}.2`;
  const dir = mkdtempSync('/tmp/wnet-');
  let server: ChildProcess | null = null;
  const close = () => {
    server?.kill('SIGKILL');
    try {
      sh('ip', ['link', 'del', `wt${tag}a`]);
    } catch {
      // gone with the namespace
    }
    try {
      sh('ip', ['netns', 'del', name]);
    } catch {
      // never made
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    sh('ip', ['netns', 'add', name]);
    sh('ip', ['link', 'add', `wt${tag}a`, 'type', 'veth', 'peer', 'name', `wt${tag}b`]);
    sh('ip', ['link', 'set', `wt${tag}b`, 'netns', name]);
    sh('ip', ['addr', 'add', `${hostAddress}/30`, 'dev', `wt${tag}a`]);
    sh('ip', ['link', 'set', `wt${tag}a`, 'up']);
    const ns = ['--net=/run/netns/' + name];
    sh('nsenter', [...ns, 'ip', 'addr', 'add', `${remoteAddress}/30`, 'dev', `wt${tag}b`]);
    sh('nsenter', [...ns, 'ip', 'link', 'set', `wt${tag}b`, 'up']);
    sh('nsenter', [...ns, 'ip', 'link', 'set', 'lo', 'up']);

    const caFile = join(dir, 'ca.pem');
    // prettier-ignore
    sh('openssl', ['req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
      '-nodes', '-keyout', join(dir, 'ca.key'), '-out', caFile, '-subj', '/CN=Warren test upstream CA',
      '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    // prettier-ignore
    sh('openssl', ['req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
      '-nodes', '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.pem'),
      '-subj', `/CN=${names[0] ?? 'upstream'}`, '-days', '2', '-CA', caFile, '-CAkey', join(dir, 'ca.key'),
      '-addext', `subjectAltName=${names.map((x) => `DNS:${x}`).join(',')}`]);
    const hostsFile = join(dir, 'hosts');
    writeFileSync(
      hostsFile,
      [
        ...names.map((x) => `${remoteAddress} ${x}`),
        ...hostNames.map((x) => `${hostAddress} ${x}`),
      ].join('\n') + '\n',
    );

    server = spawn(
      'nsenter',
      [
        ...ns,
        process.execPath,
        '--import',
        'tsx',
        join(import.meta.dirname, 'upstream.ts'),
        remoteAddress,
        dir,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('test servers did not start')), 20_000);
      server!.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      server!.once('exit', (code) => reject(new Error(`test servers exited with ${code}`)));
    });
    return { name, hostAddress, remoteAddress, dir, caFile, hostsFile, close };
  } catch (err) {
    close();
    throw err;
  }
}
