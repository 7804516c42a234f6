import { describe, expect, it } from 'vitest';
import { DEFAULT_PACER_OPTIONS, Pacer, type PacerOptions } from '../../src/lifecycle/pacing.js';

/** No forgetting within a test (a balance that decays makes the arithmetic inexact), no credit cap unless asked. */
const options: PacerOptions = { ...DEFAULT_PACER_OPTIONS, probeMs: 400, idleSpanMs: 1_000, memoryMs: Number.POSITIVE_INFINITY, creditMs: Number.POSITIVE_INFINITY, reprobeMs: 60_000 };

/** A pacer that has probed the others at `rate` events/ms, at time 1,000 ms. */
function probed(keep: number, rate: number, overrides: Partial<PacerOptions> = {}): Pacer {
  const pacer = new Pacer(keep, { ...options, ...overrides });
  const plan = pacer.plan(500, 100, 50);
  expect(plan).toEqual({ ms: 400, probe: true });
  pacer.observe(1_000, { ms: 100, others: 50 }, { ms: 400, others: 300 * rate }, { ms: 200, others: 200 * rate });
  return pacer;
}

describe('lifecycle pacing', () => {
  it('begins with a probe when others write: a pause of at least 400 ms and four rounds, whose second half gives their undisturbed rate', () => {
    const pacer = new Pacer(0.8, options);
    expect(pacer.plan(0, 100, 64)).toEqual({ ms: 400, probe: true });
    expect(pacer.plan(0, 250, 64)).toEqual({ ms: 1_000, probe: true });
    // Their undisturbed rate from the probe's second half: 1/ms. A round that slowed them to 50
    // events in 100 ms owes 80 − 50 = 30 events: paid back at 1/ms less the 0.8/ms they are owed.
    pacer.observe(1_000, { ms: 250, others: 64 }, { ms: 1_000, others: 700 }, { ms: 500, others: 500 });
    const pause = pacer.plan(1_100, 100, 50);
    expect(pause.probe).toBe(false);
    expect(pause.ms).toBeCloseTo(150);
    expect((50 + pause.ms * 1) / (100 + pause.ms)).toBeCloseTo(0.8); // over the cycle: 80% of 1/ms
  });

  it('takes their undisturbed rate from the idle polls before due work, when they wrote: no probe then', () => {
    const pacer = new Pacer(0.8, options);
    pacer.idle(0, 0);
    pacer.idle(500, 500); // half of idleSpanMs at 1/ms
    pacer.busy();
    const plan = pacer.plan(600, 100, 50);
    expect(plan.probe).toBe(false);
    expect(plan.ms).toBeCloseTo(150);
    // Idle polls with nobody writing leave no reference: the first round that others write during is followed by a probe.
    const quiet = new Pacer(0.8, options);
    quiet.idle(0, 0);
    quiet.idle(600, 0);
    expect(quiet.plan(700, 100, 50)).toEqual({ ms: 400, probe: true });
    // Over the idle polls of the last idleSpanMs only: their load rose from 1/ms to 2/ms.
    const rising = new Pacer(0.8, options);
    for (let at = 0; at <= 2_000; at += 500) rising.idle(at, at < 1_000 ? at : 1_000 + (at - 1_000) * 2);
    expect(rising.plan(2_100, 100, 100).ms).toBeCloseTo((0.8 * 2 * 100 - 100) / (2 * 0.2));
  });

  it('follows a probe that finds them faster at once, and one that finds them slower halfway', () => {
    const pacer = probed(0.8, 1, { reprobeMs: 1_000 });
    expect(pacer.plan(2_000, 100, 50).probe).toBe(true);
    pacer.observe(2_400, { ms: 100, others: 50 }, { ms: 400, others: 500 }, { ms: 200, others: 300 }); // 1.5/ms
    expect(pacer.plan(2_500, 100, 50).ms).toBeCloseTo((0.8 * 1.5 * 100 - 50) / (1.5 * 0.2));
  });

  it('does not pause for rounds nobody else wrote during when it knows of nobody, nor with keep 0', () => {
    expect(new Pacer(0.8, options).plan(0, 100, 0)).toEqual({ ms: 0, probe: false });
    expect(new Pacer(0, options).plan(0, 100, 64)).toEqual({ ms: 0, probe: false });
  });

  it('pays back in the next pause what a pause fell short by (requests recovering from the round)', () => {
    const pacer = probed(0.8, 1);
    expect(pacer.plan(1_100, 100, 50).ms).toBeCloseTo(150);
    // The pause gave them 120 events in 150 ms, not 150: 30 short of paying the round back.
    pacer.observe(1_250, { ms: 100, others: 50 }, { ms: 150, others: 120 });
    expect(pacer.plan(1_350, 100, 50).ms).toBeCloseTo((30 + 30) / 0.2);
    // Rounds that do not slow them (100 events in 100 ms) leave only the least pause, a tenth of the round.
    pacer.observe(1_650, { ms: 100, others: 50 }, { ms: 300, others: 300 });
    expect(pacer.plan(1_750, 100, 100).ms).toBeCloseTo(10);
  });

  it('lets the others get only a little ahead: a long pause does not buy rounds without pauses after it', () => {
    const pacer = probed(0.8, 1, { creditMs: 100 });
    pacer.plan(1_100, 100, 80);
    pacer.observe(3_100, { ms: 100, others: 80 }, { ms: 2_000, others: 2_000 }); // 400 events ahead, of which 100 count
    // A round that stops them owes 80: 20 ahead after it, so the least pause.
    expect(pacer.plan(3_200, 100, 0).ms).toBeCloseTo(10);
    pacer.observe(3_210, { ms: 100, others: 0 }, { ms: 10, others: 10 }); // 20 + 10 − 8 = 22 ahead
    expect(pacer.plan(3_310, 100, 0).ms).toBeCloseTo((80 - 22) / 0.2);
  });

  it('forgets an old shortfall', () => {
    const pacer = probed(0.8, 1, { memoryMs: 1_000 });
    pacer.plan(1_100, 100, 0); // 80 behind
    pacer.observe(1_110, { ms: 100, others: 0 }, { ms: 10, others: 10 }); // ~78 behind
    // Ten seconds later, e^−10 of it is left: the round's own 80 is what is owed.
    expect(pacer.plan(11_110, 100, 0).ms).toBeCloseTo(80 / 0.2, 0);
  });

  it('probes again every reprobeMs of due work, following a load that changed', () => {
    const pacer = probed(0.8, 1, { reprobeMs: 10_000 });
    expect(pacer.plan(5_000, 100, 50).probe).toBe(false);
    pacer.observe(5_150, { ms: 100, others: 50 }, { ms: 150, others: 150 });
    expect(pacer.plan(11_000, 100, 25)).toEqual({ ms: 400, probe: true });
    // Their load halved: 0.5/ms in the probe's second half; the reference moves halfway (smoothing 0.5) to 0.75/ms.
    pacer.observe(11_400, { ms: 100, others: 25 }, { ms: 400, others: 150 }, { ms: 200, others: 100 });
    expect(pacer.plan(11_500, 100, 25).ms).toBeCloseTo((0.8 * 0.75 * 100 - 25) / (0.75 * 0.2));
  });

  it('forgets the others once nobody wrote in a round nor in the probe after it: no pauses until someone writes again', () => {
    const pacer = probed(0.8, 1, { reprobeMs: 1_000 });
    expect(pacer.plan(2_000, 100, 0)).toEqual({ ms: 400, probe: true });
    pacer.observe(2_400, { ms: 100, others: 0 }, { ms: 400, others: 0 }, { ms: 200, others: 0 });
    expect(pacer.plan(2_500, 100, 0)).toEqual({ ms: 0, probe: false });
    expect(pacer.plan(2_600, 100, 3)).toEqual({ ms: 400, probe: true });
  });

  it('never pauses beyond its bound', () => {
    const pacer = probed(0.8, 1, { maxPauseMs: 5_000 });
    expect(pacer.plan(1_100, 10_000, 0).ms).toBe(5_000);
    expect(new Pacer(0.8, { ...options, maxPauseMs: 5_000 }).plan(0, 10_000, 64)).toEqual({ ms: 5_000, probe: true });
  });
});
