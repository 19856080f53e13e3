/** Sizes of template roots and images, as template records show them. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Total size of the regular files under `dir` (stat calls in parallel: a root has thousands). */
export async function duBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true });
    await Promise.all(
      entries.map(async (e) => {
        const p = join(d, e.name);
        if (e.isDirectory()) return walk(p);
        if (!e.isFile()) return;
        const { size } = await stat(p);
        total += size;
      }),
    );
  };
  await walk(dir).catch(() => undefined);
  return total;
}
