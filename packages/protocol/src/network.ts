/** REST schemas of sandbox networking: the egress policy, bound secrets, the egress log. */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;

export const NetworkRule = Type.String({
  minLength: 1,
  maxLength: 300,
  description:
    'A domain (`example.com`, or `*.example.com` for its subdomains), an IP address or a CIDR, each optionally with `:port` or `:lo-hi`; IPv6 with ports as `[2001:db8::/32]:443`. Or `preset:<name>` for a curated list.',
  examples: ['pypi.org:443', '*.githubusercontent.com', '10.0.0.0/8:5432', 'preset:npm'],
});

export const NetworkPolicy = Type.Object(
  {
    mode: Type.Union([Type.Literal('none'), Type.Literal('restricted'), Type.Literal('open')], {
      description:
        '`none`: nothing leaves the sandbox. `restricted`: only what `allow` names. `open`: everything but `deny`. In every mode link-local and metadata addresses, loopback and the host itself stay unreachable, and private ranges only when `allow` names them.',
    }),
    allow: Type.Optional(Type.Array(NetworkRule, { maxItems: 256 })),
    deny: Type.Optional(Type.Array(NetworkRule, { maxItems: 256 })),
  },
  Strict,
);
export type NetworkPolicy = Static<typeof NetworkPolicy>;

export const EgressSecret = Type.Object(
  {
    host: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'Requests to this host (exact name) get the header.',
    }),
    header: Type.String({ minLength: 1, maxLength: 128, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }),
    value: Type.String({
      minLength: 1,
      maxLength: 8192,
      description: 'Added by the host-side proxy; never enters the sandbox, never returned.',
    }),
  },
  Strict,
);
export type EgressSecret = Static<typeof EgressSecret>;

export const EgressSecrets = Type.Array(EgressSecret, { maxItems: 64 });

export const NetworkView = Type.Object({
  mode: NetworkPolicy.properties.mode,
  allow: Type.Array(Type.String()),
  deny: Type.Array(Type.String()),
  secrets: Type.Array(Type.Object({ host: Type.String(), header: Type.String() }), {
    description: 'Where secrets are injected; their values are never returned.',
  }),
});
export type NetworkView = Static<typeof NetworkView>;

export const EgressEvent = Type.Object({
  id: Type.Integer(),
  at: Type.String({ format: 'date-time', description: 'When the connection was decided.' }),
  protocol: Type.Union([Type.Literal('http'), Type.Literal('connect'), Type.Literal('socks5')]),
  host: Type.String({ description: 'What the sandbox asked for: a name or an address.' }),
  port: Type.Integer(),
  address: Type.Union([Type.String(), Type.Null()], { description: 'The address connected to.' }),
  decision: Type.Union([Type.Literal('allowed'), Type.Literal('denied')]),
  reason: Type.String(),
  bytes_out: Type.Integer({ description: 'Bytes from the sandbox to the destination.' }),
  bytes_in: Type.Integer({ description: 'Bytes from the destination to the sandbox.' }),
  duration_ms: Type.Integer(),
});
export type EgressEvent = Static<typeof EgressEvent>;

export const EgressQuery = Type.Object(
  {
    decision: Type.Optional(Type.Union([Type.Literal('allowed'), Type.Literal('denied')])),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'Events older than this id.' })),
  },
  Strict,
);
export const EgressEventList = Type.Object({
  items: Type.Array(EgressEvent, { description: 'Newest first.' }),
});

export const NetworkUpdate = Type.Object(
  {
    ...NetworkPolicy.properties,
    secrets: Type.Optional(
      Type.Array(EgressSecret, {
        maxItems: 64,
        description: 'Replaces the bound secrets; left out, they stay as they are.',
      }),
    ),
  },
  Strict,
);
export type NetworkUpdate = Static<typeof NetworkUpdate>;
