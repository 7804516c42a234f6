/**
 * Where time comes from. One is made at composition (`createServices`) and handed to everything
 * that stamps or compares times: commands (through the command context), the rate limiter, the
 * webhook dispatcher. Tests pass one they move by hand.
 *
 * @example
 * let at = new Date('2026-01-01T00:00:00Z');
 * const clock: Clock = { now: () => at };
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
