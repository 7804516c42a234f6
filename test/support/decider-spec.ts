import { expect } from 'vitest';
import { type Decider, fold } from '../../src/commands/decider.js';
import { ApiError } from '../../src/errors.js';
import type { DomainEvent } from '../../src/events/catalogue.js';

/** Runs `run` and checks it throws the contract error `code` with `status`; returns it. */
export function expectApiError(run: () => unknown, code: string, status: number): ApiError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected ApiError ${code}`).toBeInstanceOf(ApiError);
  expect(caught).toMatchObject({ code, status });
  return caught as ApiError;
}

/**
 * Decider tests read given events (or a state) → when a command → then the events it decides, or
 * the ApiError it throws.
 */
export function deciderSpec<Command, State, Event extends DomainEvent>(decider: Decider<Command, State, Event>) {
  const givenState = (state: State) => ({
    state,
    when: (command: Command) => ({
      then: (expected: Event[]) => expect(decider.decide(command, state)).toEqual(expected),
      thenThrows: (code: string, status: number) => expectApiError(() => decider.decide(command, state), code, status),
    }),
  });
  return { given: (...events: Event[]) => givenState(fold(decider, events)), givenState };
}
