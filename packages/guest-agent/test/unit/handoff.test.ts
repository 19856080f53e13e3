/**
 * The handoff library (native/handoff.c), built here and loaded into a real
 * Python server with LD_PRELOAD: a descriptor sent on a listener in the
 * handoff directory is what accept() returns, with a loopback TCP peer
 * address; a connection without one is refused; other listeners are left alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

const SOURCE = fileURLToPath(new URL('../../native/handoff.c', import.meta.url));

/** Runs in one Python process: the server side with the library, the client side without needing it. */
const SCRIPT = `
import os, socket, sys
hand = os.environ["WARREN_HANDOFF_DIR"] + "/s"
plain = sys.argv[1]
srv = socket.socket(socket.AF_UNIX); srv.bind(hand); srv.listen()
other = socket.socket(socket.AF_UNIX); other.bind(plain); other.listen()
a, b = socket.socketpair()
c = socket.socket(socket.AF_UNIX); c.connect(hand)
socket.send_fds(c, [b"W"], [b.fileno()]); c.close(); b.close()
conn, addr = srv.accept()
print("peer", addr[0], addr[1])
a.sendall(b"ping"); print("server read", conn.recv(10).decode())
conn.sendall(b"pong"); print("client read", a.recv(10).decode())
c = socket.socket(socket.AF_UNIX); c.connect(hand); c.sendall(b"x"); c.close()
try:
    srv.accept(); print("no descriptor: accepted")
except ConnectionAbortedError:
    print("no descriptor: refused")
c = socket.socket(socket.AF_UNIX); c.connect(plain)
conn, addr = other.accept(); print("other listener:", repr(addr))
`;

describe('handoff library', () => {
  const dir = mkdtempSync(join(tmpdir(), 'warren-handoff-'));
  const library = join(dir, 'handoff.so');

  before(() => {
    // As the guest bundle builds it (host-agent/src/templates/guest-bundle.ts), warnings as errors.
    const warnings = ['-Wall', '-Wextra', '-Werror'];
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', ...warnings, '-o', library, SOURCE, '-ldl']);
    mkdirSync(join(dir, 'handoff'));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test('accept returns the descriptor sent, as a loopback TCP peer; nothing else changes', () => {
    const out = execFileSync('python3', ['-c', SCRIPT, join(dir, 'plain.sock')], {
      encoding: 'utf8',
      env: { ...process.env, LD_PRELOAD: library, WARREN_HANDOFF_DIR: join(dir, 'handoff') },
    });
    assert.deepEqual(out.trim().split('\n'), [
      'peer 127.0.0.1 0',
      'server read ping',
      'client read pong',
      'no descriptor: refused',
      "other listener: ''",
    ]);
  });

  test('without WARREN_HANDOFF_DIR every listener is left alone', () => {
    const script = `
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.sendall(b"plain")
conn, addr = s.accept(); print(repr(addr), conn.recv(10).decode())
`;
    const out = execFileSync('python3', ['-c', script, join(dir, 'handoff', 'unset.sock')], {
      encoding: 'utf8',
      env: { ...process.env, LD_PRELOAD: library, WARREN_HANDOFF_DIR: '' },
    });
    assert.equal(out.trim(), "'' plain");
  });
});
