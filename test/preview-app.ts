/**
 * A small HTTP + WebSocket server in Python (standard library only: the base
 * template has python3 and nothing else), for preview URL tests and benchmarks.
 * Run it as `python3 -c PREVIEW_APP <port>`.
 *   GET /hello          a short answer on a kept-alive connection
 *   GET /headers        the request line and headers it received, as JSON
 *   GET /stream         five chunks, 300 ms apart (chunked encoding)
 *   GET /bytes?n=N      N bytes
 *   POST /echo          the body back
 *   GET /ws (Upgrade)   a WebSocket that answers each text message with "echo: <message>"
 */
import { request, type Agent, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';

export const PREVIEW_APP = String.raw`
import base64, hashlib, http.server, json, struct, sys, time

BLOCK = b'x' * (1 << 20)

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, code, body, ctype='text/plain'):
        head = 'HTTP/1.1 %d OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n' % (code, ctype, len(body))
        self.wfile.write(head.encode() + body)

    def do_GET(self):
        path, _, query = self.path.partition('?')
        if self.headers.get('upgrade', '').lower() == 'websocket':
            return self.websocket()
        if path == '/hello':
            return self.answer(200, b'hello from the sandbox\n')
        if path == '/headers':
            seen = {'path': self.path, 'headers': {k.lower(): v for k, v in self.headers.items()}}
            return self.answer(200, json.dumps(seen).encode(), 'application/json')
        if path == '/stream':
            self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n')
            for i in range(5):
                chunk = ('tick %d %.3f\n' % (i, time.time())).encode()
                self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                time.sleep(0.3)
            self.wfile.write(b'0\r\n\r\n')
            return
        if path == '/bytes':
            n = int(query.partition('=')[2])
            self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: %d\r\n\r\n' % n)
            while n > 0:
                self.wfile.write(BLOCK[:n] if n < len(BLOCK) else BLOCK)
                n -= len(BLOCK)
            return
        self.answer(404, b'not found\n')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('content-length', 0)))
        self.answer(200, body, 'application/octet-stream')

    def websocket(self):
        key = self.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
        self.wfile.write(('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n'
                          'sec-websocket-accept: %s\r\n\r\n' % accept).encode())
        self.close_connection = True
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            op, size = head[0] & 0x0f, head[1] & 0x7f
            if size == 126:
                size = struct.unpack('>H', self.rfile.read(2))[0]
            elif size == 127:
                size = struct.unpack('>Q', self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b'\0\0\0\0'
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(size)))
            if op == 8:
                self.wfile.write(b'\x88\x00')
                return
            reply = b'echo: ' + data
            size = bytes([len(reply)]) if len(reply) < 126 else b'\x7e' + struct.pack('>H', len(reply))
            self.wfile.write(b'\x81' + size + reply)

server = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
`;

export interface PreviewAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A request to the platform at `api` with the given Host header (what a browser would send). */
export function previewRequest(
  api: string,
  host: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: Buffer; agent?: Agent } = {},
): Promise<PreviewAnswer> {
  const url = new URL(api);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: init.method ?? 'GET',
        headers: { ...init.headers, host },
        agent: init.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A minimal WebSocket client over a raw socket: enough to check an upgrade end to end. */
export class RawWebSocket {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private async until<T>(take: () => T | null): Promise<T> {
    for (;;) {
      const v = take();
      if (v !== null) return v;
      if (this.closed) throw new Error('websocket closed');
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Sends the upgrade request; resolves with the status line and headers of the answer. */
  static async open(
    api: string,
    host: string,
    path: string,
    headers: Record<string, string> = {},
  ): Promise<{ ws: RawWebSocket; head: string }> {
    const url = new URL(api);
    const socket = connect(Number(url.port), url.hostname);
    const ws = new RawWebSocket(socket);
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(
      `GET ${path} HTTP/1.1\r\nhost: ${host}\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `sec-websocket-key: ${randomBytes(16).toString('base64')}\r\nsec-websocket-version: 13\r\n${extra}\r\n`,
    );
    const head = await ws.until(() => {
      const end = ws.buffer.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const text = ws.buffer.subarray(0, end).toString('latin1');
      ws.buffer = ws.buffer.subarray(end + 4);
      return text;
    });
    return { ws, head };
  }

  send(text: string): void {
    const payload = Buffer.from(text);
    if (payload.length >= 126) throw new Error('short messages only');
    const mask = randomBytes(4);
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
    this.socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]));
  }

  receive(): Promise<string> {
    return this.until(() => {
      if (this.buffer.length < 2) return null;
      let size = this.buffer[1]! & 0x7f;
      let offset = 2;
      if (size === 126) {
        if (this.buffer.length < 4) return null;
        size = this.buffer.readUInt16BE(2);
        offset = 4;
      }
      if (this.buffer.length < offset + size) return null;
      const text = this.buffer.subarray(offset, offset + size).toString('utf8');
      this.buffer = this.buffer.subarray(offset + size);
      return text;
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
