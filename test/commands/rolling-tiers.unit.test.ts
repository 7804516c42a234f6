import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { creditSeries, nextDowngrade, type QualifyingCredit, qualifyingPoints, tierFor } from '../../src/commands/customer/rolling-tiers.js';
import type { TierDefinition } from '../../src/events/program-events.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (t: number) => new Date(t).toISOString();
const tier = (id: string, points_threshold: number): TierDefinition => ({ tier_id: id, name: id, points_threshold, multiplier: 1, benefits: [], metadata: {} });
const TIERS = [tier('silver', 100), tier('gold', 500)];

/** Points credited in the window ending at `t`, the slow way: every credit looked at. */
function slowQualifying(credits: QualifyingCredit[], t: number, windowDays: number): number {
  return credits.filter((c) => Date.parse(c.at) <= t && Date.parse(c.at) > t - windowDays * DAY).reduce((sum, c) => sum + c.amount, 0);
}

/** The rule as CONTRACT.md §13 words it, checked the slow way: every candidate instant in order, every credit summed again. */
function slowNextDowngrade(credits: QualifyingCredit[], windowDays: number, threshold: number, notBefore: string) {
  const start = Date.parse(notBefore);
  const candidates = [start, ...credits.map((c) => Date.parse(c.at) + windowDays * DAY).filter((t) => t > start)].sort((a, b) => a - b);
  for (const t of candidates) {
    const qualifying = slowQualifying(credits, t, windowDays);
    if (qualifying < threshold) return { at: iso(t), qualifying, tier: tierFor(TIERS, qualifying) };
  }
  return null;
}

describe('rolling tiers: the next downgrade', () => {
  it('is the instant the window slides below the held threshold, with the tier then qualified for', () => {
    const credits = [
      { at: iso(T0), amount: 300 },
      { at: iso(T0 + 10 * DAY), amount: 300 },
      { at: iso(T0 + 20 * DAY), amount: 50 },
    ];
    // Gold (500) is held on 650 points; the first credit leaves the window after 30 days: 350, silver.
    expect(nextDowngrade(creditSeries(credits), 30, 500, iso(T0 + 20 * DAY), TIERS)).toEqual({ at: iso(T0 + 30 * DAY), qualifying: 350, tier: TIERS[0] });
    // Silver (100) is held until the second leaves too: 50, no tier.
    expect(nextDowngrade(creditSeries(credits), 30, 100, iso(T0 + 20 * DAY), TIERS)).toEqual({ at: iso(T0 + 40 * DAY), qualifying: 50, tier: null });
    // Not before the instant given, even if the points are short already.
    expect(nextDowngrade(creditSeries(credits), 30, 1_000, iso(T0 + 25 * DAY), TIERS)).toEqual({ at: iso(T0 + 25 * DAY), qualifying: 650, tier: TIERS[1] });
    expect(nextDowngrade(creditSeries([]), 30, 0, iso(T0), TIERS)).toBeNull();
  });

  it('is the first instant below the threshold when a negative adjust leaving lifts the points again after it', () => {
    // 350 points from day 3 on; 300 once the first credit leaves (day 10), 200 once the second does
    // (day 11: below 250), 500 once the negative adjust does, 0 at last. The first drop counts.
    const credits = [50, 100, -300, 500].map((amount, day) => ({ at: iso(T0 + day * DAY), amount }));
    expect(nextDowngrade(creditSeries(credits), 10, 250, iso(T0 + 4 * DAY), TIERS)).toEqual({ at: iso(T0 + 11 * DAY), qualifying: 200, tier: TIERS[0] });
    expect(slowNextDowngrade(credits, 10, 250, iso(T0 + 4 * DAY))).toEqual({ at: iso(T0 + 11 * DAY), qualifying: 200, tier: TIERS[0] });
  });

  it('agrees with summing every credit again at every instant, for any credits, reversals and negative adjusts', () => {
    const credit = fc.record({ day: fc.integer({ min: 0, max: 120 }), ms: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: DAY - 1 })), amount: fc.integer({ min: -300, max: 600 }) });
    fc.assert(
      fc.property(
        fc.array(credit, { maxLength: 40 }),
        // Half the histories without a negative amount: their drop below the threshold is found by binary search.
        fc.boolean(),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 1_000 }),
        fc.integer({ min: 0, max: 150 }),
        (raw, nonNegative, windowDays, threshold, notBeforeDay) => {
          const credits = raw.map((c) => ({ at: iso(T0 + c.day * DAY + c.ms), amount: nonNegative ? Math.abs(c.amount) : c.amount }));
          const notBefore = iso(T0 + notBeforeDay * DAY);
          expect(nextDowngrade(creditSeries(credits), windowDays, threshold, notBefore, TIERS)).toEqual(slowNextDowngrade(credits, windowDays, threshold, notBefore));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('counts the window\'s points as summing every credit does, in time order or not', () => {
    const credit = fc.record({ day: fc.integer({ min: 0, max: 120 }), amount: fc.integer({ min: -300, max: 600 }) });
    fc.assert(
      fc.property(fc.array(credit, { maxLength: 40 }), fc.boolean(), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 200 }), (raw, sorted, windowDays, atDay) => {
        const credits = (sorted ? [...raw].sort((a, b) => a.day - b.day) : raw).map((c) => ({ at: iso(T0 + c.day * DAY), amount: c.amount }));
        expect(qualifyingPoints(creditSeries(credits), iso(T0 + atDay * DAY), windowDays)).toBe(slowQualifying(credits, T0 + atDay * DAY, windowDays));
      }),
      { numRuns: 500 },
    );
  });
});
