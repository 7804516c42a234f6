import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env.js';

/**
 * The headers and the Idempotency-Key parameter every operation shares, as components the
 * route contract refers to (one description each, however many responses carry them).
 */
export type SharedHeader = 'X-Request-Id' | 'RateLimit' | 'RateLimit-Policy' | 'Retry-After' | 'Link' | 'Idempotent-Replayed';

type HeaderDoc = {
  description: string;
  schema: { type: 'string' | 'integer'; example: string | number; minimum?: number; enum?: string[] };
};

const HEADERS: Record<SharedHeader, HeaderDoc> = {
  'X-Request-Id': {
    description: 'The request’s id (`req_…`, or the one the caller sent, up to 255 of `[A-Za-z0-9_=-]`): quote it when reporting a problem.',
    schema: { type: 'string', example: 'req_V1StGXR8Z5jdHi6BmyT' },
  },
  RateLimit: {
    description: 'What is left of the key’s request budget (draft-ietf-httpapi-ratelimit-headers): `r` requests remain, the bucket is full again in `t` seconds. Absent when rate limiting is off.',
    schema: { type: 'string', example: '"api-key";r=99;t=1' },
  },
  'RateLimit-Policy': {
    description: 'The key’s budget: `q` requests per window of `w` seconds, refilled continuously (`api-key` for private keys, `public-key` for public ones).',
    schema: { type: 'string', example: '"api-key";q=100;w=1' },
  },
  'Retry-After': {
    description: 'Seconds to wait before sending the same request again (with the same Idempotency-Key).',
    schema: { type: 'integer', minimum: 1, example: 1 },
  },
  Link: {
    description: 'RFC 8288 link to the next page, keeping the request’s other query parameters; absent on the last page.',
    schema: { type: 'string', example: '</api/v1/customers?limit=50&starting_after=cust_4fTz9QbLr2XcVw7NkP1a>; rel="next"' },
  },
  'Idempotent-Replayed': {
    description: '`true` when this answer is the stored answer to an earlier request with the same Idempotency-Key (nothing was done again).',
    schema: { type: 'string', enum: ['true'], example: 'true' },
  },
};

const componentName = (header: SharedHeader) => header.replace(/-/g, '');

/** `{ name: $ref }` for a response's `headers`. */
export function headerRefs(names: SharedHeader[]) {
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${componentName(name)}` }]));
}

export const IDEMPOTENCY_KEY_PARAMETER = { $ref: '#/components/parameters/IdempotencyKey' };

/** Registers the shared headers and parameter on the app's OpenAPI registry. */
export function registerSharedComponents(app: OpenAPIHono<AppEnv>): void {
  for (const [name, header] of Object.entries(HEADERS)) {
    app.openAPIRegistry.registerComponent('headers', componentName(name as SharedHeader), header);
  }
  app.openAPIRegistry.registerComponent('parameters', 'IdempotencyKey', {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; ' +
      'with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. ' +
      'Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$', example: 'order-7731-earn' },
  });
}
