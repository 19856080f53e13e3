/**
 * The cases of the isolation matrix (test/e2e/isolation.test.ts): every
 * route of the route table with a path parameter, and what organisation B's
 * call with A's ids must answer.
 */

/** What B sends on one route: a body or query that passes validation, and the code it must get. */
export interface Case {
  code: string;
  json?: unknown;
  query?: string;
  /** A raw body (uploads), with its content type. */
  raw?: { type: string; body: string };
  status?: number;
}

export const SBX = 'SANDBOX_NOT_FOUND';
const cmd = { cmd: 'true' };
const octet = { type: 'application/octet-stream', body: 'overwritten by B' };

/** Every route of the table with a path parameter, and what B's call with A's ids must answer. */
export const CASES: Record<string, Case> = {
  'GET /v1/sandboxes/:id': { code: SBX },
  'PATCH /v1/sandboxes/:id': { code: SBX, json: { metadata: { by: 'b' } } },
  'DELETE /v1/sandboxes/:id': { code: SBX },
  'POST /v1/sandboxes/:id/pause': { code: SBX },
  'POST /v1/sandboxes/:id/resume': { code: SBX },
  'POST /v1/sandboxes/:id/hibernate': { code: SBX },
  'POST /v1/sandboxes/:id/wake': { code: SBX },
  'GET /v1/sandboxes/:id/events': { code: SBX },
  'POST /v1/sandboxes/:id/preview-token': { code: SBX },
  'GET /v1/sandboxes/:id/network': { code: SBX },
  'PUT /v1/sandboxes/:id/network': { code: SBX, json: { mode: 'open' } },
  'GET /v1/sandboxes/:id/egress': { code: SBX },
  'GET /v1/sandboxes/:id/metrics': { code: SBX },
  'POST /v1/sandboxes/:id/exec': { code: SBX, json: cmd },
  'POST /v1/sandboxes/:id/exec/stream': { code: SBX, json: cmd },
  'POST /v1/sandboxes/:id/processes': { code: SBX, json: cmd },
  'GET /v1/sandboxes/:id/processes': { code: SBX },
  'GET /v1/sandboxes/:id/processes/:pid': { code: SBX },
  'GET /v1/sandboxes/:id/processes/:pid/output': { code: SBX, query: 'follow=false' },
  'POST /v1/sandboxes/:id/processes/:pid/stdin': { code: SBX, json: { data: 'x' } },
  'POST /v1/sandboxes/:id/processes/:pid/signal': { code: SBX, json: { signal: 'SIGKILL' } },
  'POST /v1/sandboxes/:id/pty': { code: SBX, json: { cols: 80, rows: 24 } },
  'GET /v1/sandboxes/:id/pty': { code: SBX },
  'GET /v1/sandboxes/:id/pty/:pty_id': { code: SBX },
  'DELETE /v1/sandboxes/:id/pty/:pty_id': { code: SBX },
  'POST /v1/sandboxes/:id/pty/:pty_id/resize': { code: SBX, json: { cols: 100, rows: 30 } },
  'POST /v1/sandboxes/:id/pty/:pty_id/token': { code: SBX, json: {} },
  'POST /v1/sandboxes/:id/code': { code: SBX, json: { code: 'echo by-b', language: 'bash' } },
  'POST /v1/sandboxes/:id/code/contexts': { code: SBX, json: { language: 'bash' } },
  'GET /v1/sandboxes/:id/code/contexts': { code: SBX },
  'POST /v1/sandboxes/:id/code/contexts/:context_id/restart': { code: SBX },
  'DELETE /v1/sandboxes/:id/code/contexts/:context_id': { code: SBX },
  'DELETE /v1/sandboxes/:id/code/executions/:execution_id': { code: SBX },
  'GET /v1/sandboxes/:id/lsp': { code: SBX, query: 'language=python&root=/root' },
  'POST /v1/sandboxes/:id/lsp/token': { code: SBX, json: {} },
  'POST /v1/sandboxes/:id/lsp/:action': {
    code: SBX,
    json: { language: 'python', path: '/tmp/a.txt', line: 1, col: 1 },
  },
  'GET /v1/sandboxes/:id/files': { code: SBX, query: 'path=/tmp/a.txt' },
  'PUT /v1/sandboxes/:id/files': { code: SBX, query: 'path=/tmp/a.txt', raw: octet },
  'DELETE /v1/sandboxes/:id/files': { code: SBX, query: 'path=/tmp/a.txt' },
  'GET /v1/sandboxes/:id/files/list': { code: SBX, query: 'path=/tmp' },
  'GET /v1/sandboxes/:id/files/stat': { code: SBX, query: 'path=/tmp/a.txt' },
  'GET /v1/sandboxes/:id/files/watch': { code: SBX, query: 'path=/tmp&recursive=true' },
  'POST /v1/sandboxes/:id/files/mkdir': { code: SBX, json: { path: '/tmp/by-b' } },
  'POST /v1/sandboxes/:id/files/rename': { code: SBX, json: { from: '/tmp/a.txt', to: '/tmp/b' } },
  'POST /v1/sandboxes/:id/snapshots': { code: SBX },
  'POST /v1/sandboxes/:id/fork': { code: SBX, json: {} },
  'POST /v1/sandboxes/:id/fork-tree': { code: SBX, json: { count: 1 } },
  'GET /v1/snapshots/:snapshot_id': { code: 'SNAPSHOT_NOT_FOUND' },
  'DELETE /v1/snapshots/:snapshot_id': { code: 'SNAPSHOT_NOT_FOUND' },
  'GET /v1/templates/:name': { code: 'TEMPLATE_NOT_FOUND' },
  'DELETE /v1/templates/:name': { code: 'TEMPLATE_NOT_FOUND' },
  'POST /v1/templates/:name/rebuild': { code: 'TEMPLATE_NOT_FOUND' },
  // Uploading an image makes a new template: template names are one namespace across
  // organisations (docs/security.md), so A's name is taken for B. Nothing of A's is read.
  'POST /v1/templates/:name/image': {
    code: 'TEMPLATE_EXISTS',
    status: 409,
    raw: { type: 'application/x-tar', body: 'not a tar' },
  },
  'GET /v1/volumes/:name': { code: 'VOLUME_NOT_FOUND' },
  'DELETE /v1/volumes/:name': { code: 'VOLUME_NOT_FOUND' },
  'GET /v1/databases/:id': { code: 'DATABASE_NOT_FOUND' },
  'PATCH /v1/databases/:id': { code: 'DATABASE_NOT_FOUND', json: { label: 'by-b' } },
  'DELETE /v1/databases/:id': { code: 'DATABASE_NOT_FOUND' },
  'POST /v1/databases/:id/password': { code: 'DATABASE_NOT_FOUND' },
  'POST /v1/databases/:id/restore': { code: 'DATABASE_NOT_FOUND', json: {} },
  'POST /v1/databases/:id/branches': { code: 'DATABASE_NOT_FOUND', json: {} },
  'GET /v1/databases/:id/events': { code: 'DATABASE_NOT_FOUND' },
  'GET /v1/databases/:id/logs': { code: 'DATABASE_NOT_FOUND' },
  'DELETE /v1/keys/:id': { code: 'KEY_NOT_FOUND' },
  'GET /v1/orgs/:id/quotas': { code: 'ORGANISATION_NOT_FOUND' },
  'PUT /v1/orgs/:id/quotas': { code: 'ORGANISATION_NOT_FOUND', json: { sandboxes: 0 } },
  'GET /v1/webhooks/:id': { code: 'WEBHOOK_NOT_FOUND' },
  'PATCH /v1/webhooks/:id': { code: 'WEBHOOK_NOT_FOUND', json: { description: 'by b' } },
  'DELETE /v1/webhooks/:id': { code: 'WEBHOOK_NOT_FOUND' },
  'POST /v1/webhooks/:id/rotate-secret': { code: 'WEBHOOK_NOT_FOUND' },
  'GET /v1/webhooks/:id/deliveries': { code: 'WEBHOOK_NOT_FOUND' },
  'POST /v1/webhooks/:id/deliveries/:message_id/redeliver': { code: 'WEBHOOK_NOT_FOUND' },
  // Hosts belong to the install, not to an organisation: another organisation's admin is refused.
  'GET /v1/hosts/:id': { code: 'MISSING_SCOPE', status: 403 },
  'POST /v1/hosts/:id/drain': { code: 'MISSING_SCOPE', status: 403 },
  'DELETE /v1/hosts/:id': { code: 'MISSING_SCOPE', status: 403 },
  // An API key is not a host's credential.
  'POST /v1/hosts/:id/heartbeat': {
    code: 'UNAUTHORIZED',
    status: 401,
    json: {
      epoch: 1,
      url: 'http://127.0.0.1:9',
      capacity: { memory_budget_mb: 1, memory_reserved_mb: 0, sandboxes: 0 },
      version: 'b',
      templates: [],
    },
  },
};
