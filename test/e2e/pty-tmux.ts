/**
 * Drives `warren sandbox shell` the way a person would: in a terminal (a
 * detached tmux on a socket of its own), typing with send-keys and reading the
 * screen with capture-pane. The tmux server is killed afterwards whatever happens.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, type TestPlatform } from '../fixture';
import { waitFor } from '../wait';

const TMUX = '/usr/bin/tmux';

export async function runShellInTmux(
  p: TestPlatform,
  sandboxId: string,
  /** Runs after the first answer: the CLI must carry on (a pause, say). */
  meanwhile: () => Promise<void>,
): Promise<{ screen: string; exitCode: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'warren-tmux-'));
  const socket = `warren-pty-test-${process.pid}`;
  const tmux = (...args: string[]) =>
    execFileSync(TMUX, ['-L', socket, ...args], { encoding: 'utf8', stdio: 'pipe' });
  const codeFile = join(dir, 'exit-code');
  const cli = [process.execPath, join(REPO, 'packages/cli/bin/warren.js'), 'sandbox', 'shell'];
  const command = `${cli.join(' ')} ${sandboxId}; echo $? > ${codeFile}`;
  try {
    tmux(
      'new-session',
      '-d',
      '-s',
      'shell',
      '-x',
      '120',
      '-y',
      '40',
      '-e',
      `WARREN_API=${p.url}`,
      '-e',
      `WARREN_API_KEY=${p.adminToken}`,
      '-e',
      `WARREN_HOME=${join(dir, 'home')}`,
      command,
    );
    const screen = () => tmux('capture-pane', '-p', '-t', 'shell');
    await waitFor(() => /[#$] *$/m.test(screen()), {
      what: () => `a prompt on the screen: ${screen()}`,
      timeoutMs: 20_000,
    });
    tmux('send-keys', '-t', 'shell', 'echo hi-$((6*7))', 'Enter');
    const shown = await waitFor(() => (/^hi-42/m.test(screen()) ? screen() : ''), {
      what: () => `hi-42 on the screen: ${screen()}`,
    });
    await meanwhile();
    tmux('send-keys', '-t', 'shell', 'echo back-$((2+2))', 'Enter');
    await waitFor(() => /^back-4/m.test(screen()), {
      what: () => `back-4 on the screen: ${screen()}`,
      timeoutMs: 20_000,
    });
    tmux('send-keys', '-t', 'shell', 'exit 3', 'Enter');
    await waitFor(() => existsSync(codeFile) && readFileSync(codeFile, 'utf8').trim() !== '', {
      what: 'the CLI to exit',
    });
    return { screen: shown, exitCode: Number(readFileSync(codeFile, 'utf8').trim()) };
  } finally {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
