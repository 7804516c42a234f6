import { randomUUID } from 'node:crypto';
import { EVENT_VERSION, type DomainEvent } from '../events/catalogue.js';
import type { CommandContext } from '../events/metadata.js';
import type { EventStore, ExpectedRevision, NewEvent } from '../store/event-store.js';
import { type Decider, fold } from './decider.js';

export interface Loaded<State> {
  state: State;
  /** What to pass as `expected` when appending the events decided on this state. */
  revision: ExpectedRevision;
}

/** Reads a stream and folds it through a decider. */
export async function loadAggregate<State, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  decider: Pick<Decider<unknown, State, Event>, 'initialState' | 'evolve'>,
): Promise<Loaded<State>> {
  const events = await store.readStream(stream);
  const state = fold(decider, events.map((e) => ({ type: e.type, data: e.data }) as Event));
  const last = events.at(-1);
  return { state, revision: last ? last.streamPosition : 'no_stream' };
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
