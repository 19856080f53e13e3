// A javascript context of Warren's code interpreter (started by driver.py).
// Reads {"code"} lines on stdin, runs each in one vm context (so globals and
// top-level declarations persist), writes JSON lines: stdout, stderr, result,
// error, then done. SIGINT breaks a running script (breakOnSigint).
import { createRequire } from 'node:module';
import readline from 'node:readline';
import util from 'node:util';
import vm from 'node:vm';

// require() in the context resolves from the working directory, as in a REPL.
const require = createRequire(`${process.cwd()}/`);

const out = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const fmt = (args) => util.formatWithOptions({ colors: false }, ...args) + '\n';
const sandboxConsole = {
  log: (...a) => out({ type: 'stdout', text: fmt(a) }),
  info: (...a) => out({ type: 'stdout', text: fmt(a) }),
  debug: (...a) => out({ type: 'stdout', text: fmt(a) }),
  error: (...a) => out({ type: 'stderr', text: fmt(a) }),
  warn: (...a) => out({ type: 'stderr', text: fmt(a) }),
};
const context = vm.createContext({
  console: sandboxConsole,
  require,
  process,
  Buffer,
  setTimeout,
  clearTimeout,
  setInterval,
  clearInterval,
  URL,
  TextEncoder,
  TextDecoder,
  fetch: globalThis.fetch,
});
// The driver interrupts with SIGINT: between runs it must not end the process.
process.on('SIGINT', () => undefined);

function resultOf(value) {
  if (value === undefined) return null;
  const data = { 'text/plain': util.inspect(value, { colors: false, depth: 4 }) };
  try {
    if (value !== null && typeof value === 'object')
      data['application/json'] = JSON.parse(JSON.stringify(value));
  } catch {
    // not JSON-serialisable: text only
  }
  return data;
}

function errorOf(err) {
  if (err instanceof Error || (err && typeof err === 'object' && 'stack' in err))
    return {
      name: err.name ?? 'Error',
      value: err.message ?? String(err),
      traceback: String(err.stack ?? ''),
    };
  return { name: 'Error', value: String(err), traceback: '' };
}

async function runOne(code) {
  let value;
  try {
    try {
      value = vm.runInContext(code, context, { breakOnSigint: true, filename: 'cell.js' });
    } catch (err) {
      // Top-level await: run the code again as the body of an async function.
      if (
        err instanceof SyntaxError &&
        /await/.test(code) &&
        /await is only valid/.test(err.message)
      ) {
        value = vm.runInContext(`(async () => {\n${code}\n})()`, context, {
          breakOnSigint: true,
          filename: 'cell.js',
        });
      } else throw err;
    }
    if (value && typeof value.then === 'function') value = await value;
    const data = resultOf(value);
    if (data) out({ type: 'result', data, is_main_result: true });
  } catch (err) {
    const e = errorOf(err);
    if (/Script execution was interrupted/.test(e.value)) e.name = 'KeyboardInterrupt';
    out({ type: 'error', ...e });
  }
  out({ type: 'done' });
}

let chain = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  chain = chain.then(() => runOne(String(msg.code)));
});
