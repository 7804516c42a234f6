import type { CommandContext } from '../../events/metadata.js';
import type { Checkpoint } from '../../store/event-store.js';
import { streams } from '../../events/streams.js';
import type { CommandDeps } from '../command-bus.js';
import { lifecycleAt, loadProgram } from '../program/program-commands.js';
import { type CustomerEvent, customerDecider, type CustomerState } from './customer-decider.js';
import type { LifecyclePolicy } from './customer-state.js';
import { decideDue, nextDueAt } from './due-work.js';
import { assertReferenceFree, customerAnswer, customerWrite, loadCustomer, type RecordedEvent, referenceWrites } from './customer-stream.js';

export interface ReverseInput {
  /** The credit to reverse (`txn_…` of an earn or positive adjust, `evt_…` of an event). */
  reversedId: string;
  /** Absent: all of the credit that is not reversed yet. */
  amount?: number | undefined;
  reference: string | null;
  description: string | null;
}

/** What `applyDue` appended, and when the customer's next due work falls due. */
export interface AppliedDue {
  /** The due events appended, in order ([] when nothing was due). */
  events: CustomerEvent[];
  /** When more work falls due (ISO), null when none will without a new event: for the scheduler's index. */
  nextDueAt: string | null;
  /** Where the last appended event is in the log (null when nothing was appended). */
  position: Checkpoint | null;
  /** The customer stream's revision `nextDueAt` was decided at (after the append, if any); -1 for no stream. */
  revision: number;
}

/** The lifecycle's commands (CONTRACT.md §13): due work on a customer, and reversals. */
export function lifecycleCommands({ bus, ids, clock, reads }: CommandDeps) {
  return {
    /**
     * Does the work due on a customer at `now` (default: the services' clock): releases, expiring
     * notices, expiries and rolling downgrades, each stamped with its due instant. The normal write
     * path: decided on the customer's revision and appended with it as the expected one, so two
     * workers doing the same customer append it once (the second decides again and finds nothing due).
     */
    async applyDue(businessId: string, customerId: string, options: { now?: Date; actor?: string; appendAfter?: Promise<unknown> } = {}): Promise<AppliedDue> {
      const ctx: CommandContext = {
        businessId,
        actor: options.actor ?? 'system',
        requestId: null,
        idempotencyKey: null,
        now: options.now ?? clock.now(),
      };
      let after: { state: CustomerState; policy: LifecyclePolicy; revision: number } | undefined;
      const written = await bus.handle(ctx, { lock: [streams.customer(customerId)], appendAfter: options.appendAfter }, async (load) => {
        const customer = await loadCustomer(load, ctx, customerId);
        const program = await loadProgram(load, businessId);
        // The decider's ApplyDueWork is exactly this due work; `decideDue` also gives the state it leads
        // to, so the events are not folded a second time for the write (a third of a run's decision).
        const due = decideDue(customer.state, lifecycleAt(ctx, program));
        const revision = (typeof customer.revision === 'number' ? customer.revision : -1) + due.events.length;
        after = { state: due.after, policy: program.policy, revision };
        return [{ stream: streams.customer(customerId), expected: customer.revision, events: due.events, after: due.after }];
      });
      const appended = written?.writes.find((w) => w.stream === streams.customer(customerId))?.events ?? [];
      return {
        events: appended.map((e) => ({ type: e.type, data: e.data }) as CustomerEvent),
        nextDueAt: after ? nextDueAt(after.state, after.policy) : null,
        position: written?.position ?? null,
        revision: after?.revision ?? -1,
      };
    },

    /** Reverses all or part of a credit; returns the `PointsReversed`. Throws `DuplicateReference` for a used reference. */
    async reverse(ctx: CommandContext, customerId: string, input: ReverseInput): Promise<RecordedEvent> {
      const transactionId = ids('transaction');
      return bus.handle(ctx, { lock: [streams.customer(customerId)], answer: customerAnswer(customerId) }, async (load) => {
        const customer = await loadCustomer(load, ctx, customerId);
        await assertReferenceFree(reads, customerId, input.reference);
        const program = await loadProgram(load, ctx.businessId);
        const events = customerDecider.decide(
          {
            type: 'ReverseTransaction',
            transactionId,
            reversedId: input.reversedId,
            amount: input.amount,
            description: input.description,
            reference: input.reference,
            lifecycle: lifecycleAt(ctx, program),
          },
          customer.state,
        );
        return [
          customerWrite(customerId, customer, events, ctx),
          ...referenceWrites(customerId, input.reference, { kind: 'transaction', id: transactionId }),
        ];
      });
    },
  };
}

export type LifecycleCommands = ReturnType<typeof lifecycleCommands>;
