/** Response schemas shared by every route: the error body for each status the API can answer with. */
import { Type } from '@sinclair/typebox';
import { ERROR_STATUS, ErrorResponse } from '@warren/protocol';

/** Every status of the error-code table, so the OpenAPI document lists them all. */
export const errors = Object.fromEntries(
  [...new Set(Object.values(ERROR_STATUS))].sort().map((status) => [status, ErrorResponse]),
) as Record<number, typeof ErrorResponse>;

export const NoContent = Type.Null({ description: 'No content' });
