import { createMiddleware } from 'hono/factory';
import { timingSafeEqual } from 'node:crypto';
import { hashApiKey, KEY_PREFIXES, type Permission } from '../../events/permissions.js';
import { ApiError, errors } from '../../errors.js';
import type { Principal } from '../../projections/access/access-queries.js';
import type { AppEnv } from '../env.js';

const KEY_FORMAT = new RegExp(`^(?:${KEY_PREFIXES.private}|${KEY_PREFIXES.public})[0-9A-Za-z]{32,}$`);

/** The key a request carries, from `X-API-Key` or `Authorization: Bearer`; 401 when missing or ambiguous. */
function presentedKey(header: (name: string) => string | undefined): string {
  // An empty header, or a bare `Bearer`, carries no key: that is a missing key, not an invalid one.
  const fromHeader = header('x-api-key')?.trim() || undefined;
  const authorization = header('authorization')?.trim();
  const bearer = !authorization || /^Bearer$/i.test(authorization) ? undefined : (/^Bearer\s+(\S+)$/i.exec(authorization)?.[1] ?? '');
  if (fromHeader !== undefined && bearer !== undefined && fromHeader !== bearer) {
    throw new ApiError(401, 'ambiguous_api_key', 'X-API-Key and Authorization carry different keys; send one.');
  }
  const key = fromHeader ?? bearer;
  if (key === undefined) {
    throw new ApiError(401, 'missing_api_key', 'Send an API key as X-API-Key: <key> or Authorization: Bearer <key>.');
  }
  return key;
}

const invalidKey = () => new ApiError(401, 'invalid_api_key', 'The API key does not exist or was revoked.');

/**
 * Authenticates every `/api/v1` request. Only the key's SHA-256 is stored; the lookup is by hash,
 * and the found hash is compared again in constant time. A principal read from the database
 * answers for its key for under a second (`PrincipalCache`); a revocation clears that at once on
 * every process of this instance, and other instances refuse the key within the second.
 * `principalByHash` is that cached lookup.
 */
export function authenticate(principalByHash: (hash: string) => Promise<Principal | null | undefined>) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = presentedKey((name) => c.req.header(name));
    if (!KEY_FORMAT.test(key)) throw invalidKey();
    const hash = hashApiKey(key);
    const principal = await principalByHash(hash);
    if (!principal || !timingSafeEqual(Buffer.from(principal.keyHash), Buffer.from(hash))) throw invalidKey();
    c.set('principal', principal);
    await next();
  });
}

const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * Route guard: the permissions a route needs (CONTRACT.md §2 table). Public keys are refused on
 * every write, and on `privateOnly` routes, before permissions are looked at. A POST that records
 * nothing (`recordsNothing`: a rule preview) is a read.
 */
export function requirePermission(permissions: Permission[], options: { privateOnly?: boolean; recordsNothing?: boolean } = {}) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = c.get('principal');
    const writes = !READ_METHODS.has(c.req.method) && !options.recordsNothing;
    if (principal.type === 'public' && (options.privateOnly || writes)) {
      throw errors.publicKeyNotAllowed();
    }
    const missing = permissions.find((p) => !principal.permissions.includes(p));
    if (missing) throw errors.insufficientPermissions(missing);
    await next();
  });
}
