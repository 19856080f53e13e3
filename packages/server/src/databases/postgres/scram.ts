/**
 * SCRAM-SHA-256 secrets as PostgreSQL stores them (RFC 5802, RFC 7677):
 *
 *   SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
 *
 * Warren hashes a password itself and sends PostgreSQL only the secret
 * (`ALTER ROLE ... PASSWORD '<secret>'` stores a secret as it is), so the
 * password never reaches the sandbox, its files or its logs.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { WarrenError } from '@warren/protocol';

/** PostgreSQL's own defaults (scram_iterations, SCRAM_DEFAULT_SALT_LEN). */
const ITERATIONS = 4096;
const SALT_BYTES = 16;

/**
 * Printable ASCII only: PostgreSQL runs a password through SASLprep first,
 * which leaves such a password as it is; other characters could be mapped.
 */
const PASSWORD = /^[\x20-\x7e]{1,1024}$/;

export function scramSecret(password: string, salt: Buffer = randomBytes(SALT_BYTES)): string {
  if (!PASSWORD.test(password))
    throw new WarrenError(
      'INVALID_REQUEST',
      'a database password has 1 to 1024 printable ASCII characters',
    );
  const salted = pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const b64 = (b: Buffer) => b.toString('base64');
  return `SCRAM-SHA-256$${ITERATIONS}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
