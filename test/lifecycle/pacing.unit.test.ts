import { describe, expect, it } from 'vitest';
import { Pacer } from '../../src/lifecycle/pacing.js';

const options = { maxPauseMs: 5_000, smoothing: 1, probe: 0.1, longPauseMs: 5_000 };

describe('lifecycle pacing', () => {
  it('pauses keep / (1 − keep) times a round that stopped the others, so they keep that share of their rate', () => {
    const pacer = new Pacer(0.8, options);
    // Before anything is measured: the cautious assumption that a round stops them.
    expect(pacer.pauseAfter(100, 0)).toBeCloseTo(400);
    pacer.observe({ ms: 100, others: 0 }, { ms: 400, others: 400 });
    const pause = pacer.pauseAfter(100, 0);
    expect(pause).toBeCloseTo(400);
    // Others write at 1/ms in pauses and not at all in rounds: 400 events over 500 ms = 80% of 1/ms.
    expect(400 / (100 + pause)).toBeCloseTo(0.8);
  });

  it('pauses less when rounds only slow the others, and only the probe when they do not', () => {
    const pacer = new Pacer(0.8, options);
    pacer.observe({ ms: 100, others: 50 }, { ms: 100, others: 100 }); // ρ = 0.5
    const pause = pacer.pauseAfter(100, 50);
    expect(pause).toBeCloseTo(150);
    expect((50 + pause) / (100 + pause)).toBeCloseTo(0.8); // their events over the cycle, against 1/ms
    pacer.observe({ ms: 100, others: 95 }, { ms: 100, others: 100 }); // ρ = 0.95
    expect(pacer.pauseAfter(100, 95)).toBeCloseTo(10);
  });

  it('does not pause when nobody else wrote in the last pause nor in the round, and never beyond its bound', () => {
    const pacer = new Pacer(0.8, options);
    pacer.observe({ ms: 100, others: 0 }, { ms: 400, others: 0 });
    expect(pacer.pauseAfter(100, 0)).toBe(0);
    expect(pacer.pauseAfter(100, 3)).toBeCloseTo(400); // someone writes again: paced (ρ still unmeasured)
    expect(pacer.pauseAfter(10_000, 3)).toBe(5_000);
    expect(new Pacer(0, options).pauseAfter(100, 50)).toBe(0);
  });

  it('forgets what it measured of writers once nobody writes in a pause: the next ones start cautious', () => {
    const pacer = new Pacer(0.8, options);
    pacer.observe({ ms: 100, others: 100 }, { ms: 100, others: 100 }); // a bulk load its rounds did not slow: ρ = 1
    expect(pacer.pauseAfter(100, 100)).toBeCloseTo(10);
    pacer.observe({ ms: 100, others: 0 }, { ms: 10, others: 0 });
    expect(pacer.pauseAfter(100, 5)).toBeCloseTo(400);
  });

  it('pauses long enough for the others to keep their share of the rate they wrote at with no due work, when pauses run below it', () => {
    const pacer = new Pacer(0.8, options);
    pacer.idle(1_000, 2_000);
    pacer.idle(1_500, 2_500); // two idle polls: undisturbed, 1/ms
    // A round that slows them to half; the pause after it finds them at 0.9/ms, below their undisturbed rate.
    pacer.observe({ ms: 100, others: 50 }, { ms: 100, others: 90 });
    const pause = pacer.pauseAfter(100, 50);
    // By the ratio alone (ρ = 0.5 / 0.9) the pause would be about 97 ms and the cycle would give them about 0.71/ms.
    expect(pause).toBeCloseTo((0.8 * 100 - 50) / (0.9 - 0.8));
    expect((50 + 0.9 * pause) / (100 + pause)).toBeCloseTo(0.8); // 80% of their undisturbed 1/ms
    // Pauses that never get them back to 80% of it: the longest pause, which then measures their rate anew.
    pacer.observe({ ms: 100, others: 50 }, { ms: 100, others: 70 });
    expect(pacer.pauseAfter(100, 50)).toBe(5_000);
    pacer.observe({ ms: 100, others: 50 }, { ms: 5_000, others: 3_500 }); // their load fell to 0.7/ms
    expect(pacer.pauseAfter(100, 50)).toBeLessThan(5_000);
  });

  it('forgets the undisturbed rate with the writers: once nobody writes in a pause, only the ratio paces', () => {
    const pacer = new Pacer(0.8, options);
    pacer.idle(0, 0);
    pacer.idle(500, 500);
    pacer.observe({ ms: 100, others: 0 }, { ms: 100, others: 0 });
    pacer.observe({ ms: 100, others: 50 }, { ms: 100, others: 90 });
    expect(pacer.pauseAfter(100, 50)).toBeCloseTo((100 * (0.8 - 50 / 90)) / 0.2);
  });

  it('measures the undisturbed rate only between two idle polls with no due work between them', () => {
    const pacer = new Pacer(0.8, options);
    pacer.idle(0, 0);
    pacer.busy(); // a round ran: the stretch from the last idle poll is not undisturbed
    pacer.idle(1_000, 100); // the first idle poll after it: no reference yet
    pacer.observe({ ms: 100, others: 50 }, { ms: 100, others: 90 });
    expect(pacer.pauseAfter(100, 50)).toBeCloseTo((100 * (0.8 - 50 / 90)) / 0.2); // the ratio alone
    pacer.idle(1_500, 600); // then one more: 1/ms
    expect(pacer.pauseAfter(100, 50)).toBeCloseTo((0.8 * 100 - 50) / (0.9 - 0.8));
  });
});
