/**
 * Official templates that are not built yet still exist: they are listed with
 * state `not_built` (or `building` / `error` while and after a first build) and
 * say how to build them, and a create from one is refused with
 * TEMPLATE_NOT_BUILT naming that command instead of TEMPLATE_NOT_FOUND.
 * Build states live in memory: after a restart an unbuilt template is
 * `not_built` again (an interrupted build leaves nothing, see removeInterrupted).
 */
import { WarrenError } from '@warren/protocol';

export interface BuildHint {
  cli: string;
  api: string;
}

/** The command and the API call that build (or rebuild) an official template. */
export function buildHint(name: string): BuildHint {
  return {
    cli: `warren template rebuild ${name}`,
    api: `POST /v1/templates/${name}/rebuild`,
  };
}

export function notBuiltError(name: string, lastError?: string): WarrenError {
  const hint = buildHint(name);
  const failed = lastError ? ` (its last build failed: ${lastError})` : '';
  return new WarrenError(
    'TEMPLATE_NOT_BUILT',
    `template ${name} is an official template that is not built on this host${failed}: ` +
      `build it with \`${hint.cli}\` or ${hint.api} (an admin key of the install; takes a few minutes)`,
    { template: name, build: hint },
  );
}

/** First and repeated builds of official templates: one at a time per name, and how the last one ended. */
export class OfficialBuilds {
  private readonly running = new Set<string>();
  private readonly failed = new Map<string, string>();

  isBuilding(name: string): boolean {
    return this.running.has(name);
  }

  /** Why the last build of the template failed, until one succeeds. */
  lastError(name: string): string | undefined {
    return this.failed.get(name);
  }

  async run<T>(name: string, build: () => Promise<T>): Promise<T> {
    if (this.running.has(name))
      throw new WarrenError('TEMPLATE_IN_USE', `template ${name} is being built`);
    this.running.add(name);
    try {
      const out = await build();
      this.failed.delete(name);
      return out;
    } catch (err) {
      this.failed.set(name, err instanceof Error ? err.message : String(err));
      throw err;
    } finally {
      this.running.delete(name);
    }
  }
}
