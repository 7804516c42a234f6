import { type DomainEvent, eventVersion } from '../events/catalogue.js';
import { decode } from '../events/decode.js';
import type { CommandContext } from '../events/metadata.js';
import type { IdGenerator } from '../ids.js';
import type { AppendResult, EventStore, ExpectedRevision, NewEvent, RecordedEvent } from '../store/event-store.js';
import type { Decider } from './decider.js';
import type { StateCache } from './state-cache.js';

export interface Loaded<State> {
  state: State;
  /** What to pass as `expected` when appending the events decided on this state. */
  revision: ExpectedRevision;
  /** Taken from memory without reading the store: only the append's expected-revision check proves it current. */
  optimistic: boolean;
  /** The queued append whose outcome `state` assumes: an append decided on it must name it as `after`. */
  pending?: Promise<AppendResult>;
}

export type Folding<State, Event extends DomainEvent> = Pick<Decider<unknown, State, Event>, 'initialState' | 'evolve' | 'revive'>;

/** Loads a stream's state for a decision (the command bus hands one to each attempt). */
export type Load = <State, Event extends DomainEvent>(stream: string, decider: Folding<State, Event>) => Promise<Loaded<State>>;

/**
 * Reads a stream and folds it through a decider. With a cache, starts from the cached state (in
 * memory or a snapshot, read with the events after it where the store keeps both) and reads only
 * the events after it (deciders never mutate state, so sharing it is safe): the cost of a command
 * does not grow with the stream's history. With
 * `trust`, a state in memory is returned as is, without reading the store at all, even one that
 * assumes an append still queued; without, the load waits for such an append to settle.
 */
export async function loadAggregate<State, Event extends DomainEvent>(
  store: Pick<EventStore, 'readStream' | 'readStreamFromSnapshot'>,
  stream: string,
  decider: Folding<State, Event>,
  cache?: StateCache,
  trust = false,
): Promise<Loaded<State>> {
  cache?.touch(stream);
  const remembered = trust ? cache?.recall<State>(stream) : undefined;
  if (remembered) return { ...remembered, optimistic: true };
  const found = await cache?.get<State>(stream, decider.revive, store);
  const events = found?.events ?? (await store.readStream(stream, found?.revision !== undefined ? { from: found.revision + 1 } : {}));
  let state = found?.revision !== undefined ? found.state! : decider.initialState();
  for (const event of events) state = decider.evolve(state, decodedFor(decider, event));
  const revision = events.at(-1)?.streamPosition ?? found?.revision ?? 'no_stream';
  cache?.set(stream, state, revision);
  return { state, revision, optimistic: false };
}

/**
 * A stream's event decoded once, as it is read (upcast and parsed: src/events/decode.ts), for the
 * decider that folds the stream. A stream holds only its aggregate's events, which is what the
 * one cast here asserts.
 */
export function decodedFor<State, Event extends DomainEvent>(_decider: Folding<State, Event>, event: RecordedEvent): Event {
  const decoded = decode(event);
  if (!decoded) throw new Error(`event type '${event.type}' is not in the catalogue`);
  // The time it was recorded comes along: the customer decider's lots and tier window fold it.
  return { type: decoded.type, data: decoded.data, recordedAt: event.recordedAt } as unknown as Event;
}

/**
 * One stream's part of a change, as a handler decides it: the events, appended only if the stream
 * is still at `expected` (the revision they were decided on), and the state they lead to, which
 * the cache holds once they are appended. The command bus stamps the events' metadata.
 */
export interface DecidedWrite {
  stream: string;
  expected: ExpectedRevision;
  events: DomainEvent[];
  after?: unknown;
}

/** The write of `events` decided on `loaded`, with the state they lead to. */
export function decidedWrite<State, Event extends DomainEvent>(
  stream: string,
  loaded: Pick<Loaded<State>, 'state' | 'revision'>,
  decider: Pick<Decider<unknown, State, Event>, 'evolve'>,
  events: Event[],
): DecidedWrite {
  return { stream, expected: loaded.revision, events, after: events.reduce(decider.evolve, loaded.state) };
}

/**
 * A condition on a stream the command only read: the append fails with `WrongExpectedVersion`
 * unless the stream is still at the revision decided on (so a concurrent change makes it retry).
 */
export function unchangedSince(stream: string, loaded: Pick<Loaded<unknown>, 'revision'>): DecidedWrite {
  return { stream, expected: loaded.revision, events: [] };
}

/** Wraps decided events with the metadata every stored event carries; their ids come from `ids`. */
export function withMetadata(events: DomainEvent[], ctx: CommandContext, ids: IdGenerator): NewEvent[] {
  return events.map((event) => {
    const id = ids('storedEvent');
    return {
      id,
      type: event.type,
      data: event.data,
      metadata: {
        event_id: id,
        event_version: eventVersion(event.type),
        business_id: ctx.businessId,
        recorded_at: ctx.now.toISOString(),
        actor: ctx.actor,
        request_id: ctx.requestId,
        correlation_id: ctx.requestId,
        causation_id: null,
        idempotency_key: ctx.idempotencyKey,
      },
    };
  });
}
