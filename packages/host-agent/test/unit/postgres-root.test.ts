/** The host commands that finish the postgres-17 root: stdin, exit codes and output. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../../src/templates/postgres-root';

test('a command that exits without reading its stdin succeeds, with or without input', async () => {
  // mkfifo, true: they never read stdin. With a pipe that nobody reads, a write
  // after the exit raised EPIPE and crashed the template build.
  for (let i = 0; i < 20; i++) assert.equal(await run('true', []), '');
  for (let i = 0; i < 5; i++)
    assert.equal(await run('true', [], { stdin: 'x'.repeat(1 << 20) }), '');
});

test('stdin reaches the command; a failure gives RUNTIME_ERROR with its exit code and output', async () => {
  assert.equal(await run('cat', [], { stdin: 'SELECT 1\n' }), 'SELECT 1\n');
  await assert.rejects(
    run('sh', ['-c', 'echo broken >&2; exit 3']),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUNTIME_ERROR');
      assert.match(err.message, /exit 3/);
      assert.match(err.message, /broken/);
      return true;
    },
  );
  await assert.rejects(run('/nonexistent/command', []), /cannot run \/nonexistent\/command/);
});
