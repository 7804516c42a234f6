import type { Permission } from '../../commands/api-key/permissions.js';
import { requirePermission } from './auth.js';
import { idempotency } from './idempotency.js';

/**
 * What every API route runs before its schema validation: the permission check, then
 * Idempotency-Key handling. Idempotency comes second so a stored response is never replayed to a
 * key that is not allowed to make the request itself.
 */
export function guard(permissions: Permission[], options: { privateOnly?: boolean } = {}) {
  return [requirePermission(permissions, options), idempotency];
}
