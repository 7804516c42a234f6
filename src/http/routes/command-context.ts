import type { Context } from 'hono';
import type { CommandContext } from '../../events/metadata.js';
import type { AppEnv } from '../env.js';

/** Who is asking and in which request, for the metadata of the events a command writes. */
export function commandContext(c: Context<AppEnv>): CommandContext {
  return {
    businessId: c.var.principal.businessId,
    actor: c.var.principal.keyId,
    requestId: c.get('requestId'),
    idempotencyKey: c.req.header('idempotency-key') ?? null,
    now: new Date(),
  };
}
