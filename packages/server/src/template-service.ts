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
import type { Store } from './store/store';

export class TemplateService {
  constructor(
    private readonly store: Store,
    private readonly host: HostApi,
  ) {}

  list(): Promise<Template[]> {
    return this.host.templates.list();
  }

  async get(name: string): Promise<Template> {
    const t = await this.host.templates.get(name);
    if (!t)
      throw new WarrenError(
        'TEMPLATE_NOT_FOUND',
        `template ${JSON.stringify(name)} does not exist`,
      );
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

  build(req: TemplateBuildRequest, progress: BuildProgress): Promise<Template> {
    return this.host.templates.build(req, progress);
  }

  /** Cheap checks before an upload of what may be gigabytes is read. */
  checkNew(name: string): Promise<void> {
    return this.host.templates.checkNew(name);
  }

  buildFromImage(
    name: string,
    image: Readable,
    o: TemplateImageQuery,
    progress: BuildProgress,
  ): Promise<Template> {
    return this.host.templates.buildFromImage(name, image, o, progress);
  }

  /** A repeated recipe or image build replaces the root that sandboxes and snapshots run on. */
  async checkRebuild(name: string): Promise<void> {
    if (await this.host.templates.rebuildReplacesRoot(name))
      await this.refuseInUse(name, 'rebuild');
  }

  rebuild(name: string, progress: BuildProgress): Promise<Template> {
    return this.host.templates.rebuild(name, progress);
  }

  async remove(name: string): Promise<void> {
    await this.get(name);
    await this.refuseInUse(name, 'delete');
    await this.host.templates.remove(name);
  }
}
