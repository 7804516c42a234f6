import type { Context } from 'hono';
import { DuplicateReference } from '../../commands/index.js';
import { ApiError } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { presentEvent, presentRedemption, presentTransaction } from '../presenters/presenters.js';

/**
 * Runs a command that records something under a `reference`; a reused reference becomes 409
 * `duplicate_transaction` carrying the original record under `transaction`, `event` or
 * `redemption` (CONTRACT.md §5), read once the read models include it.
 */
export async function refusingDuplicates<T>(c: Context<AppEnv>, reference: string | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof DuplicateReference)) throw error;
    const { services, principal } = c.var;
    await services.projections.settle(error.position);
    const { kind, id } = error.record;
    const original = await findOriginal(c, principal.businessId, kind, id);
    throw new ApiError(409, 'duplicate_transaction', `Reference '${reference}' was already used; nothing was recorded.`, {
      [kind]: original ?? { id },
    });
  }
}

async function findOriginal(c: Context<AppEnv>, businessId: string, kind: string, id: string) {
  const { customers, catalog } = c.var.services.queries;
  switch (kind) {
    case 'transaction': {
      const row = await customers.ledgerEntry(businessId, id);
      return row && presentTransaction(row);
    }
    case 'event': {
      const row = await catalog.event(businessId, id);
      return row && presentEvent(row);
    }
    case 'redemption': {
      const row = await catalog.redemption(businessId, id);
      return row && presentRedemption(row);
    }
    default:
      return undefined;
  }
}
