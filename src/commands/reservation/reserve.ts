import type { EventOf } from '../../events/catalogue.js';
import type { EventStore, AppendWrite } from '../../store/event-store.js';
import type { CommandContext } from '../../events/metadata.js';
import { loadAggregate, withMetadata } from '../aggregate.js';
import { streams } from '../../events/streams.js';
import { type ReservationCommand, reservationDecider } from './reservation-decider.js';

type Claim = EventOf<'ReservationClaimed'>['data'];

/** The write that claims a unique value (none if the owner already holds it); throws `ReservationTaken`. */
export async function claimWrite(store: EventStore, ctx: CommandContext, scope: string, claim: Claim): Promise<AppendWrite[]> {
  return reservationWrite(store, ctx, streams.reservation(claim.kind, scope, claim.value), { type: 'Claim', claim });
}

/** The write that frees a unique value held by `ownerId` (none if it does not hold it). */
export async function releaseWrite(
  store: EventStore,
  ctx: CommandContext,
  scope: string,
  kind: Claim['kind'],
  value: string,
  ownerId: string,
): Promise<AppendWrite[]> {
  return reservationWrite(store, ctx, streams.reservation(kind, scope, value), { type: 'Release', ownerId });
}

async function reservationWrite(store: EventStore, ctx: CommandContext, stream: string, command: ReservationCommand) {
  const { state, revision } = await loadAggregate(store, stream, reservationDecider);
  const events = reservationDecider.decide(command, state);
  return events.length ? [{ stream, expected: revision, events: withMetadata(events, ctx) }] : [];
}

/** The current holder of a unique value, with the position of its claim; null when free. */
export async function findHolder(store: EventStore, kind: Claim['kind'], scope: string, value: string) {
  const [last] = await store.readStream(streams.reservation(kind, scope, value), { backwards: true, max: 1 });
  return last?.type === 'ReservationClaimed' ? { claim: last.data as Claim, position: last.position } : null;
}
