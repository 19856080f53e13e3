import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { PTY_FRAME_HEADER, PTY_FRAME_OUTPUT } from '@warren/protocol/guest';
import type { GuestChannel, GuestResponse } from '../../src/guest/channel';
import { guestPty } from '../../src/guest/pty';

/** A channel whose attach answer the test sends when it wants (or never). */
function fakeChannel() {
  const held = new Set<() => void>();
  let answer: (res: GuestResponse) => void = () => undefined;
  const channel = {
    holdAttachment(end: () => void) {
      held.add(end);
      return () => held.delete(end);
    },
    dropAttachments() {
      for (const end of [...held]) end();
      held.clear();
    },
    request: () => new Promise<GuestResponse>((resolve) => (answer = resolve)),
  };
  return {
    held,
    drop: () => channel.dropAttachments(),
    answer: (res: GuestResponse) => answer(res),
    pty: guestPty(() => channel as unknown as GuestChannel),
  };
}

function handlers() {
  const seen = { ends: 0, data: [] as string[] };
  return {
    seen,
    h: {
      onData: (b: Buffer) => seen.data.push(b.toString()),
      onExit: () => undefined,
      onEnd: () => (seen.ends += 1),
    },
  };
}

function outputFrame(text: string): Buffer {
  const head = Buffer.alloc(PTY_FRAME_HEADER);
  head.writeUInt8(PTY_FRAME_OUTPUT, 0);
  head.writeUInt32LE(Buffer.byteLength(text), 1);
  return Buffer.concat([head, Buffer.from(text)]);
}

describe('guest terminal attachments', () => {
  it('a pause while the attach is unanswered ends it at once (the frozen guest would never answer)', async () => {
    const c = fakeChannel();
    const { seen, h } = handlers();
    const attaching = c.pty.attach('sbx', 'pty_1', h);
    assert.equal(c.held.size, 1, 'held before the guest answers');
    c.drop();
    const a = await attaching;
    assert.equal(seen.ends, 1, 'the viewer is told to attach again');
    a.write(Buffer.from('ignored'));
    a.close();
    assert.equal(seen.ends, 1);
    // A late answer is thrown away.
    const body = new PassThrough();
    c.answer({ status: 200, headers: {}, body } as unknown as GuestResponse);
    await new Promise((r) => setImmediate(r));
    assert.ok(body.destroyed);
  });

  it('an answered attach carries output until a pause ends it, once', async () => {
    const c = fakeChannel();
    const { seen, h } = handlers();
    const attaching = c.pty.attach('sbx', 'pty_1', h);
    const body = new PassThrough();
    c.answer({ status: 200, headers: {}, body } as unknown as GuestResponse);
    const a = await attaching;
    body.write(outputFrame('hi'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen.data, ['hi']);
    c.drop();
    assert.equal(seen.ends, 1);
    assert.ok(body.destroyed);
    a.close();
    assert.equal(seen.ends, 1);
    assert.equal(c.held.size, 0);
  });

  it('a refused attach is an error and holds nothing', async () => {
    const c = fakeChannel();
    const { seen, h } = handlers();
    const attaching = c.pty.attach('sbx', 'pty_x', h);
    const body = new PassThrough();
    body.end(JSON.stringify({ error: { code: 'PTY_NOT_FOUND', message: 'no such terminal' } }));
    c.answer({ status: 404, headers: {}, body } as unknown as GuestResponse);
    await assert.rejects(attaching, { code: 'PTY_NOT_FOUND' });
    assert.equal(c.held.size, 0);
    c.drop();
    assert.equal(seen.ends, 0);
  });
});
