import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PositionWaiters } from '../../src/projections/position-waiters.js';

const at = (n: number) => ({ globalPosition: BigInt(n) });
/** Lets the promise jobs of answered waiters run. */
const settled = () => new Promise<void>((resolve) => queueMicrotask(resolve)).then(() => Promise.resolve());

describe('PositionWaiters', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
  afterEach(() => void vi.useRealTimers());

  it('answers each waiter as a model does: true once a checkpoint reaches its position, false at its timeout, whichever comes first', async () => {
    const op = fc.oneof(
      fc.record({ wait: fc.integer({ min: 1, max: 30 }), timeout: fc.integer({ min: 1, max: 50 }) }),
      fc.record({ pass: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ advance: fc.integer({ min: 1, max: 30 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 120 }), async (ops) => {
        vi.clearAllTimers();
        const waiters = new PositionWaiters();
        const answers: Array<boolean | undefined> = [];
        const model: Array<{ position: number; deadline: number; answer?: boolean }> = [];
        let now = 0;
        for (const o of ops) {
          if ('wait' in o) {
            const i = answers.length;
            answers.push(undefined);
            void waiters.wait(at(o.wait), o.timeout).then((reached) => (answers[i] = reached));
            model.push({ position: o.wait, deadline: now + o.timeout });
          } else if ('pass' in o) {
            waiters.passed(at(o.pass));
            for (const w of model) if (w.answer === undefined && w.position <= o.pass) w.answer = true;
          } else {
            vi.advanceTimersByTime(o.advance);
            now += o.advance;
            for (const w of model) if (w.answer === undefined && w.deadline <= now) w.answer = false;
          }
          await settled();
          expect(answers).toEqual(model.map((w) => w.answer));
          expect(waiters.size).toBe(model.filter((w) => w.answer === undefined).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('drops the waiters that timed out while no checkpoint passes them, and still answers the live ones', async () => {
    vi.clearAllTimers();
    const waiters = new PositionWaiters();
    const stuck = Array.from({ length: 1_000 }, (_, i) => waiters.wait(at(1_000 + i), 10));
    vi.advanceTimersByTime(10);
    expect(await Promise.all(stuck)).toEqual(stuck.map(() => false));
    expect(waiters.size).toBe(0);
    const live = waiters.wait(at(5_000), 1_000);
    waiters.passed(at(5_000));
    expect(await live).toBe(true);
  });
});
