/** Entry point of the `warren` command. */
import { runCli } from './program';

const io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, exitCode: 0 };
process.exitCode = await runCli(process.argv.slice(2), io);
