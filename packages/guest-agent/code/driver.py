"""Warren's code interpreter driver: runs inside the sandbox, started by the guest agent.

It reads one JSON command a line on stdin and writes one JSON message a line on
stdout. Replies to commands carry the command's `req`; events of an execution
carry its `exec`. Python contexts are Jupyter kernels (ipykernel, driven through
jupyter_client); javascript contexts are a Node.js process running js-context.mjs
(a vm context); bash contexts are a bash process that sources each run.

Commands:
  {"op": "create", "req", "context", "language", "cwd"?}
  {"op": "run", "req", "exec", "context", "code", "timeout_ms"?}
  {"op": "interrupt", "req", "exec"}
  {"op": "restart", "req", "context"}
  {"op": "delete", "req", "context"}
Replies: {"req", "ok": true, ...} or {"req", "ok": false, "code", "message"}.
Events: {"exec", "type": "stdout"|"stderr"|"result"|"error"|"end", ...}.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid

OUT_LOCK = threading.Lock()
HERE = os.path.dirname(os.path.abspath(__file__))
INTERRUPT_GRACE_S = 5.0


def emit(msg):
    line = json.dumps(msg, default=str)
    with OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


KERNEL_SETUP = r"""
def __warren_setup():
    import json as _json
    ip = get_ipython()
    try:
        ip.run_line_magic('matplotlib', 'inline')
        # Figures at the size they were made (Jupyter's default crops them).
        ip.run_line_magic('config', "InlineBackend.print_figure_kwargs = {'bbox_inches': None}")
    except Exception:
        pass
    # Tracebacks as plain text: clients are programs and models, not terminals.
    ip.run_line_magic('colors', 'NoColor')
    def _df_json(df):
        return _json.loads(df.to_json(orient='split', date_format='iso', default_handler=str))
    ip.display_formatter.formatters['application/json'].for_type_by_name(
        'pandas.core.frame', 'DataFrame', _df_json)
    def _series_json(s):
        return _json.loads(s.to_json(orient='split', date_format='iso', default_handler=str))
    ip.display_formatter.formatters['application/json'].for_type_by_name(
        'pandas.core.series', 'Series', _series_json)
