import type { DomainEvent } from '../events/catalogue.js';

/**
 * An aggregate's rules as three pure functions (no I/O, no clock, no ids: those come in the
 * command). `decide` returns the events a command produces or throws an `ApiError`.
 */
export interface Decider<Command, State, Event extends DomainEvent = DomainEvent> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Event[];
  /**
   * A state read back from a snapshot (its JSON) made whole again: for states that hold more than
   * plain JSON (the customer's persistent lot ledger). Without it, the JSON is the state.
   */
  revive?: (snapshot: State) => State;
}

/** Folds events into state: what loading an aggregate and auditing a stream both do. */
export function fold<State, Event extends DomainEvent>(
  decider: Pick<Decider<unknown, State, Event>, 'initialState' | 'evolve'>,
  events: Iterable<Event>,
): State {
  let state = decider.initialState();
  for (const event of events) state = decider.evolve(state, event);
  return state;
}
