/** REST schemas of volumes: create, the volume record, and attaching one to a sandbox. */
import { Type, type Static } from '@sinclair/typebox';
import { Strict } from './strict';

export const VolumeName = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9][a-z0-9_-]*$',
  description: 'Lower-case letters, digits, `-` and `_`; starts with a letter or digit.',
});

export const VolumeAttachment = Type.Object(
  {
    name: VolumeName,
    mount_path: Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        'Absolute path in the sandbox; not `/`, and not under /opt/warren, /run/warren, /proc, /sys or /dev.',
    }),
    read_only: Type.Boolean({ default: false }),
  },
  Strict,
);
export type VolumeAttachment = Static<typeof VolumeAttachment>;

export const CreateVolumeRequest = Type.Object(
  {
    name: VolumeName,
    size_mb: Type.Integer({
      minimum: 8,
      maximum: 16 * 1024 * 1024,
      description: 'Size limit in MiB (at least 8); at most the server quota.',
    }),
  },
  Strict,
);
export type CreateVolumeRequest = Static<typeof CreateVolumeRequest>;

export const Volume = Type.Object({
  id: Type.String({ examples: ['vol_0123456789abcdef'] }),
  org_id: Type.String(),
  name: Type.String(),
  size_mb: Type.Integer(),
  used_bytes: Type.Integer({ description: 'Bytes in use on the volume file system.' }),
  attachments: Type.Array(
    Type.Object({
      sandbox_id: Type.String(),
      mount_path: Type.String(),
      read_only: Type.Boolean(),
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
});
export type Volume = Static<typeof Volume>;
export const VolumeList = Type.Object({ items: Type.Array(Volume) });
export const VolumeParams = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64 }) },
  Strict,
);
