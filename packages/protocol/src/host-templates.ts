/**
 * The templates part of HostApi: each host keeps its own templates on disk;
 * with a shared (S3) snapshot store one host's build is published there and
 * fetched by the others instead of being built again.
 */
import type { Readable } from 'node:stream';
import type { Template, TemplateBuildRequest, TemplateImageQuery } from './api';

/** A log line of a template build; `step` is 1-based. */
export type BuildProgress = (line: string, step?: number) => void;

export interface HostTemplateApi {
  list(): Promise<Template[]>;
  /** null when there is no such template. */
  get(name: string): Promise<Template | null>;
  /** Builds what is missing of built-in templates and bakes stale snapshots (at start). */
  ensure(names: string[], progress: BuildProgress): Promise<void>;
  build(req: TemplateBuildRequest, progress: BuildProgress): Promise<Template>;
  /** Checks that an image upload may start (name free) before its bytes are read. */
  checkNew(name: string): Promise<void>;
  /** Builds from an uploaded image (OCI layout or `docker save` tar, optionally gzipped). */
  buildFromImage(
    name: string,
    image: Readable,
    o: TemplateImageQuery,
    progress: BuildProgress,
  ): Promise<Template>;
  /** Whether a rebuild repeats a recipe or image build (and so replaces the template's root). */
  rebuildReplacesRoot(name: string): Promise<boolean>;
  rebuild(name: string, progress: BuildProgress): Promise<Template>;
  /** Removes a template (and its image in the shared store); TEMPLATE_IN_USE while it is being built. */
  remove(name: string): Promise<void>;
  /**
   * Puts this host's build of a template into the shared snapshot store (once
   * per build) and returns the image's id; INVALID_STATE without a shared store.
   */
  publish(name: string): Promise<string>;
  /**
   * Installs a template from its image in the shared store; a no-op when it is
   * here and ready. With `keepRoot`, a copy fetched from another image (an
   * earlier build whose root a rebuild did not change) gets the new image's
   * snapshot and record, and keeps its root.
   */
  fetch(name: string, imageId: string, o?: { keepRoot?: boolean }): Promise<Template>;
}
