/** Object schemas of the REST contract reject undeclared properties. Internal: not in the barrel. */
export const Strict = { additionalProperties: false } as const;
