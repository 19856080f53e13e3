/**
 * `warren template build <file>`: builds a template from a recipe file (JSON),
 * streaming the build log. The file is the API's build request, plus two
 * conveniences resolved here, relative to the file:
 *   {"copy": {"src": "./app.py", "dest": "/srv/app.py"}}  reads a local file;
 *   {"image": "./image.tar"}                              uploads a local image tar.
 * {"image": {"path": "/srv/images/x.tar"}} names an image on the server instead.
 */
import { readFile, stat } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  WarrenError,
  buildTemplate,
  uploadTemplateImage,
  type RecipeStep,
  type Template,
  type TemplateBuildRequest,
  type TemplateImageQuery,
} from '@warren/sdk';
import type { Command } from 'commander';
import { connection } from '../../connection';
import type { Io } from '../../io';

type FileStep = RecipeStep | { copy: { src: string; dest: string; mode?: string } };
interface RecipeFile extends Omit<TemplateBuildRequest, 'steps' | 'image'> {
  steps?: FileStep[];
  image?: string | { path: string };
}

function invalid(message: string): WarrenError {
  return new WarrenError('INVALID_REQUEST', message);
}

async function loadRecipe(file: string): Promise<RecipeFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalid(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as RecipeFile;
  } catch (err) {
    throw invalid(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Replaces `copy.src` (a local file) by its content. */
async function resolveSteps(steps: FileStep[], dir: string): Promise<RecipeStep[]> {
  const out: RecipeStep[] = [];
  for (const [i, step] of steps.entries()) {
    if ('copy' in step && 'src' in step.copy) {
      const src = resolve(dir, step.copy.src);
      const content = await readFile(src).catch((err: Error) => {
        throw invalid(`step ${i + 1}: cannot read ${src}: ${err.message}`);
      });
      const mode = step.copy.mode ?? ((await stat(src)).mode & 0o777).toString(8).padStart(4, '0');
      out.push({ copy: { dest: step.copy.dest, content: content.toString('base64'), mode } });
    } else {
      out.push(step as RecipeStep);
    }
  }
  return out;
}

export function register(template: Command, io: Io): void {
  template
    .command('build')
    .description('build a template from a recipe file (JSON), streaming the build log')
    .argument('<file>', 'recipe file')
    .option('--name <name>', 'template name (overrides the file)')
    .option('--json', 'print the built template as JSON')
    .action(async (file: string, opts: { name?: string; json?: boolean }, cmd: Command) => {
      const recipe = await loadRecipe(file);
      const dir = dirname(resolve(file));
      const name = opts.name ?? recipe.name;
      if (!name) throw invalid('the recipe has no name (add "name" or pass --name)');
      const onLog = (line: string, step?: number) =>
        void io.stderr.write(step !== undefined ? `[step ${step}] ${line}\n` : `${line}\n`);
      const conn = { ...connection(cmd), onLog };
      let built: Template;
      try {
        if (typeof recipe.image === 'string') {
          const { steps, image, name: _n, start, ready, ...sizing } = recipe;
          if (steps?.length) throw invalid('steps need a base template, not an image');
          const query: TemplateImageQuery = { ...sizing };
          if (start) query.start = start;
          if (ready) {
            query.ready = ready.cmd;
            if (ready.timeout) query.ready_timeout = ready.timeout;
          }
          const path = resolve(dir, image);
          await stat(path).catch((err: Error) => {
            throw invalid(`cannot read image ${path}: ${err.message}`);
          });
          built = await uploadTemplateImage(name, createReadStream(path), query, conn);
        } else {
          const { steps, image, ...rest } = recipe;
          built = await buildTemplate(
            {
              ...rest,
              name,
              ...(image && { image }),
              ...(steps && { steps: await resolveSteps(steps, dir) }),
            },
            conn,
          );
        }
      } catch (err) {
        const step = (err as { details?: { step?: number } }).details?.step;
        if (step !== undefined) io.stderr.write(`build failed at step ${step}\n`);
        throw err;
      }
      if (opts.json) io.stdout.write(`${JSON.stringify(built, null, 2)}\n`);
      else io.stdout.write(`${built.name}\n`);
    });
}
