import type { AppliedDue, LifecycleCommands } from '../commands/index.js';
import type { ApplyDue, DoneWork } from './scheduler.js';

/**
 * The scheduler's way into the command path: `commands.lifecycle.applyDue`, which decides the
 * customer's due work at the clock's time and appends it at the revision it was decided on, as
 * any command does. A concurrent writer (another worker, a request on the same customer) makes
 * the append fail and the decision run again on the new state, which then finds the work done:
 * exactly once. What it appended is told as the scheduler prints it.
 */
export function applyDueThroughCommands(lifecycle: Pick<LifecycleCommands, 'applyDue'>): ApplyDue {
  return async (businessId, customerId, appendAfter) => {
    const applied = await lifecycle.applyDue(businessId, customerId, { actor: 'scheduler', appendAfter });
    return {
      work: applied.events.flatMap(doneWork),
      events: applied.events.length,
      nextDueAt: applied.nextDueAt === null ? null : new Date(applied.nextDueAt),
      revision: applied.revision,
      position: applied.position,
    };
  };
}

/** What one due event did: a piece per lot (an expiry names every lot of its instant). */
function doneWork(event: AppliedDue['events'][number]): DoneWork[] {
  switch (event.type) {
    case 'PointsReleased':
      return [{ type: event.type, lot: event.data.lot_transaction_id, amount: event.data.amount, at: event.data.released_at }];
    case 'PointsExpiringNotified':
      return [{ type: event.type, lot: event.data.lot_transaction_id, amount: event.data.amount, at: event.data.expires_at }];
    case 'PointsExpired':
      return event.data.lots.map((s) => ({ type: event.type, lot: s.transaction_id, amount: s.amount, at: event.data.expired_at }));
    case 'TierDowngraded':
      return [{ type: event.type, lot: null, amount: null, at: event.data.downgraded_at }];
    default:
      throw new Error(`due work cannot be a ${event.type}`);
  }
}
