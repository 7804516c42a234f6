import type { CommandDeps } from '../commands/command-deps.js';
import { customerDecider } from '../commands/customer/customer-decider.js';
import { type CustomerEvent, evolveCustomer } from '../commands/customer/customer-state.js';
import { changeCustomer, customerWrite } from '../commands/customer/customer-stream.js';
import { nextDueAt } from '../commands/customer/due-work.js';
import { lifecycleAt, loadProgram } from '../commands/program/program-commands.js';
import type { CommandContext } from '../events/metadata.js';
import type { AppliedDue, ApplyDue, DoneWork } from './scheduler.js';

const DAY_MS = 86_400_000;

/**
 * The scheduler's way into the command path: `ApplyDueWork` decided on the customer's stream at
 * the clock's time and appended at the revision it was decided on, as any command is. A
 * concurrent writer (another worker, a request on the same customer) makes the append fail and
 * the decision run again on the new state, which then finds the work done: exactly once. Answers
 * what was appended, the decider's next due instant after it, and the revision that was decided at.
 */
export function applyDueThroughCommands(deps: CommandDeps): ApplyDue {
  return async (businessId, customerId) => {
    const ctx: CommandContext = { businessId, actor: 'scheduler', requestId: null, idempotencyKey: null, now: deps.clock.now() };
    let decided: AppliedDue = { work: [], nextDueAt: null, revision: -1 };
    await changeCustomer(deps, ctx, customerId, async (customer, load) => {
      const program = await loadProgram(load, businessId);
      const lifecycle = lifecycleAt(ctx, program);
      const events = customerDecider.decide({ type: 'ApplyDueWork', lifecycle }, customer.state);
      const after = events.reduce((state, e) => evolveCustomer(state, { ...e, recordedAt: ctx.now }), customer.state);
      const next = nextDueAt(after, program.policy);
      const revision = typeof customer.revision === 'number' ? customer.revision : -1;
      decided = {
        work: events.map((e) => doneWork(e, program.policy.settings.expiring_notice_days)),
        nextDueAt: next === null ? null : new Date(next),
        revision: revision + events.length,
      };
      return events.length === 0 ? [] : [customerWrite(customerId, customer, events, ctx), program.unchanged];
    });
    return decided;
  };
}

function doneWork(event: CustomerEvent, noticeDays: number): DoneWork {
  switch (event.type) {
    case 'PointsReleased':
      return { type: event.type, lot: event.data.lot_transaction_id, amount: event.data.amount, due_at: event.data.released_at };
    case 'PointsExpiringNotified':
      return {
        type: event.type,
        lot: event.data.lot_transaction_id,
        amount: event.data.amount,
        due_at: new Date(Date.parse(event.data.expires_at) - noticeDays * DAY_MS).toISOString(),
      };
    case 'PointsExpired':
      return { type: event.type, lot: event.data.lot_transaction_id, amount: event.data.amount, due_at: event.data.expired_at };
    case 'TierDowngraded':
      return { type: event.type, lot: null, amount: null, due_at: event.data.downgraded_at };
    default:
      throw new Error(`due work cannot be a ${event.type}`);
  }
}
