import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextAttemptAt, RETRY_DELAYS_MS } from '../../src/webhooks/retry-schedule.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** CONTRACT.md §10, written out here rather than imported: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
const CONTRACT_SCHEDULE = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];

describe('webhook retry schedule', () => {
  const now = new Date('2026-11-22T14:03:07.123Z');

  it('is the contract schedule: ten attempts, the first at once', () => {
    expect(RETRY_DELAYS_MS).toEqual(CONTRACT_SCHEDULE);
  });

  it('schedules the first attempt at once', () => {
    expect(nextAttemptAt(0, now)).toEqual(now);
  });

  it.each([
    [1, '2026-11-22T14:03:12.123Z'],
    [2, '2026-11-22T14:08:07.123Z'],
    [3, '2026-11-22T14:33:07.123Z'],
    [4, '2026-11-22T16:03:07.123Z'],
    [5, '2026-11-22T19:03:07.123Z'],
    [6, '2026-11-23T00:03:07.123Z'],
    [7, '2026-11-23T04:03:07.123Z'],
    [8, '2026-11-23T10:03:07.123Z'],
    [9, '2026-11-23T14:03:07.123Z'],
  ])('after %i failed attempts, tries again at %s', (attemptsMade, expected) => {
    expect(nextAttemptAt(attemptsMade, now)?.toISOString()).toBe(expected);
  });

  it('gives up after the tenth failed attempt', () => {
    expect(nextAttemptAt(10, now)).toBeNull();
    expect(nextAttemptAt(11, now)).toBeNull();
  });

  it('spreads the ten attempts over about three days and a half from the first', () => {
    let at = now;
    const times = [at];
    for (let made = 1; made < 10; made++) {
      at = nextAttemptAt(made, at)!;
      times.push(at);
    }
    expect(times).toHaveLength(10);
    expect(times.at(-1)!.getTime() - now.getTime()).toBe(5 * SECOND + 5 * MINUTE + 30 * MINUTE + (2 + 5 + 10 + 14 + 20 + 24) * HOUR);
  });

  // Plain fast-check rather than @fast-check/vitest: importing that costs seconds, most of the unit tier's time.
  it('counts each delay from the attempt just made, never earlier than it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), (attemptsMade, at) => {
        const next = nextAttemptAt(attemptsMade, at)!;
        expect(next.getTime() - at.getTime()).toBe(CONTRACT_SCHEDULE[attemptsMade]);
        expect(next.getTime()).toBeGreaterThan(at.getTime());
        // nextAttemptAt does not change the date it was given.
        expect(nextAttemptAt(attemptsMade, at)!.getTime()).toBe(next.getTime());
      }),
    );
  });
});
