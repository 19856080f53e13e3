/**
 * Sandbox disks made ahead of time. Making a disk (a sparse ext4 image, its
 * file system and a loop mount) takes about 20 ms of a create, a wake or a
 * restore of a snapshot; the pool keeps a few of each size recently asked for
 * ready, so a create takes one with a rename instead.
 *
 * An entry is a directory laid out as a sandbox's `disk` directory (see
 * sandbox-disk.ts): `disk.img` and its file system mounted at `fs`. It lives
 * beside the sandboxes' work directories, on the same file system, so that a
 * rename hands it over: the mount point moves with the directory that holds it.
 * What the pool holds is unmounted and removed when the host agent stops, and
 * whatever a crash left there when it starts again.
 */
import { mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDisk, releaseDiskDir } from './sandbox-disk';

/** Disks kept ready per size. */
const READY_PER_SIZE = 2;
/** Sizes kept ready: the ones most recently asked for. */
const SIZES_KEPT = 2;
/** A refill waits this long after a take, and while creates are under way (see busy). */
const REFILL_DELAY_MS = 300;

export class DiskPool {
  private readonly ready = new Map<number, string[]>();
  /** Sizes to keep ready, most recently asked for last. */
  private sizes: number[] = [];
  private next = 0;
  private filling: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Removals of disks of a size no longer wanted. */
  private readonly dropping = new Set<Promise<void>>();

  /**
   * `busy`: while it says so (creates and wakes under way), the refill waits:
   * it would compete with their restores for the CPU.
   */
  constructor(
    private readonly dir: string,
    private readonly busy: () => boolean = () => false,
  ) {}

  /** Removes what an earlier run left behind and starts keeping `sizesMb` ready. */
  async open(sizesMb: number[] = []): Promise<void> {
    await this.clear();
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const size of sizesMb) this.want(size);
    this.schedule(0);
  }

  /**
   * Moves a ready disk of sizeMb to `to` (which must not exist, or be an empty
   * directory) and returns true; false when none is ready. Either way the pool
   * makes more of that size soon.
   */
  async take(sizeMb: number, to: string): Promise<boolean> {
    if (this.closed) return false;
    this.want(sizeMb);
    this.schedule(REFILL_DELAY_MS);
    const entry = this.ready.get(sizeMb)?.shift();
    if (entry === undefined) return false;
    try {
      await rename(entry, to);
      return true;
    } catch (err) {
      await this.discard(entry);
      // Sandboxes on another file system than the pool: it can never hand a disk over.
      if ((err as NodeJS.ErrnoException).code === 'EXDEV') await this.close();
      return false;
    }
  }

  /** Disks ready now, by size in MiB (for tests and metrics). */
  readyCount(sizeMb: number): number {
    return this.ready.get(sizeMb)?.length ?? 0;
  }

  /** Stops refilling and removes every disk the pool holds. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.filling;
    await Promise.all(this.dropping);
    this.ready.clear();
    await this.clear();
  }

  /** Waits until every wanted size has its disks, unless busy (tests). */
  async filled(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
      if (!this.filling) this.startFill();
    }
    await this.filling;
    await Promise.all(this.dropping);
  }

  private want(sizeMb: number): void {
    this.sizes = [...this.sizes.filter((s) => s !== sizeMb), sizeMb];
    for (const dropped of this.sizes.splice(0, Math.max(0, this.sizes.length - SIZES_KEPT))) {
      for (const entry of this.ready.get(dropped) ?? []) {
        const done: Promise<void> = this.discard(entry).finally(() => this.dropping.delete(done));
        this.dropping.add(done);
      }
      this.ready.delete(dropped);
    }
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.timer || this.filling) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.busy()) this.schedule(REFILL_DELAY_MS);
      else this.startFill();
    }, delayMs);
    this.timer.unref();
  }

  private startFill(): void {
    const run: Promise<void> = this.fill().then((ok) => {
      if (this.filling === run) this.filling = null;
      // Still short (a take meanwhile, or a busy spell): later. After a failure
      // the next take tries again.
      if (ok && this.missing() !== undefined) this.schedule(REFILL_DELAY_MS);
    });
    this.filling = run;
  }

  /** Makes disks one at a time until every wanted size has READY_PER_SIZE; false on a failure. */
  private async fill(): Promise<boolean> {
    for (;;) {
      const size = this.missing();
      if (size === undefined || this.closed || this.busy()) return true;
      const entry = join(this.dir, `d${this.next++}`);
      try {
        await makeDisk(entry, size);
      } catch (err) {
        // Creates make their own disks meanwhile.
        await this.discard(entry);
        process.emitWarning(`cannot make a sandbox disk ahead of time: ${String(err)}`);
        return false;
      }
      // A size no longer wanted (or a pool closed meanwhile) gets no new disk.
      if (this.closed || !this.sizes.includes(size)) await this.discard(entry);
      else this.ready.set(size, [...(this.ready.get(size) ?? []), entry]);
    }
  }

  private missing(): number | undefined {
    return this.sizes.find((s) => this.readyCount(s) < READY_PER_SIZE);
  }

  private async discard(entry: string): Promise<void> {
    await releaseDiskDir(entry).catch(() => undefined);
  }

  private async clear(): Promise<void> {
    const entries = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of entries) await this.discard(join(this.dir, name));
  }
}
