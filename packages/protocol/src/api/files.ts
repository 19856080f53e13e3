/** REST schemas of file operations on a sandbox's file system. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

export const PathQuery = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 4096 }) },
  Strict,
);
export const RemoveQuery = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    recursive: Type.Boolean({ default: false }),
  },
  Strict,
);
export const WriteQuery = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    mode: Type.Optional(Type.String({ pattern: '^[0-7]{3,4}$' })),
  },
  Strict,
);

export const FileType = Type.Union([
  Type.Literal('file'),
  Type.Literal('dir'),
  Type.Literal('symlink'),
  Type.Literal('other'),
]);
export const FileInfo = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: FileType,
  size: Type.Integer(),
  mode: Type.String({ description: 'Permission bits in octal, e.g. "644".' }),
  mtime: Type.String({ format: 'date-time' }),
  symlink_target: Type.Optional(Type.String()),
});
export type FileInfo = Static<typeof FileInfo>;
export const FileList = Type.Object({ items: Type.Array(FileInfo) });
export type FileList = Static<typeof FileList>;

export const WriteResult = Type.Object({ path: Type.String(), size: Type.Integer() });
export type WriteResult = Static<typeof WriteResult>;

export const MkdirRequest = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    parents: Type.Boolean({ default: true }),
  },
  Strict,
);
export type MkdirRequest = Static<typeof MkdirRequest>;
export const RenameRequest = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 4096 }),
    to: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  Strict,
);
export type RenameRequest = Static<typeof RenameRequest>;

export const WatchQuery = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096, description: 'A directory.' }),
    recursive: Type.Boolean({ default: false, description: 'Also watch every subdirectory.' }),
  },
  Strict,
);
export type WatchQuery = Static<typeof WatchQuery>;

/** One line of GET /v1/sandboxes/:id/files/watch. */
export const FileWatchEvent = Type.Object({
  type: Type.Union([
    Type.Literal('create'),
    Type.Literal('write'),
    Type.Literal('remove'),
    Type.Literal('rename'),
  ]),
  path: Type.String({ description: 'Absolute path in the sandbox (the new one of a rename).' }),
  old_path: Type.Optional(Type.String({ description: 'rename: where it was.' })),
  is_dir: Type.Boolean(),
  at: Type.String({ format: 'date-time' }),
});
export type FileWatchEvent = Static<typeof FileWatchEvent>;
