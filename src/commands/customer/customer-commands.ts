import { ApiError } from '../../errors.js';
import type { CustomerProfile } from '../../events/customer-events.js';
import type { CommandContext } from '../../events/metadata.js';
import { type DecidedWrite, decidedWrite, type Load, unchangedSince } from '../aggregate.js';
import { businessDecider, PLAN_LIMITS } from '../business/business-decider.js';
import type { CommandDeps } from '../command-bus.js';
import { ReservationTaken } from '../reservation/reservation-decider.js';
import { claimWrite, releaseWrite } from '../reservation/reserve.js';
import { lifecycleAt, loadProgram } from '../program/program-commands.js';
import { streams } from '../../events/streams.js';
import { type CustomerCommand, customerDecider, type CustomerState } from './customer-decider.js';
import { assertReferenceFree, customerAnswer, customerWrite, loadCustomer, type RecordedEvent, referenceWrites } from './customer-stream.js';

type UniqueField = 'email' | 'external_reference';
const UNIQUE_FIELDS: UniqueField[] = ['email', 'external_reference'];

/** The value a unique field is reserved under: e-mail addresses compare case-insensitively. */
const uniqueValue = (field: UniqueField, value: string) => (field === 'email' ? value.toLowerCase() : value);

export type RecordPointsInput = Omit<Extract<CustomerCommand, { type: 'RecordPoints' }>, 'type' | 'transactionId' | 'tiers' | 'lifecycle'>;

export function customerCommands({ bus, ids, reads }: CommandDeps) {
  async function claimUnique(ctx: CommandContext, customerId: string, field: UniqueField, value: string) {
    try {
      return await claimWrite(reads, ctx.businessId, {
        kind: field,
        value: uniqueValue(field, value),
        owner_id: customerId,
        record: null,
      });
    } catch (error) {
      if (!(error instanceof ReservationTaken)) throw error;
      throw new ApiError(409, 'customer_exists', `A customer with this ${field} already exists.`, {
        customer_id: error.holder.owner_id,
      });
    }
  }

  /** The write that counts a new customer against the business's plan (on an unlimited plan, only a check that it still is). */
  async function planWrite(load: Load, ctx: CommandContext, customerId: string): Promise<DecidedWrite> {
    const stream = streams.business(ctx.businessId);
    const business = await load(stream, businessDecider);
    if (PLAN_LIMITS[business.state.plan] === Number.POSITIVE_INFINITY) return unchangedSince(stream, business);
    const events = businessDecider.decide({ type: 'CountCustomer', customerId }, business.state);
    return decidedWrite(stream, business, businessDecider, events);
  }

  return {
    /** Returns the `CustomerRegistered`. */
    async register(ctx: CommandContext, profile: CustomerProfile): Promise<RecordedEvent> {
      const customerId = ids('customer');
      // Customers of one business are counted on its stream: serialize them here rather than retry.
      return bus.handle(ctx, { lock: [streams.business(ctx.businessId)], answer: customerAnswer(customerId) }, async (load) => {
        const unregistered = { state: customerDecider.initialState(), revision: 'no_stream' as const };
        const events = customerDecider.decide({ type: 'RegisterCustomer', customerId, businessId: ctx.businessId, profile }, unregistered.state);
        const writes: DecidedWrite[] = [customerWrite(customerId, unregistered, events, ctx)];
        for (const field of UNIQUE_FIELDS) {
          const value = profile[field];
          if (value !== null) writes.push(...(await claimUnique(ctx, customerId, field, value)));
        }
        writes.push(await planWrite(load, ctx, customerId));
        return writes;
      });
    },

    /** Returns the whole profile after the change, or null when nothing changed (a PATCH to the values already there writes nothing). */
    async update(ctx: CommandContext, customerId: string, changes: Partial<CustomerProfile>): Promise<CustomerProfile | null> {
      const written = await bus.handle(ctx, { lock: [streams.customer(customerId)] }, async (load) => {
        const customer = await loadCustomer(load, ctx, customerId);
        const { state } = customer;
        const program = await loadProgram(load, ctx.businessId);
        const events = customerDecider.decide({ type: 'UpdateCustomer', changes, lifecycle: lifecycleAt(ctx, program) }, state);
        if (events.length === 0) return [];
        const writes: DecidedWrite[] = [customerWrite(customerId, customer, events, ctx)];
        for (const field of UNIQUE_FIELDS) {
          const before = state.profile[field];
          const after = changes[field];
          if (after === undefined) continue;
          if (before !== null && after !== null && uniqueValue(field, before) === uniqueValue(field, after)) continue;
          if (after !== null) writes.push(...(await claimUnique(ctx, customerId, field, after)));
          if (before !== null) {
            writes.push(...(await releaseWrite(reads, ctx.businessId, field, uniqueValue(field, before), customerId)));
          }
        }
        return writes;
      });
      const after = written?.writes.find((w) => w.stream === streams.customer(customerId))?.after as CustomerState | undefined;
      return after?.profile ?? null;
    },

    /** Earn, deduct or adjust; returns the points event. Throws `DuplicateReference` for a used reference. */
    async recordPoints(ctx: CommandContext, customerId: string, input: RecordPointsInput): Promise<RecordedEvent> {
      const transactionId = ids('transaction');
      return bus.handle(ctx, { lock: [streams.customer(customerId)], answer: customerAnswer(customerId) }, async (load) => {
        // Load: the customer (404 unless the caller's), that the reference is free, the program's tiers and policy.
        const customer = await loadCustomer(load, ctx, customerId);
        await assertReferenceFree(reads, customerId, input.reference);
        const program = await loadProgram(load, ctx.businessId);
        // Decide (pure).
        const events = customerDecider.decide(
          { type: 'RecordPoints', transactionId, tiers: program.tiers, lifecycle: lifecycleAt(ctx, program), ...input },
          customer.state,
        );
        // Append, atomically: the customer's events at the revision decided on, on the program as
        // read, with the reference claimed.
        return [
          customerWrite(customerId, customer, events, ctx),
          program.unchanged,
          ...referenceWrites(customerId, input.reference, { kind: 'transaction', id: transactionId }),
        ];
      });
    },
  };
}

export type CustomerCommands = ReturnType<typeof customerCommands>;
