import { errors } from '../../errors.js';
import type { EventOf } from '../../events/catalogue.js';
import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { AppendWrite, Checkpoint, EventStore } from '../../store/event-store.js';
import { type DecidedWrite, decidedWrite, type Load, type Loaded } from '../aggregate.js';
import { firstAppended } from '../command-bus.js';
import { findHolder } from '../reservation/reserve.js';
import { streams } from '../../events/streams.js';
import { type CustomerEvent, customerDecider, type CustomerState } from './customer-decider.js';
import { DUE_EVENT_TYPES } from './customer-state.js';

/** Thrown when a reference was used before; `record` names what was created under it. */
export class DuplicateReference extends Error {
  constructor(
    readonly record: { kind: string; id: string },
    readonly position: Checkpoint,
  ) {
    super(`reference already used by ${record.kind} ${record.id}`);
  }
}

/** Loads a customer of the caller's business, or 404 (another business's customer is not found either). */
export async function loadCustomer(load: Load, ctx: CommandContext, customerId: string): Promise<Loaded<CustomerState>> {
  const loaded = await load(streams.customer(customerId), customerDecider);
  if (!loaded.state.registered || loaded.state.businessId !== ctx.businessId) throw errors.customerNotFound(customerId);
  return loaded;
}

/** The write of `events` decided on the customer's state `decidedOn`. */
export function customerWrite(
  customerId: string,
  decidedOn: Pick<Loaded<CustomerState>, 'state' | 'revision'>,
  events: CustomerEvent[],
  ctx: CommandContext,
): DecidedWrite {
  // The state after them, folded at the time they are recorded (lots and the tier window keep it).
  const timed = { evolve: (state: CustomerState, event: CustomerEvent) => customerDecider.evolve(state, { ...event, recordedAt: ctx.now }) };
  return decidedWrite(streams.customer(customerId), decidedOn, timed, events);
}

/** Due work decided before a command's own events (releases, expiries, notices, downgrades) is never its answer. */
const isAnswer = (type: string) => !DUE_EVENT_TYPES.has(type);

/** An event as a change appended it: what a request's answer is built from. */
export type RecordedEvent = AnsweredEvent;

/**
 * The answer of a change to a customer: the first event it appended to the customer's stream for
 * the command itself (the one it was made for), not due work decided before it.
 */
export const customerAnswer = (customerId: string) => (writes: AppendWrite[]): RecordedEvent =>
  firstAppended(writes, streams.customer(customerId), isAnswer);

/** Throws `DuplicateReference` when the customer already used `reference` (CONTRACT.md §5). */
export async function assertReferenceFree(reads: Pick<EventStore, 'readStream'>, customerId: string, reference: string | null): Promise<void> {
  if (reference === null) return;
  const holder = await findHolder(reads, 'reference', customerId, reference);
  if (holder?.claim.record) throw new DuplicateReference(holder.claim.record, holder.position);
}

/**
 * The write that claims `reference` for a new record. References are never released, so the
 * reservation stream must not exist yet: a concurrent claim fails the whole append.
 */
export function referenceWrites(
  customerId: string,
  reference: string | null,
  record: { kind: 'transaction' | 'event' | 'redemption'; id: string },
): DecidedWrite[] {
  if (reference === null) return [];
  const claimed: EventOf<'ReservationClaimed'> = { type: 'ReservationClaimed', data: { kind: 'reference', value: reference, owner_id: customerId, record } };
  return [{ stream: streams.reservation('reference', customerId, reference), expected: 'no_stream', events: [claimed] }];
}