__warren_setup()
del __warren_setup
"""


class Run:
    """One execution: its id, its deadline and whether it was cancelled."""

    def __init__(self, exec_id, timeout_ms):
        self.id = exec_id
        self.started = time.monotonic()
        self.deadline = self.started + timeout_ms / 1000.0 if timeout_ms else None
        self.cancelled = None  # 'timeout' | 'interrupt'
        self.lock = threading.Lock()

    def event(self, type_, **fields):
        emit({"exec": self.id, "type": type_, **fields})

    def cancel(self, why):
        with self.lock:
            if self.cancelled is None:
                self.cancelled = why
                return True
            return False


class PythonContext:
    language = "python"

    def __init__(self, cid, cwd):
        self.id = cid
        self.cwd = cwd
        self.count = 0
        self.km = None
        self.kc = None
        self.start()

    def start(self):
        try:
            from jupyter_client.manager import KernelManager
        except ImportError:
            raise Failure(
                "INTERPRETER_UNAVAILABLE",
                "this sandbox has no Jupyter kernel (python3-ipykernel): "
                "create it from the code-interpreter template",
            )
        env = dict(os.environ)
        env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        km = KernelManager(kernel_name="python3")
        km.start_kernel(env=env, cwd=self.cwd or None)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
        except RuntimeError as err:
            km.shutdown_kernel(now=True)
            raise Failure("RUNTIME_ERROR", f"the python kernel did not start: {err}")
        self.km, self.kc = km, kc
        msg_id = kc.execute(KERNEL_SETUP, silent=True, store_history=False)
        self._drain(msg_id, None)

    def stop(self):
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:
                pass
        self.km = self.kc = None

    def restart(self):
        self.stop()
        self.count = 0
        self.start()

    def alive(self):
        return self.km is not None and self.km.is_alive()

    def interrupt(self):
        if self.km is not None:
            self.km.interrupt_kernel()

    def _drain(self, msg_id, run):
        """Relays iopub messages of msg_id until the kernel is idle; False if it died."""
        interrupted_at = None
        while True:
            if run is not None and run.deadline and time.monotonic() > run.deadline:
                if run.cancel("timeout"):
                    self.interrupt()
                    interrupted_at = time.monotonic()
            if run is not None and run.cancelled and interrupted_at is None:
                interrupted_at = time.monotonic()
            if interrupted_at and time.monotonic() - interrupted_at > INTERRUPT_GRACE_S:
                return "stuck"
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    return "died"
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            content = msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                return "idle"
            if run is None:
                continue
            if kind == "stream":
                run.event(content["name"], text=content["text"])
            elif kind in ("execute_result", "display_data"):
                run.event(
                    "result",
                    data=content.get("data", {}),
                    is_main_result=kind == "execute_result",
                )
            elif kind == "error":
                run.event(
                    "error",
                    name=content.get("ename", ""),
                    value=content.get("evalue", ""),
                    traceback="\n".join(content.get("traceback", [])),
                )

    def run(self, code, run):
        if not self.alive():
            self.restart()
            run.event(
                "error",
                name="KernelDied",
                value="the kernel had died and was restarted: earlier state is lost",
                traceback="",
            )
            return
        msg_id = self.kc.execute(code, store_history=True)
        outcome = self._drain(msg_id, run)
        if outcome == "died":
            code_ = self.km.exit_status if hasattr(self.km, "exit_status") else None
            self.restart()
            run.event(
                "error",
                name="KernelDied",
                value=f"the kernel died during the run{'' if code_ is None else f' ({code_})'}; "
                "it was restarted and earlier state is lost",
                traceback="",
            )
            return
        if outcome == "stuck":
            self.restart()
            run.event(
                "error",
                name="KernelRestarted",
                value="the kernel did not stop on interrupt and was restarted: earlier state is lost",
                traceback="",
            )
            return
        try:
            reply = self.kc.get_shell_msg(timeout=10)
            while reply.get("parent_header", {}).get("msg_id") != msg_id:
                reply = self.kc.get_shell_msg(timeout=10)
            self.count = reply["content"].get("execution_count") or self.count
        except queue.Empty:
            pass


class ProcessContext:
    """A context that is one long-lived process speaking JSON lines (javascript, bash)."""

    def __init__(self, cid, cwd):
        self.id = cid
        self.cwd = cwd
        self.count = 0
        self.proc = None
        self.lines = queue.Queue()
        self.start()

    def command(self):
        raise NotImplementedError

    def send(self, code):
        self.proc.stdin.write((json.dumps({"code": code}) + "\n").encode())
        self.proc.stdin.flush()

    def finish(self, msg, run):
        pass

    def start(self):
        self.lines = queue.Queue()
        try:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self.cwd or None,
                start_new_session=True,
            )
        except OSError as err:
            raise Failure("INTERPRETER_UNAVAILABLE", f"cannot start {self.language}: {err}")
        lines = self.lines
        out = self.proc.stdout

        def pump():
            for raw in out:
                lines.put(raw)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
        self.proc = None

    def restart(self):
        self.stop()
        self.count = 0
        self.start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def interrupt(self):
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except OSError:
                pass

    def run(self, code, run):
        if not self.alive():
            self.restart()
            run.event(
                "error",
                name="ContextDied",
                value=f"the {self.language} process had died and was restarted: state is lost",
                traceback="",
            )
            return
        self.send(code)
        self.proc.stdin.flush()
        interrupted_at = None
        while True:
            if run.deadline and time.monotonic() > run.deadline and run.cancel("timeout"):
                self.interrupt()
            if run.cancelled and interrupted_at is None:
                interrupted_at = time.monotonic()
            if interrupted_at and time.monotonic() - interrupted_at > INTERRUPT_GRACE_S:
                self.restart()
                run.event(
                    "error",
                    name="ContextRestarted",
                    value=f"the {self.language} process did not stop on interrupt and was "
                    "restarted: state is lost",
                    traceback="",
                )
                return
            try:
                raw = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if raw is None:
                self.restart()
                run.event(
                    "error",
                    name="ContextDied",
                    value=f"the {self.language} process died during the run and was "
                    "restarted: state is lost",
                    traceback="",
                )
                return
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            kind = msg.pop("type", None)
            if kind == "done":
                self.count += 1
                self.finish(msg, run)
                return
            if kind in ("stdout", "stderr", "result", "error"):
                run.event(kind, **msg)


class JavascriptContext(ProcessContext):
    language = "javascript"

    def command(self):
        script = os.path.join(HERE, "js-context.mjs")
        for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
            if d and os.access(os.path.join(d, "node"), os.X_OK):
                return [os.path.join(d, "node"), script]
        bundle = os.path.dirname(HERE)
        return [
            os.path.join(bundle, "lib/ld-linux-x86-64.so.2"),
            "--library-path",
            os.path.join(bundle, "lib"),
            os.path.join(bundle, "node"),
            script,
        ]


class BashContext(ProcessContext):
    language = "bash"

    def command(self):
        import tempfile

        self.dir = tempfile.mkdtemp(prefix=".warren-bash-")
        return ["bash", "--norc", "--noprofile", os.path.join(HERE, "bash-context.sh"), self.dir]

    def send(self, code):
        with open(os.path.join(self.dir, "cell.sh"), "w") as f:
            f.write(code)
        self.proc.stdin.write(b"run\n")
        self.proc.stdin.flush()

    def finish(self, msg, run):
        for name, file in (("stdout", "out"), ("stderr", "err")):
            path = os.path.join(self.dir, file)
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                text = ""
            if text:
                run.event(name, text=text)
        rc = msg.get("rc", 0)
        if rc:
            name = "KeyboardInterrupt" if run.cancelled and rc == 130 else "ExitCode"
            run.event("error", name=name, value=str(rc), traceback="")

    def stop(self):
        super().stop()
        import shutil

        shutil.rmtree(getattr(self, "dir", ""), ignore_errors=True)


LANGUAGES = {"python": PythonContext, "javascript": JavascriptContext, "bash": BashContext}


class Driver:
    def __init__(self):
        self.contexts = {}
        self.locks = {}
        self.runs = {}
        self.table = threading.Lock()

    def reply(self, req, **fields):
        emit({"req": req, "ok": True, **fields})

    def context(self, cid):
        with self.table:
            ctx = self.contexts.get(cid)
        if ctx is None:
            raise Failure("CONTEXT_NOT_FOUND", f"no code context {cid}")
        return ctx

    def describe(self, ctx):
        return {"id": ctx.id, "language": ctx.language, "cwd": ctx.cwd, "execution_count": ctx.count}

    def create(self, cmd):
        cls = LANGUAGES.get(cmd.get("language"))
        if cls is None:
            raise Failure("INVALID_REQUEST", f"unknown language {cmd.get('language')!r}")
        cid = cmd.get("context") or f"ctx_{uuid.uuid4().hex[:20]}"
        with self.table:
            if cid in self.contexts:
                return self.contexts[cid]
        ctx = cls(cid, cmd.get("cwd"))
        with self.table:
            self.contexts[cid] = ctx
            self.locks[cid] = threading.Lock()
        return ctx

    def run(self, cmd):
        ctx = self.context(cmd["context"])
        run = Run(cmd["exec"], cmd.get("timeout_ms"))
        with self.table:
            self.runs[run.id] = (run, ctx)
        self.reply(cmd["req"])
        with self.locks[ctx.id]:
            run.started = time.monotonic()
            if run.deadline:
                run.deadline = run.started + cmd["timeout_ms"] / 1000.0
            try:
                if not run.cancelled:
                    ctx.run(cmd["code"], run)
            except Exception as err:  # the driver must answer every run with an end
                run.event("error", name=type(err).__name__, value=str(err), traceback="")
            finally:
                with self.table:
                    self.runs.pop(run.id, None)
                run.event(
                    "end",
                    execution_count=ctx.count,
                    duration_ms=round((time.monotonic() - run.started) * 1000, 3),
                    cancelled=run.cancelled,
                )

    def interrupt(self, cmd):
        with self.table:
            entry = self.runs.get(cmd["exec"])
        if entry is None:
            raise Failure("EXECUTION_NOT_FOUND", f"no running execution {cmd['exec']}")
        run, ctx = entry
        if run.cancel(cmd.get("why") or "interrupt"):
            ctx.interrupt()
        self.reply(cmd["req"])

    def handle(self, cmd):
        op = cmd.get("op")
        try:
            if op == "create":
                self.reply(cmd["req"], context=self.describe(self.create(cmd)))
            elif op == "run":
                self.run(cmd)
            elif op == "interrupt":
                self.interrupt(cmd)
            elif op == "restart":
                ctx = self.context(cmd["context"])
                with self.locks[ctx.id]:
                    ctx.restart()
                self.reply(cmd["req"], context=self.describe(ctx))
            elif op == "delete":
                ctx = self.context(cmd["context"])
                with self.table:
                    self.contexts.pop(ctx.id, None)
                ctx.interrupt()
                with self.locks[ctx.id]:
                    ctx.stop()
                self.reply(cmd["req"])
            elif op == "list":
                with self.table:
                    items = [self.describe(c) for c in self.contexts.values()]
                self.reply(cmd["req"], items=items)
            else:
                raise Failure("INVALID_REQUEST", f"unknown op {op!r}")
        except Failure as f:
            emit({"req": cmd.get("req"), "ok": False, "code": f.code, "message": f.message})
        except Exception as err:
            emit({"req": cmd.get("req"), "ok": False, "code": "RUNTIME_ERROR", "message": str(err)})


def main():
    os.environ.setdefault("JUPYTER_RUNTIME_DIR", "/tmp/.warren-code/runtime")
    os.environ.setdefault("JUPYTER_DATA_DIR", "/tmp/.warren-code/data")
    os.environ.setdefault("IPYTHONDIR", "/tmp/.warren-code/ipython")
    for d in ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR"):
        os.makedirs(os.environ[d], mode=0o700, exist_ok=True)
    driver = Driver()
    emit({"ready": True})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
        except ValueError:
            continue
        threading.Thread(target=driver.handle, args=(cmd,), daemon=True).start()
    for ctx in list(driver.contexts.values()):
        ctx.stop()


if __name__ == "__main__":
    main()
