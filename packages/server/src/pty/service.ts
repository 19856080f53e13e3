/**
 * Terminal sessions of a sandbox, through HostApi: the sessions live in the
 * guest agent; this side resolves the sandbox (waking it if need be) and keeps
 * the short-lived query tokens that let a browser open a session's WebSocket
 * (a browser cannot set the Authorization header on a WebSocket).
 */
import {
  PTY_TOKEN_TTL_SECONDS,
  WarrenError,
  randomText,
  type HostApi,
  type PtyAttachHandlers,
  type PtyAttachment,
  type PtyCreateRequest,
  type PtyInfo,
  type PtyToken,
} from '@warren/protocol';
import { hashToken, type Principal } from '../auth';
import type { Config } from '../config';
import type { SandboxLifecycle } from '../sandboxes/lifecycle';

/** `wpty_` plus 40 random characters: recognisable, and neither an API key nor a preview token. */
export const PTY_TOKEN_PREFIX = 'wpty_';

interface IssuedToken {
  principal: Principal;
  sandboxId: string;
  ptyId: string;
  expiresAt: number;
}

export class PtyService {
  /** By token hash; each opens one WebSocket, once. */
  private readonly tokens = new Map<string, IssuedToken>();

  constructor(
    private readonly host: HostApi,
    private readonly lifecycle: SandboxLifecycle,
    private readonly config: Config,
  ) {}

  private async use(orgId: string, id: string): Promise<string> {
    return (await this.lifecycle.use(orgId, id)).id;
  }

  async create(orgId: string, id: string, body: PtyCreateRequest): Promise<PtyInfo> {
    return this.host.pty.create(await this.use(orgId, id), {
      ...body,
      idle_timeout: body.idle_timeout ?? this.config.ptyIdleTimeoutSeconds,
    });
  }

  async list(orgId: string, id: string): Promise<PtyInfo[]> {
    return this.host.pty.list(await this.use(orgId, id));
  }

  async get(orgId: string, id: string, ptyId: string): Promise<PtyInfo> {
    return this.host.pty.get(await this.use(orgId, id), ptyId);
  }

  async resize(orgId: string, id: string, ptyId: string, size: { cols: number; rows: number }) {
    return this.host.pty.resize(await this.use(orgId, id), ptyId, size);
  }

  async kill(orgId: string, id: string, ptyId: string): Promise<void> {
    await this.host.pty.kill(await this.use(orgId, id), ptyId);
  }

  async attach(
    orgId: string,
    id: string,
    ptyId: string,
    handlers: PtyAttachHandlers,
    since?: number,
  ): Promise<PtyAttachment> {
    return this.host.pty.attach(await this.use(orgId, id), ptyId, handlers, { since });
  }

  /** Counts a viewer's long attachment as activity of the sandbox when it ends. */
  activity(orgId: string, id: string): Promise<void> {
    return this.lifecycle.activity(orgId, id);
  }

  /** A token for ?token= on this session's WebSocket, for the caller's organisation and scopes. */
  async issueToken(
    principal: Principal,
    id: string,
    ptyId: string,
    ttlSeconds = PTY_TOKEN_TTL_SECONDS,
  ): Promise<PtyToken> {
    await this.get(principal.orgId, id, ptyId); // the session exists, in this organisation
    const now = Date.now();
    for (const [hash, t] of this.tokens) if (t.expiresAt <= now) this.tokens.delete(hash);
    const token = PTY_TOKEN_PREFIX + randomText(40);
    const expiresAt = now + Math.min(ttlSeconds, PTY_TOKEN_TTL_SECONDS) * 1000;
    this.tokens.set(hashToken(token), { principal, sandboxId: id, ptyId, expiresAt });
    return {
      token,
      expires_at: new Date(expiresAt).toISOString(),
      websocket_path: `/v1/sandboxes/${id}/pty/${ptyId}?token=${token}`,
    };
  }

  /** Takes a query token (it cannot be used again); UNAUTHORIZED unless it is for this session. */
  redeemToken(token: string, id: string, ptyId: string): Principal {
    const hash = hashToken(token);
    const issued = this.tokens.get(hash);
    if (issued) this.tokens.delete(hash);
    if (!issued || issued.sandboxId !== id || issued.ptyId !== ptyId)
      throw new WarrenError('UNAUTHORIZED', 'invalid or already used terminal token');
    if (issued.expiresAt <= Date.now())
      throw new WarrenError('UNAUTHORIZED', 'the terminal token has expired');
    return issued.principal;
  }
}
