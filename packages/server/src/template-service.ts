/**
 * Templates as the control plane sees them: the host builds and keeps them;
 * here a build that would replace a root, or a delete, is refused while
 * sandboxes or snapshots depend on the template.
 */
import type { Readable } from 'node:stream';
import {
  WarrenError,
  type BuildProgress,
  type HostApi,
  type Template,
  type TemplateBuildRequest,
  type TemplateImageQuery,
} from '@warren/protocol';
import type { Principal } from './auth';
import type { Store } from './store/store';
import { TemplateOwnerQueries } from './store/template-owners';

function notFound(name: string): WarrenError {
  return new WarrenError('TEMPLATE_NOT_FOUND', `template ${JSON.stringify(name)} does not exist`);
}

export class TemplateService {
  private readonly owners: TemplateOwnerQueries;

  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
  ) {
    this.owners = new TemplateOwnerQueries(store.db);
  }

  /** Official templates and the organisation's own; another organisation's do not exist for it. */
  async list(orgId: string): Promise<Template[]> {
    const owners = await this.owners.templateOwners();
    const all = await this.host.templates.list();
    return all.filter((t) => (owners.get(t.name) ?? orgId) === orgId);
  }

  /** TEMPLATE_NOT_FOUND if another organisation built it; reads the store only, not the host. */
  async checkVisible(orgId: string, name: string): Promise<string | undefined> {
    const owner = await this.owners.templateOwner(name);
    if (owner !== undefined && owner !== orgId) throw notFound(name);
    return owner;
  }

  async get(orgId: string, name: string): Promise<Template> {
    await this.checkVisible(orgId, name);
    const t = await this.host.templates.get(name);
    if (!t) throw notFound(name);
    return t;
  }

  /** Rebuilds and deletes: of the organisation's own templates, or official ones by the install's admin. */
  async checkWritable(p: Principal, name: string): Promise<void> {
    const owner = await this.checkVisible(p.orgId, name);
    if (owner === undefined && !p.installAdmin && (await this.host.templates.get(name)))
      throw new WarrenError(
        'MISSING_SCOPE',
        `template ${name} is official: only an admin key of the install changes it`,
        { missing_scope: 'admin' },
      );
  }

  /** A name another organisation holds is taken. */
  private async checkName(orgId: string, name: string): Promise<void> {
    const owner = await this.owners.templateOwner(name);
    if (owner !== undefined && owner !== orgId)
      throw new WarrenError('TEMPLATE_EXISTS', `a template named ${name} already exists`);
  }

  private async owned(orgId: string, built: Promise<Template>): Promise<Template> {
    const t = await built;
    await this.owners.setTemplateOwner(t.name, orgId);
    return t;
  }

  private async refuseInUse(name: string, action: string): Promise<void> {
    const d = await this.store.templateDependents(name);
    if (d.sandboxes + d.snapshots > 0)
      throw new WarrenError(
        'TEMPLATE_IN_USE',
        `cannot ${action} template ${name}: ${d.sandboxes} sandbox(es) and ${d.snapshots} snapshot(s) depend on it`,
        d,
      );
  }

  async build(orgId: string, req: TemplateBuildRequest, progress: BuildProgress) {
    await this.checkName(orgId, req.name);
    if (req.base) await this.get(orgId, req.base);
    return this.owned(orgId, this.host.templates.build(req, progress));
  }

  /** Cheap checks before an upload of what may be gigabytes is read. */
  async checkNew(orgId: string, name: string): Promise<void> {
    await this.checkName(orgId, name);
    return this.host.templates.checkNew(name);
  }

  buildFromImage(
    orgId: string,
    name: string,
    image: Readable,
    o: TemplateImageQuery,
    progress: BuildProgress,
  ): Promise<Template> {
    return this.owned(orgId, this.host.templates.buildFromImage(name, image, o, progress));
  }

  /** A repeated recipe or image build replaces the root that sandboxes and snapshots run on. */
  async checkRebuild(name: string): Promise<void> {
    if (await this.host.templates.rebuildReplacesRoot(name))
      await this.refuseInUse(name, 'rebuild');
  }

  rebuild(name: string, progress: BuildProgress): Promise<Template> {
    return this.host.templates.rebuild(name, progress);
  }

  async remove(p: Principal, name: string): Promise<void> {
    await this.get(p.orgId, name);
    await this.checkWritable(p, name);
    await this.refuseInUse(name, 'delete');
    await this.host.templates.remove(name);
    await this.owners.removeTemplateOwner(name);
  }
}
