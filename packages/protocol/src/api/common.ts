/** Shapes shared by several resources of the REST contract: labels, env vars, id params, errors. */
import { Type } from '@sinclair/typebox';
import { Strict } from './strict';

export const Labels = Type.Record(
  Type.String({ minLength: 1, maxLength: 63 }),
  Type.String({ maxLength: 256 }),
  {
    description: 'Free-form string labels; list sandboxes by them with `metadata.<key>=<value>`.',
  },
);
export const EnvVars = Type.Record(
  Type.String({ minLength: 1, maxLength: 256, pattern: '^[^=\\u0000]+$' }),
  Type.String({ maxLength: 32768 }),
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, Strict);

export const DeleteResult = Type.Object({ id: Type.String(), deleted: Type.Boolean() });

export const ErrorResponse = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    request_id: Type.Optional(Type.String()),
    details: Type.Optional(Type.Unknown()),
  }),
});
