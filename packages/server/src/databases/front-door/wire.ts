/**
 * Framing of the PostgreSQL wire protocol, as much as the front door needs:
 * the untyped first packets a client sends (SSLRequest, GSSENCRequest,
 * CancelRequest, StartupMessage), the ErrorResponse it answers with, and a
 * scanner that picks BackendKeyData out of a backend's byte stream as it
 * passes, without holding more than one small message.
 */
import type { Readable } from 'node:stream';

export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;
/** Protocol 3.0; 3.x clients (e.g. 3.2) are passed through and negotiated by Postgres. */
export const PROTOCOL_3 = 196608;
/** Postgres's own bound on a startup packet (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_LENGTH = 10_000;

/** A fault in what the client sent: answered with SQLSTATE `code` and closed. */
export class WireError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'WireError';
  }
}

export type FirstPacket =
  | { kind: 'ssl' }
  | { kind: 'gssenc' }
  | { kind: 'cancel'; key: Buffer; packet: Buffer }
  | { kind: 'startup'; version: number; params: Map<string, string> };

/** Reads one startup-phase packet: a big-endian int32 length (itself included) and the rest. */
export function readPacket(
  stream: Readable,
  maxLength = MAX_STARTUP_LENGTH,
): Promise<{ packet: Buffer; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    const finish = (err: Error | null, value?: { packet: Buffer; rest: Buffer }): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      stream.off('error', onError);
      stream.pause();
      if (err) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer): void => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      if (buf.length < 4) return;
      const length = buf.readUInt32BE(0);
      if (length < 8 || length > maxLength) {
        finish(new WireError('08P01', 'invalid length of startup packet'));
        return;
      }
      if (buf.length < length) return;
      finish(null, { packet: buf.subarray(0, length), rest: buf.subarray(length) });
    };
    const onEnd = (): void => finish(new WireError('08006', 'connection closed during startup'));
    const onError = (err: Error): void => finish(err);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.once('error', onError);
    stream.resume();
  });
}

/** Decodes a startup-phase packet (as returned by readPacket). */
export function parseFirstPacket(packet: Buffer): FirstPacket {
  const code = packet.readUInt32BE(4);
  if (code === SSL_REQUEST && packet.length === 8) return { kind: 'ssl' };
  if (code === GSSENC_REQUEST && packet.length === 8) return { kind: 'gssenc' };
  if (code === CANCEL_REQUEST && packet.length >= 16 && packet.length <= 16 + 252)
    return { kind: 'cancel', key: Buffer.from(packet.subarray(8)), packet: Buffer.from(packet) };
  if (code >>> 16 !== 3) {
    const version = `${code >>> 16}.${code & 0xffff}`;
    throw new WireError('0A000', `unsupported frontend protocol ${version}`);
  }
  const params = new Map<string, string>();
  let at = 8;
  for (;;) {
    const keyEnd = packet.indexOf(0, at);
    if (keyEnd < 0) throw new WireError('08P01', 'invalid startup packet layout');
    if (keyEnd === at) break; // the final empty name
    const valueEnd = packet.indexOf(0, keyEnd + 1);
    if (valueEnd < 0) throw new WireError('08P01', 'invalid startup packet layout');
    params.set(packet.toString('utf8', at, keyEnd), packet.toString('utf8', keyEnd + 1, valueEnd));
    at = valueEnd + 1;
  }
  if (at !== packet.length - 1)
    throw new WireError('08P01', 'invalid startup packet layout: expected terminator');
  if (!params.get('user'))
    throw new WireError('28000', 'no PostgreSQL user name specified in startup packet');
  return { kind: 'startup', version: code, params };
}

/** A StartupMessage with these parameters, in the client's protocol version. */
export function startupMessage(params: Map<string, string>, version = PROTOCOL_3): Buffer {
  const parts: Buffer[] = [Buffer.alloc(8)];
  for (const [k, v] of params) parts.push(Buffer.from(`${k}\0${v}\0`, 'utf8'));
  parts.push(Buffer.from([0]));
  const out = Buffer.concat(parts);
  out.writeUInt32BE(out.length, 0);
  out.writeUInt32BE(version, 4);
  return out;
}

export interface ErrorFields {
  /** SQLSTATE, e.g. 08P01. */
  code: string;
  message: string;
  detail?: string;
  hint?: string;
  /** Default FATAL: the front door only reports errors that end the connection. */
  severity?: string;
}

/** An ErrorResponse ('E') message. */
export function errorResponse(e: ErrorFields): Buffer {
  const severity = e.severity ?? 'FATAL';
  const fields: [string, string][] = [
    ['S', severity],
    ['V', severity],
    ['C', e.code],
    ['M', e.message],
  ];
  if (e.detail) fields.push(['D', e.detail]);
  if (e.hint) fields.push(['H', e.hint]);
  const body = Buffer.concat([
    ...fields.map(([t, v]) => Buffer.from(`${t}${v.replaceAll('\0', '')}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/**
 * Follows the backend's messages from the start of a connection until
 * ReadyForQuery or an ErrorResponse, and reports the BackendKeyData (the
 * payload a CancelRequest must repeat) on the way. Fed chunk by chunk; keeps
 * only the 5-byte header in progress and the body of a 'K' message.
 */
export class BackendKeyScanner {
  /** Set once the startup is over (ReadyForQuery, an error, or a malformed stream). */
  done = false;
  private header = Buffer.alloc(5);
  private headerHave = 0;
  private type = 0;
  private skip = 0;
  private keyBody: Buffer | null = null;
  private keyHave = 0;

  constructor(private readonly onKey: (key: Buffer) => void) {}

  feed(chunk: Buffer): void {
    let at = 0;
    while (!this.done && at < chunk.length) {
      if (this.keyBody) {
        const n = Math.min(this.keyBody.length - this.keyHave, chunk.length - at);
        chunk.copy(this.keyBody, this.keyHave, at, at + n);
        this.keyHave += n;
        at += n;
        if (this.keyHave === this.keyBody.length) {
          this.onKey(this.keyBody);
          this.keyBody = null;
        }
      } else if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
      } else {
        const n = Math.min(5 - this.headerHave, chunk.length - at);
        chunk.copy(this.header, this.headerHave, at, at + n);
        this.headerHave += n;
        at += n;
        if (this.headerHave === 5) this.startMessage();
      }
    }
  }

  private startMessage(): void {
    this.headerHave = 0;
    this.type = this.header[0]!;
    const bodyLength = this.header.readUInt32BE(1) - 4;
    const kind = String.fromCharCode(this.type);
    if (bodyLength < 0 || kind === 'Z' || kind === 'E') {
      this.done = true;
      return;
    }
    if (kind === 'K' && bodyLength >= 8 && bodyLength <= 260) {
      this.keyBody = Buffer.alloc(bodyLength);
      this.keyHave = 0;
    } else this.skip = bodyLength;
  }
}
