/** REST schemas of templates: the template record, recipe and image builds, the build stream. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

export const ReadyProbe = Type.Object(
  {
    cmd: Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 64 }),
    timeout: Type.Optional(
      Type.Number({
        minimum: 0.1,
        maximum: 600,
        description: 'Seconds the check may keep failing before the build fails (default 30).',
      }),
    ),
  },
  Strict,
);
export type ReadyProbe = Static<typeof ReadyProbe>;

/** How an official template is built: the CLI command and the API call (an admin key of the install). */
export const TemplateBuildHint = Type.Object({
  cli: Type.String({ description: 'e.g. `warren template rebuild code-interpreter`' }),
  api: Type.String({ description: 'e.g. `POST /v1/templates/code-interpreter/rebuild`' }),
});

export const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  state: Type.Union(
    [
      Type.Literal('not_built'),
      Type.Literal('building'),
      Type.Literal('ready'),
      Type.Literal('error'),
    ],
    {
      description:
        '`not_built`: an official template this host has not built (see `build`); `building`: its first build runs; `error`: its last build failed (see `error`); `ready`: sandboxes start from it.',
    },
  ),
  description: Type.Optional(Type.String({ description: 'Official templates: what is in it.' })),
  build: Type.Optional(TemplateBuildHint),
  error: Type.Optional(
    Type.String({ description: 'Official templates in state `error`: why the last build failed.' }),
  ),
  default_cpu: Type.Number(),
  default_memory_mb: Type.Integer(),
  max_cpu: Type.Number(),
  max_memory_mb: Type.Integer(),
  default_disk_mb: Type.Integer(),
  max_disk_mb: Type.Integer(),
  rootfs_bytes: Type.Integer(),
  snapshot_bytes: Type.Integer(),
  built_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'null while an official template is not built.',
  }),
  source: Type.Optional(
    Type.Union([Type.Literal('builtin'), Type.Literal('image'), Type.Literal('recipe')]),
  ),
  base: Type.Optional(Type.String({ description: 'The template a recipe started from.' })),
  layers: Type.Optional(
    Type.Array(Type.Object({ digest: Type.String(), size: Type.Integer() }), {
      description: 'Image layers, in the order they were applied.',
    }),
  ),
  build_ms: Type.Optional(Type.Number({ description: 'How long the last build took.' })),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  workdir: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  start: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
  ready: Type.Optional(Type.Union([ReadyProbe, Type.Null()])),
});
export type Template = Static<typeof Template>;
export const TemplateList = Type.Object({ items: Type.Array(Template) });

const EnvName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 });
const Argv = Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 256 });

export const RecipeStep = Type.Union([
  Type.Object(
    {
      run: Type.String({ minLength: 1, maxLength: 65536, description: 'A /bin/sh command line.' }),
      timeout: Type.Optional(
        Type.Number({ minimum: 1, maximum: 3600, description: 'Seconds (default 600).' }),
      ),
    },
    Strict,
  ),
  Type.Object(
    {
      copy: Type.Object(
        {
          dest: Type.String({ minLength: 1, maxLength: 4096 }),
          content: Type.String({ description: 'File content, base64.' }),
          mode: Type.Optional(Type.String({ pattern: '^0?[0-7]{3,4}$' })),
        },
        Strict,
      ),
    },
    Strict,
  ),
  Type.Object({ env: Type.Record(EnvName, Type.String({ maxLength: 65536 })) }, Strict),
  Type.Object({ workdir: Type.String({ minLength: 1, maxLength: 4096 }) }, Strict),
  Type.Object({ start: Argv }, Strict),
  Type.Object({ ready: ReadyProbe }, Strict),
]);
export type RecipeStep = Static<typeof RecipeStep>;

export const TemplateName = Type.String({
  pattern: '^[a-z0-9][a-z0-9._-]{0,62}$',
  description: 'Lower-case letters, digits, ".", "_" and "-"; starts with a letter or digit.',
});

const SizingFields = {
  default_cpu: Type.Optional(Type.Number({ minimum: 0.1, maximum: 64 })),
  default_memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 1048576 })),
  max_cpu: Type.Optional(Type.Number({ minimum: 0.1, maximum: 64 })),
  max_memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 1048576 })),
};

export const TemplateBuildRequest = Type.Object(
  {
    name: TemplateName,
    base: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Recipe: the template to start from.',
      }),
    ),
    image: Type.Optional(
      Type.Object(
        {
          path: Type.String({
            minLength: 1,
            maxLength: 4096,
            description:
              'Server-side path of an OCI image layout or `docker save` archive (directory or tar).',
          }),
        },
        Strict,
      ),
    ),
    steps: Type.Optional(Type.Array(RecipeStep, { maxItems: 200 })),
    ...SizingFields,
    start: Type.Optional(Type.Union([Argv, Type.Null()])),
    ready: Type.Optional(Type.Union([ReadyProbe, Type.Null()])),
  },
  Strict,
);
export type TemplateBuildRequest = Static<typeof TemplateBuildRequest>;

/** Options of an image upload (POST /v1/templates/:name/image), as query parameters. */
export const TemplateImageQuery = Type.Object(
  {
    ...SizingFields,
    start: Type.Optional(Type.Array(Type.String({ maxLength: 65536 }), { maxItems: 256 })),
    ready: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64 })),
    ready_timeout: Type.Optional(Type.Number({ minimum: 0.1, maximum: 600 })),
  },
  Strict,
);
export type TemplateImageQuery = Static<typeof TemplateImageQuery>;

/** One line of a build's ndjson stream. */
export const TemplateBuildEvent = Type.Union([
  Type.Object({
    type: Type.Literal('log'),
    line: Type.String(),
    step: Type.Optional(Type.Integer()),
  }),
  Type.Object({ type: Type.Literal('done'), template: Template }),
  Type.Object({
    type: Type.Literal('error'),
    code: Type.String(),
    message: Type.String(),
    step: Type.Optional(Type.Integer()),
  }),
]);
export type TemplateBuildEvent = Static<typeof TemplateBuildEvent>;
export const NameParams = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);
