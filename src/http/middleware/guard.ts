import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Permission } from '../../events/permissions.js';
import type { AppEnv } from '../env.js';
import { requirePermission } from './auth.js';
import { idempotency } from './idempotency.js';

export interface GuardOptions {
  privateOnly?: boolean;
  /** A POST that computes an answer and records nothing (a preview): a read, with no Idempotency-Key handling. */
  recordsNothing?: boolean;
  /**
   * An authorization rule that depends on the request (its body, or the resource it names), such
   * as "a key cannot grant a permission it does not hold". Throws to refuse.
   */
  authorize?: (c: Context<AppEnv>) => void | Promise<void>;
}

/**
 * What every API route runs before its schema validation: the permission check and the route's
 * own authorization rule, then Idempotency-Key handling. Idempotency comes last so a stored
 * response is never replayed to a key that is not allowed to make the request itself.
 */
export function guard(permissions: Permission[], options: GuardOptions = {}) {
  const { authorize } = options;
  const rule = authorize
    ? [createMiddleware<AppEnv>(async (c, next) => {
        await authorize(c);
        await next();
      })]
    : [];
  return [requirePermission(permissions, options), ...rule, ...(options.recordsNothing ? [] : [idempotency])];
}
