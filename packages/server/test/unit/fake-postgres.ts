/**
 * A fake PostgreSQL server for front door tests: it accepts the startup
 * (trust auth), announces a BackendKeyData, answers simple queries `select X`
 * with one row holding X, ends the session on `terminate` as
 * pg_terminate_backend would, and records what it was sent. Enough for
 * node-postgres and psql to run `select 1`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface FakeSession {
  params: Map<string, string>;
  pid: number;
  secret: number;
  queries: string[];
  socket: Socket;
}

export class FakePostgres {
  readonly sessions: FakeSession[] = [];
  readonly cancels: { pid: number; secret: number }[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private port = 0;
  private nextPid = 4000;

  constructor() {
    this.server = createServer((s) => this.serve(s));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** A new byte stream to the fake server: what a FrontDoor's connect() returns. */
  open(): Promise<Duplex> {
    return new Promise((resolve, reject) => {
      const s = connect(this.port, '127.0.0.1', () => {
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', reject);
    });
  }

  /** Sessions still connected. */
  get live(): number {
    return [...this.sockets].filter((s) => !s.destroyed).length;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => this.sockets.delete(socket));
    let buf = Buffer.alloc(0);
    let session: FakeSession | null = null;
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (!session) {
          if (buf.length < 4 || buf.length < buf.readUInt32BE(0)) return;
          const len = buf.readUInt32BE(0);
          const packet = buf.subarray(0, len);
          buf = buf.subarray(len);
          if (packet.readUInt32BE(4) === 80877102) {
            this.cancels.push({ pid: packet.readUInt32BE(8), secret: packet.readUInt32BE(12) });
            socket.end();
            return;
          }
          session = this.startSession(socket, packet);
          continue;
        }
        if (buf.length < 5 || buf.length < 1 + buf.readUInt32BE(1)) return;
        const type = String.fromCharCode(buf[0]!);
        const body = buf.subarray(5, 1 + buf.readUInt32BE(1));
        buf = buf.subarray(1 + buf.readUInt32BE(1));
        if (type === 'X') {
          socket.end();
          return;
        }
        if (type === 'Q') {
          const sql = body.toString('utf8', 0, body.length - 1);
          session.queries.push(sql);
          if (sql === 'terminate') {
            // As pg_terminate_backend does: a FATAL error, then the close.
            const fields =
              'SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0';
            socket.end(message('E', Buffer.from(fields, 'utf8')));
            return;
          }
          socket.write(answer(sql));
        }
      }
    });
  }

  private startSession(socket: Socket, packet: Buffer): FakeSession {
    const params = new Map<string, string>();
    const parts = packet.toString('utf8', 8, packet.length - 1).split('\0');
    for (let i = 0; i + 1 < parts.length; i += 2) params.set(parts[i]!, parts[i + 1]!);
    const session = {
      params,
      pid: this.nextPid++,
      secret: (Math.random() * 2 ** 31) | 0,
      queries: [],
      socket,
    };
    this.sessions.push(session);
    const key = Buffer.alloc(8);
    key.writeUInt32BE(session.pid, 0);
    key.writeUInt32BE(session.secret, 4);
    socket.write(
      Buffer.concat([
        message('R', int32(0)),
        parameterStatus('server_version', '15.0'),
        parameterStatus('server_encoding', 'UTF8'),
        parameterStatus('client_encoding', 'UTF8'),
        parameterStatus('DateStyle', 'ISO, MDY'),
        parameterStatus('integer_datetimes', 'on'),
        parameterStatus('standard_conforming_strings', 'on'),
        message('K', key),
        message('Z', Buffer.from('I')),
      ]),
    );
    return session;
  }
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function cstr(s: string): Buffer {
  return Buffer.from(`${s}\0`, 'utf8');
}

function parameterStatus(name: string, value: string): Buffer {
  return message('S', Buffer.concat([cstr(name), cstr(value)]));
}

/** `select X` -> one text column `?column?` with X; anything else -> just a command tag. */
function answer(sql: string): Buffer {
  const m = /^\s*select\s+(.*?);?\s*$/is.exec(sql);
  if (!m) return Buffer.concat([message('C', cstr('SET')), message('Z', Buffer.from('I'))]);
  const value = Buffer.from(m[1]!.replace(/^'(.*)'$/, '$1'), 'utf8');
  const field = Buffer.alloc(18);
  field.writeUInt32BE(0, 0); // table oid
  field.writeUInt16BE(0, 4); // column number
  field.writeUInt32BE(25, 6); // type oid: text
  field.writeInt16BE(-1, 10); // type size
  field.writeInt32BE(-1, 12); // type modifier
  field.writeUInt16BE(0, 16); // text format
  const rowDescription = Buffer.concat([Buffer.from([0, 1]), cstr('?column?'), field]);
  const dataRow = Buffer.concat([Buffer.from([0, 1]), int32(value.length), value]);
  return Buffer.concat([
    message('T', rowDescription),
    message('D', dataRow),
    message('C', cstr('SELECT 1')),
    message('Z', Buffer.from('I')),
  ]);
}
