/**
 * A webhook receiver on loopback for end-to-end tests: every delivery is
 * verified with the Standard Webhooks package against the secret of the
 * endpoint `subscribe` made for it, then handed to `onDelivery`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface VerifiedReceiver {
  url: string;
  close(): void;
}

export async function verifiedReceiver(
  subscribe: (url: string) => Promise<{ secret: string }>,
  onDelivery: (event: unknown, body: string) => void,
): Promise<VerifiedReceiver> {
  let secret = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
      );
      const body = Buffer.concat(chunks).toString();
      onDelivery(new Webhook(secret).verify(body, headers), body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  try {
    secret = (await subscribe(url)).secret;
  } catch (err) {
    close();
    throw err;
  }
  return { url, close };
}
