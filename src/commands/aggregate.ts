import { randomUUID } from 'node:crypto';
import { EVENT_VERSION, type DomainEvent } from '../events/catalogue.js';
import type { CommandContext } from '../events/metadata.js';
import type { EventStore, ExpectedRevision, NewEvent } from '../store/event-store.js';
import type { Decider } from './decider.js';
import type { StateCache } from './state-cache.js';

export interface Loaded<State> {
  state: State;
  /** What to pass as `expected` when appending the events decided on this state. */
  revision: ExpectedRevision;
}

/**
 * Reads a stream and folds it through a decider. With a cache, starts from the cached state (in
 * memory or a snapshot) and reads only the events after it (deciders never mutate state, so
 * sharing it is safe): the cost of a command does not grow with the stream's history.
 */
export async function loadAggregate<State, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  decider: Pick<Decider<unknown, State, Event>, 'initialState' | 'evolve'>,
  cache?: StateCache,
): Promise<Loaded<State>> {
  const cached = await cache?.get<State>(stream);
  const events = await store.readStream(stream, cached ? { from: cached.revision + 1 } : {});
  let state = cached ? cached.state : decider.initialState();
  for (const event of events) state = decider.evolve(state, { type: event.type, data: event.data } as Event);
  const revision = events.at(-1)?.streamPosition ?? cached?.revision;
  if (revision === undefined) return { state, revision: 'no_stream' };
  cache?.set(stream, state, revision);
  return { state, revision };
}

/** Wraps decided events with the metadata every stored event carries. */
export function withMetadata(events: DomainEvent[], ctx: CommandContext): NewEvent[] {
  return events.map((event) => {
    const id = randomUUID();
    return {
      id,
      type: event.type,
      data: event.data,
      metadata: {
        event_id: id,
        event_version: EVENT_VERSION,
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
