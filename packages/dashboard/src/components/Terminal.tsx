/**
 * A terminal on the sandbox's PTY WebSocket (docs/terminals.md) drawn by
 * xterm.js: POST /pty starts a shell, POST /pty/:id/token gets a one-use
 * query token (a browser cannot send headers on a WebSocket), and a closed
 * connection (1012 during a pause or snapshot, or a network break) is opened
 * again with ?since=<offset> so only unseen output is replayed.
 */
import { useEffect, useRef, useState } from 'react';
import { Terminal as XTerm } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { api } from '../lib/api';
import type { PtyInfo, PtyToken, Sandbox } from '../lib/types';
import { ErrorBox } from './ErrorBox';

const ptyBySandbox = new Map<string, string>();

/**
 * `hold`: a pause or hibernation is being asked for on this page; a connection
 * it closes is not opened again at once (that would resume the sandbox).
 */
export function Terminal({ sandbox, hold = false }: { sandbox: Sandbox; hold?: boolean }) {
  const el = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState('connecting');
  /** WebSocket attachments so far (a reconnect adds one). */
  const [attachments, setAttachments] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const live = ['running', 'paused', 'hibernated'].includes(sandbox.state);
  const id = sandbox.id;
  const holdRef = useRef(hold);
  holdRef.current = hold;
  /** Set while the terminal waits for a paused or hibernated sandbox: connects again. */
  const resumeRef = useRef<(() => void) | null>(null);
  useEffect(() => {
    if (sandbox.state === 'running') resumeRef.current?.();
  }, [sandbox.state]);
  useEffect(() => {
    if (!live || !el.current) return;
    const term = new XTerm({
      cursorBlink: true,
      fontSize: 14,
      convertEol: false,
      scrollback: 5000,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el.current);
    fit.fit();
    let ws: WebSocket | null = null;
    let offset = 0;
    let closed = false;
    let retry: ReturnType<typeof setTimeout> | null = null;
    let pending: Uint8Array[] = [];
    const enc = new TextEncoder();
    const send = (data: string) => {
      if (ws?.readyState === WebSocket.OPEN) ws.send(enc.encode(data));
      else pending.push(enc.encode(data));
    };
    const onData = term.onData(send);
    const resize = () => {
      fit.fit();
      if (ws?.readyState === WebSocket.OPEN)
        ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    };
    const observer = new ResizeObserver(resize);
    observer.observe(el.current);

    async function ptyId(): Promise<string> {
      const known = ptyBySandbox.get(id);
      if (known) {
        const list = await api<{ items: PtyInfo[] }>(`/v1/sandboxes/${id}/pty`);
        if (list.items.some((p) => p.pty_id === known && p.state === 'running')) return known;
      }
      const p = await api<PtyInfo>(`/v1/sandboxes/${id}/pty`, {
        method: 'POST',
        json: { cols: term.cols, rows: term.rows },
      });
      ptyBySandbox.set(id, p.pty_id);
      offset = 0;
      return p.pty_id;
    }

    async function connect(attempt: number) {
      if (closed) return;
      try {
        setStatus(attempt ? 'reconnecting' : 'connecting');
        const pty = await ptyId();
        const tok = await api<PtyToken>(`/v1/sandboxes/${id}/pty/${pty}/token`, {
          method: 'POST',
          json: {},
        });
        const url = new URL(tok.websocket_path, location.href);
        url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
        if (offset > 0) url.searchParams.set('since', String(offset));
        const sock = new WebSocket(url);
        sock.binaryType = 'arraybuffer';
        ws = sock;
        sock.onopen = () => {
          setStatus('connected');
          setAttachments((n) => n + 1);
          setError(null);
          sock.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
          for (const p of pending) sock.send(p);
          pending = [];
          attempt = 0;
        };
        sock.onmessage = (ev) => {
          if (typeof ev.data === 'string') {
            const msg = JSON.parse(ev.data) as {
              type: string;
              offset?: number;
              exit_code?: number;
              code?: string;
              message?: string;
            };
            if (msg.type === 'attached') offset = msg.offset ?? offset;
            if (msg.type === 'exit') {
              term.write(`\r\n[process exited with code ${msg.exit_code}]\r\n`);
              ptyBySandbox.delete(id);
            }
            if (msg.type === 'error') setError(new Error(`${msg.code}: ${msg.message}`));
            return;
          }
          const bytes = new Uint8Array(ev.data as ArrayBuffer);
          offset += bytes.length;
          term.write(bytes);
        };
        sock.onclose = (ev) => {
          if (closed || ws !== sock) return;
          if (ev.code === 1000) {
            setStatus('exited: press a key to start a new shell');
            const sub = term.onData(() => {
              sub.dispose();
              void connect(0);
            });
            return;
          }
          setStatus('disconnected: reconnecting');
          retry = setTimeout(() => void reconnect(attempt + 1), Math.min(5000, 300 * 2 ** attempt));
        };
      } catch (err) {
        setError(err);
        setStatus('failed');
        if (attempt < 5)
          retry = setTimeout(() => void connect(attempt + 1), Math.min(5000, 500 * 2 ** attempt));
      }
    }
    /**
     * After a close other than the process's exit (1012 for a pause, hibernation
     * or capture, or a broken network): connect again while the sandbox runs; a
     * paused or hibernated one waits for a key, since connecting resumes it.
     */
    async function reconnect(attempt: number) {
      if (closed) return;
      if (holdRef.current) {
        retry = setTimeout(() => void reconnect(attempt), 500);
        return;
      }
      const state = await api<Sandbox>(`/v1/sandboxes/${id}`).then(
        (s) => s.state,
        () => 'unknown',
      );
      if (closed) return;
      if (state === 'paused' || state === 'hibernated') {
        setStatus(`sandbox ${state}: press a key to reconnect (this resumes it)`);
        const again = () => {
          sub.dispose();
          resumeRef.current = null;
          void connect(attempt);
        };
        const sub = term.onData(again);
        resumeRef.current = again;
        return;
      }
      if (state === 'stopped' || state === 'stopping') {
        setStatus(`sandbox ${state}`);
        return;
      }
      void connect(attempt);
    }
    void connect(0);
    term.focus();
    return () => {
      closed = true;
      resumeRef.current = null;
      if (retry) clearTimeout(retry);
      observer.disconnect();
      onData.dispose();
      ws?.close();
      term.dispose();
    };
  }, [id, live]);
  if (!live) return <p className="muted">The sandbox is {sandbox.state}: no terminal.</p>;
  return (
    <div className="terminal-wrap">
      <p className="muted small" aria-live="polite">
        Terminal:{' '}
        <span data-testid="terminal-status" data-attachments={attachments}>
          {status}
        </span>
      </p>
      <ErrorBox error={error} title="Terminal" />
      <div className="terminal" ref={el} role="application" aria-label="Terminal" />
    </div>
  );
}
