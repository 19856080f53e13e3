import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveUser } from '../../src/users';

test('resolveUser reads passwd and group: names, uids, uid:gid, name:group', async (t) => {
  const etc = mkdtempSync(join(tmpdir(), 'warren-users-'));
  t.after(() => rmSync(etc, { recursive: true, force: true }));
  writeFileSync(
    join(etc, 'passwd'),
    'root:x:0:0:root:/root:/bin/bash\n# comment\napp:x:1000:1001:App:/home/app:/bin/sh\nnohome:x:7:7::\n',
  );
  writeFileSync(join(etc, 'group'), 'root:x:0:\nstaff:x:50:app\napp:x:1001:\n');
  const r = (spec: string) => resolveUser(spec, etc);
  assert.deepEqual(await r('root'), { uid: 0, gid: 0, name: 'root', home: '/root' });
  assert.deepEqual(await r('app'), { uid: 1000, gid: 1001, name: 'app', home: '/home/app' });
  assert.deepEqual(await r('1000'), { uid: 1000, gid: 1001, name: 'app', home: '/home/app' });
  assert.deepEqual(await r('app:staff'), { uid: 1000, gid: 50, name: 'app', home: '/home/app' });
  assert.deepEqual(await r('1234'), { uid: 1234, gid: 1234, name: '1234', home: '/' });
  assert.deepEqual(await r('1234:99'), { uid: 1234, gid: 99, name: '1234', home: '/' });
  assert.equal((await r('nohome')).home, '/');
  for (const bad of ['ghost', 'app:ghosts', 'app:', ':1', '1:2:3', '99999999999']) {
    await assert.rejects(r(bad), { code: 'USER_NOT_FOUND' }, bad);
  }
});
