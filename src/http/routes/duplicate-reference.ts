import type { Context } from 'hono';
import { DuplicateReference } from '../../commands/index.js';
import { ApiError } from '../../errors.js';
import type { Original } from '../../projections/reference-originals.js';
import type { AppEnv } from '../env.js';
import { presentEvent, presentRedemption, presentTransaction } from '../presenters/presenters.js';

/**
 * Runs a command that records something under a `reference`; a reused reference becomes 409
 * `duplicate_transaction` carrying the original record under `transaction`, `event` or
 * `redemption` (CONTRACT.md §5), as the read models show it once they include it.
 */
export async function refusingDuplicates<T>(c: Context<AppEnv>, reference: string | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof DuplicateReference)) throw error;
    const { kind, id } = error.record;
    const original = await c.get('queries').original(c.get('principal').businessId, error.record, error.position);
    throw new ApiError(409, 'duplicate_transaction', `Reference '${reference}' was already used; nothing was recorded.`, {
      [kind]: (original && presentOriginal(original)) ?? { id },
    });
  }
}

function presentOriginal(original: Original) {
  switch (original.kind) {
    case 'transaction':
      return original.row && presentTransaction(original.row);
    case 'event':
      return original.row && presentEvent(original.row);
    case 'redemption':
      return original.row && presentRedemption(original.row);
  }
}
