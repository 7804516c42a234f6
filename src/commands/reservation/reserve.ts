import type { EventOf } from '../../events/catalogue.js';
import type { EventStore } from '../../store/event-store.js';
import { type DecidedWrite, loadAggregate } from '../aggregate.js';
import { streams } from '../../events/streams.js';
import { type ReservationCommand, reservationDecider } from './reservation-decider.js';

type Claim = EventOf<'ReservationClaimed'>['data'];
type Reads = Pick<EventStore, 'readStream'>;

/** The write that claims a unique value (none if the owner already holds it); throws `ReservationTaken`. */
export async function claimWrite(reads: Reads, scope: string, claim: Claim): Promise<DecidedWrite[]> {
  return reservationWrite(reads, streams.reservation(claim.kind, scope, claim.value), { type: 'Claim', claim });
}

/** The write that frees a unique value held by `ownerId` (none if it does not hold it). */
export async function releaseWrite(reads: Reads, scope: string, kind: Claim['kind'], value: string, ownerId: string): Promise<DecidedWrite[]> {
  return reservationWrite(reads, streams.reservation(kind, scope, value), { type: 'Release', ownerId });
}

async function reservationWrite(reads: Reads, stream: string, command: ReservationCommand): Promise<DecidedWrite[]> {
  const { state, revision } = await loadAggregate(reads, stream, reservationDecider);
  const events = reservationDecider.decide(command, state);
  return events.length ? [{ stream, expected: revision, events }] : [];
}

/** The current holder of a unique value, with the position of its claim; null when free. */
export async function findHolder(reads: Reads, kind: Claim['kind'], scope: string, value: string) {
  const [last] = await reads.readStream(streams.reservation(kind, scope, value), { backwards: true, max: 1 });
  return last?.type === 'ReservationClaimed' ? { claim: last.data as Claim, position: last.position } : null;
}
