/** The front door's framing and routing helpers, byte by byte and name by name. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  endpointFromSni,
  parseEndpoint,
  routeStartup,
  takeEndpointOption,
} from '../../src/databases/front-door/routing';
import { normaliseNames } from '../../src/databases/front-door/tls';
import {
  BackendKeyScanner,
  errorResponse,
  parseFirstPacket,
  startupMessage,
  WireError,
} from '../../src/databases/front-door/wire';

const DB = 'db_0123456789abcdefghij';

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

describe('front door wire format', () => {
  it('round-trips a StartupMessage, keeping the protocol version', () => {
    const params = new Map([
      ['user', 'app'],
      ['database', 'shop'],
      ['_pq_.x', 'y'],
    ]);
    const packet = startupMessage(params, 196610);
    const parsed = parseFirstPacket(packet);
    assert.deepEqual(parsed, { kind: 'startup', version: 196610, params });
  });

  it('refuses malformed packets with SQLSTATEs', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as WireError).code;
      }
      return 'accepted';
    };
    const v2 = Buffer.from([0, 0, 0, 8, 0, 2, 0, 0]);
    assert.equal(
      code(() => parseFirstPacket(v2)),
      '0A000',
    );
    const noTerminator = Buffer.from('\0\0\0\x0e\0\x03\0\0user\0a', 'latin1');
    assert.equal(
      code(() => parseFirstPacket(noTerminator)),
      '08P01',
    );
    assert.equal(
      code(() => parseFirstPacket(startupMessage(new Map()))),
      '28000',
    );
  });

  it('builds an ErrorResponse with severity, code, message and hint', () => {
    const e = errorResponse({ code: '3D000', message: 'nope', hint: 'try' });
    assert.equal(e[0], 'E'.charCodeAt(0));
    assert.equal(e.readUInt32BE(1), e.length - 1);
    assert.equal(e.subarray(5).toString('utf8'), 'SFATAL\0VFATAL\0C3D000\0Mnope\0Htry\0\0');
  });

  it('finds BackendKeyData however the stream is cut, and stops at ReadyForQuery', () => {
    const key = Buffer.from([0, 0, 0x10, 0x01, 0xde, 0xad, 0xbe, 0xef]);
    const stream = Buffer.concat([
      message('R', Buffer.alloc(4)),
      message('S', Buffer.from('server_version\x0017\0')),
      message('K', key),
      message('Z', Buffer.from('I')),
      message('K', Buffer.alloc(8)), // after the startup: not looked at
    ]);
    for (const size of [1, 3, 7, stream.length]) {
      const seen: string[] = [];
      const scanner = new BackendKeyScanner((k) => seen.push(k.toString('hex')));
      for (let i = 0; i < stream.length; i += size) scanner.feed(stream.subarray(i, i + size));
      assert.deepEqual(seen, [key.toString('hex')], `chunks of ${size}`);
      assert.equal(scanner.done, true);
    }
  });
});

describe('front door routing', () => {
  it('reads endpoints, with db- for db_ and -pooler for PgBouncer', () => {
    assert.deepEqual(parseEndpoint(DB), { databaseId: DB, pooled: false });
    assert.deepEqual(parseEndpoint(`${DB}-pooler`), { databaseId: DB, pooled: true });
    assert.deepEqual(parseEndpoint('DB-0123456789ABCDEFGHIJ'), { databaseId: DB, pooled: false });
    for (const bad of ['db_short', 'sbx_0123456789abcdefghij', `${DB}-pool`, `x${DB}`])
      assert.equal(parseEndpoint(bad), null, bad);
  });

  it('takes the first SNI label only under the configured domain', () => {
    assert.deepEqual(endpointFromSni(`${DB}.pg.example`, 'pg.example'), {
      databaseId: DB,
      pooled: false,
    });
    assert.equal(endpointFromSni(`${DB}.evil.example`, 'pg.example'), null);
    assert.equal(endpointFromSni(`${DB}.pg.example.evil`, 'pg.example'), null);
    assert.equal(endpointFromSni('localhost', 'pg.example'), null);
    assert.deepEqual(endpointFromSni(`${DB}.anything`), { databaseId: DB, pooled: false });
    assert.equal(endpointFromSni(null, 'pg.example'), null);
  });

  it('takes endpoint= out of options in its three spellings, keeping escapes', () => {
    assert.deepEqual(takeEndpointOption(`endpoint=${DB}`), { endpoints: [DB], rest: '' });
    assert.deepEqual(takeEndpointOption(`-c a=b\\ c --endpoint=${DB} -cx=y`), {
      endpoints: [DB],
      rest: '-c a=b\\ c -cx=y',
    });
    assert.deepEqual(takeEndpointOption(`-c endpoint=${DB}  -c  geqo=off`), {
      endpoints: [DB],
      rest: '-c geqo=off',
    });
    assert.deepEqual(takeEndpointOption('-c search_path=x'), {
      endpoints: [],
      rest: '-c search_path=x',
    });
  });

  it('leaves user names with dots that are not endpoints alone', () => {
    const params = new Map([['user', 'first.last']]);
    const r = routeStartup(params, `${DB}.pg.example`, 'pg.example');
    assert.equal(r.user, 'first.last');
    assert.equal(r.database, 'first.last', 'the database defaults to the role');
  });

  it('answers an options endpoint that is not one with 3D000', () => {
    const params = new Map([
      ['user', 'app'],
      ['options', 'endpoint=mydb'],
    ]);
    assert.throws(() => routeStartup(params, null), { code: '3D000' });
  });
});

describe('database certificate names', () => {
  it('classifies bare names and addresses and refuses what openssl could misread', () => {
    assert.deepEqual(normaliseNames(['localhost', '127.0.0.1', '[::1]', 'DNS:*.Pg.Example']), [
      'DNS:localhost',
      'IP:127.0.0.1',
      'IP:::1',
      'DNS:*.pg.example',
    ]);
    for (const bad of ['a,DNS:evil', 'IP:not-an-ip', 'a b', '*.*.x', ''])
      assert.throws(() => normaliseNames([bad]), Error, bad);
  });
});
