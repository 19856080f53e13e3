/**
 * The scopes every route needs, in one table. Fastify route urls are the key
 * (`METHOD /v1/path/:param`). `public` routes need no key; `any` routes need a
 * valid key and no scope (their handlers narrow further). app.ts refuses to
 * start with a /v1 route missing here, and a unit test checks the same.
 */
import type { Scope } from '@warren/protocol';

export type RouteAccess = 'public' | 'any' | readonly Scope[];

const read: Scope[] = ['sandboxes:read'];
const write: Scope[] = ['sandboxes:write'];

export const ROUTE_SCOPES: Record<string, RouteAccess> = {
  'GET /v1/health': 'public',
  'GET /v1/databases/ca.pem': 'public',
  'GET /v1/openapi.json': 'any',
  // Agents present a join token or their host credential, checked by the handler.
  'POST /v1/hosts/join': 'public',
  'POST /v1/hosts/:id/heartbeat': 'public',
  // The handlers narrow these to the install's admin.
  'POST /v1/hosts/join-tokens': ['admin'],
  'GET /v1/hosts': ['admin'],
  'GET /v1/hosts/:id': ['admin'],
  'POST /v1/hosts/:id/drain': ['admin'],
  'DELETE /v1/hosts/:id': ['admin'],

  'POST /v1/sandboxes': write,
  'GET /v1/sandboxes': read,
  'GET /v1/sandboxes/:id': read,
  'PATCH /v1/sandboxes/:id': write,
  'DELETE /v1/sandboxes/:id': write,
  'POST /v1/sandboxes/:id/pause': write,
  'POST /v1/sandboxes/:id/resume': write,
  'POST /v1/sandboxes/:id/hibernate': write,
  'POST /v1/sandboxes/:id/wake': write,
  'GET /v1/sandboxes/:id/events': read,
  'POST /v1/sandboxes/:id/preview-token': write,
  'GET /v1/sandboxes/:id/network': read,
  'PUT /v1/sandboxes/:id/network': write,
  'GET /v1/sandboxes/:id/egress': read,
  'GET /v1/sandboxes/:id/metrics': read,
  // A key sees its organisation's usage; the install's admin sees every organisation's.
  'GET /v1/usage': read,

  'POST /v1/sandboxes/:id/exec': ['exec'],
  'POST /v1/sandboxes/:id/exec/stream': ['exec'],
  'POST /v1/sandboxes/:id/processes': ['exec'],
  'GET /v1/sandboxes/:id/processes': ['exec'],
  'GET /v1/sandboxes/:id/processes/:pid': ['exec'],
  'GET /v1/sandboxes/:id/processes/:pid/output': ['exec'],
  'POST /v1/sandboxes/:id/processes/:pid/stdin': ['exec'],
  'POST /v1/sandboxes/:id/processes/:pid/signal': ['exec'],
  'POST /v1/sandboxes/:id/pty': ['exec'],
  'GET /v1/sandboxes/:id/pty': ['exec'],
  'GET /v1/sandboxes/:id/pty/:pty_id': ['exec'],
  'DELETE /v1/sandboxes/:id/pty/:pty_id': ['exec'],
  'POST /v1/sandboxes/:id/pty/:pty_id/resize': ['exec'],
  'POST /v1/sandboxes/:id/pty/:pty_id/token': ['exec'],
  // Running code is running a program in the sandbox.
  'POST /v1/sandboxes/:id/code': ['exec'],
  'POST /v1/sandboxes/:id/code/contexts': ['exec'],
  'GET /v1/sandboxes/:id/code/contexts': ['exec'],
  'POST /v1/sandboxes/:id/code/contexts/:context_id/restart': ['exec'],
  'DELETE /v1/sandboxes/:id/code/contexts/:context_id': ['exec'],
  'DELETE /v1/sandboxes/:id/code/executions/:execution_id': ['exec'],
  'GET /v1/sandboxes/:id/lsp': ['exec'],
  'POST /v1/sandboxes/:id/lsp/token': ['exec'],
  'POST /v1/sandboxes/:id/lsp/:action': ['exec'],

  'GET /v1/sandboxes/:id/files': ['files'],
  'PUT /v1/sandboxes/:id/files': ['files'],
  'DELETE /v1/sandboxes/:id/files': ['files'],
  'GET /v1/sandboxes/:id/files/list': ['files'],
  'GET /v1/sandboxes/:id/files/stat': ['files'],
  'POST /v1/sandboxes/:id/files/mkdir': ['files'],
  'POST /v1/sandboxes/:id/files/rename': ['files'],
  'GET /v1/sandboxes/:id/files/watch': ['files'],

  'POST /v1/sandboxes/:id/snapshots': ['snapshots'],
  'GET /v1/snapshots': ['snapshots'],
  'GET /v1/snapshots/:snapshot_id': ['snapshots'],
  'DELETE /v1/snapshots/:snapshot_id': ['snapshots'],
  // A fork makes sandboxes: it needs both.
  'POST /v1/sandboxes/:id/fork': ['snapshots', 'sandboxes:write'],
  'POST /v1/sandboxes/:id/fork-tree': ['snapshots', 'sandboxes:write'],

  'GET /v1/templates': ['templates'],
  'POST /v1/templates': ['templates'],
  'GET /v1/templates/:name': ['templates'],
  'DELETE /v1/templates/:name': ['templates'],
  'POST /v1/templates/:name/image': ['templates'],
  'POST /v1/templates/:name/rebuild': ['templates'],

  'POST /v1/volumes': ['volumes'],
  'GET /v1/volumes': ['volumes'],
  'GET /v1/volumes/:name': ['volumes'],
  'DELETE /v1/volumes/:name': ['volumes'],

  'POST /v1/databases': ['databases'],
  'GET /v1/databases': ['databases'],
  'GET /v1/databases/:id': ['databases'],
  'PATCH /v1/databases/:id': ['databases'],
  'DELETE /v1/databases/:id': ['databases'],
  'POST /v1/databases/:id/password': ['databases'],
  'POST /v1/databases/:id/restore': ['databases'],
  'POST /v1/databases/:id/branches': ['databases'],
  'GET /v1/databases/:id/events': ['databases'],
  'GET /v1/databases/:id/logs': ['databases'],

  'GET /v1/audit': ['audit'],

  'POST /v1/keys': ['keys'],
  'GET /v1/keys': ['keys'],
  'DELETE /v1/keys/:id': ['keys'],
  'POST /v1/orgs': ['admin'],
  // Every key sees its own organisation; the install's admin sees them all.
  'GET /v1/orgs': 'any',

  // Outside /v1, so the access hooks leave it alone: its handler (routes/metrics.ts) checks this,
  // and that the key is of the install's organisation.
  'GET /metrics': ['admin'],
  // MCP (routes/mcp.ts), outside /v1 too: any valid key; each tool call then goes through
  // the /v1 routes with the caller's key, and needs what that route needs.
  'POST /mcp': 'any',
  'GET /mcp': 'any',
  'DELETE /mcp': 'any',
  // Quotas: an organisation reads its own; the install's admin sets anyone's.
  'GET /v1/quotas': 'any',
  'GET /v1/orgs/:id/quotas': ['admin'],
  'PUT /v1/orgs/:id/quotas': ['admin'],
  'POST /v1/webhooks': ['webhooks'],
  'GET /v1/webhooks': ['webhooks'],
  'GET /v1/webhooks/:id': ['webhooks'],
  'PATCH /v1/webhooks/:id': ['webhooks'],
  'DELETE /v1/webhooks/:id': ['webhooks'],
  'POST /v1/webhooks/:id/rotate-secret': ['webhooks'],
  'GET /v1/webhooks/:id/deliveries': ['webhooks'],
  'POST /v1/webhooks/:id/deliveries/:message_id/redeliver': ['webhooks'],
};

/** The access a route declares; HEAD routes are their GET's. Undefined when it declares none. */
export function routeAccess(method: string, url: string): RouteAccess | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return ROUTE_SCOPES[`${m} ${url}`];
}
