/**
 * Resolves the user a process runs as from the sandbox's own /etc/passwd and
 * /etc/group: "root", a name, "uid", "uid:gid" or "name:group". A numeric uid
 * without a passwd entry is allowed (its gid is then the uid, its home "/").
 */
import { readFile } from 'node:fs/promises';
import { WarrenError } from '@warren/protocol/errors';

export interface ResolvedUser {
  uid: number;
  gid: number;
  name: string;
  home: string;
}

interface Entry {
  name: string;
  id: number;
  gid: number;
  home: string;
}

const NUMERIC = /^\d{1,10}$/;
const MAX_ID = 0xfffffffe;

async function readTable(path: string): Promise<string[][]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(':'));
}

async function passwd(etc: string): Promise<Entry[]> {
  return (await readTable(`${etc}/passwd`))
    .filter((f) => f.length >= 4)
    .map((f) => ({
      name: f[0] ?? '',
      id: Number(f[2]),
      gid: Number(f[3]),
      home: f[5] || '/',
    }));
}

async function groups(etc: string): Promise<Entry[]> {
  return (await readTable(`${etc}/group`))
    .filter((f) => f.length >= 3)
    .map((f) => ({ name: f[0] ?? '', id: Number(f[2]), gid: Number(f[2]), home: '' }));
}

function numericId(s: string): number | null {
  if (!NUMERIC.test(s)) return null;
  const n = Number(s);
  return n <= MAX_ID ? n : null;
}

/** `etc` is where passwd and group are read from (tests give their own). */
export async function resolveUser(spec: string, etc = '/etc'): Promise<ResolvedUser> {
  const [userPart = '', groupPart, ...rest] = spec.split(':');
  if (!userPart || rest.length > 0 || groupPart === '') {
    throw new WarrenError('USER_NOT_FOUND', `invalid user "${spec}"`);
  }
  const users = await passwd(etc);
  const uidNum = numericId(userPart);
  const entry =
    uidNum !== null ? users.find((u) => u.id === uidNum) : users.find((u) => u.name === userPart);
  if (!entry && uidNum === null) {
    throw new WarrenError('USER_NOT_FOUND', `no user "${userPart}" in the sandbox's /etc/passwd`);
  }
  const uid = entry?.id ?? uidNum ?? 0;
  let gid = entry && Number.isInteger(entry.gid) ? entry.gid : uid;
  if (groupPart !== undefined) {
    const gidNum = numericId(groupPart);
    if (gidNum !== null) gid = gidNum;
    else {
      const g = (await groups(etc)).find((e) => e.name === groupPart);
      if (!g || !Number.isInteger(g.id)) {
        throw new WarrenError(
          'USER_NOT_FOUND',
          `no group "${groupPart}" in the sandbox's /etc/group`,
        );
      }
      gid = g.id;
    }
  }
  return { uid, gid, name: entry?.name ?? String(uid), home: entry?.home ?? '/' };
}

/** The login shell of the passwd entry of `uid`, if it names one. */
export async function loginShell(uid: number, etc = '/etc'): Promise<string | undefined> {
  const entry = (await readTable(`${etc}/passwd`)).find((f) => Number(f[2]) === uid);
  return entry?.[6] || undefined;
}
