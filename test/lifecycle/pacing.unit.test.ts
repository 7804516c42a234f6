import { describe, expect, it } from 'vitest';
import { Pacer } from '../../src/lifecycle/pacing.js';

const options = { maxPauseMs: 5_000, smoothing: 1, probe: 0.1 };

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
});
