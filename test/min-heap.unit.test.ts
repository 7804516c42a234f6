import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MinHeap } from '../src/min-heap.js';

const byValue = (a: number, b: number) => a - b;

describe('MinHeap', () => {
  it('takes out, after any adds, takes and retains, what a sorted list would', () => {
    const op = fc.oneof(
      fc.record({ push: fc.integer({ min: -20, max: 20 }) }),
      fc.constant({ pop: true as const }),
      fc.record({ retainAbove: fc.integer({ min: -20, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -20, max: 20 }), { maxLength: 30 }), fc.array(op, { maxLength: 80 }), (initial, ops) => {
        const heap = new MinHeap(byValue, [...initial]);
        let model = [...initial].sort(byValue);
        for (const o of ops) {
          if ('push' in o) {
            heap.push(o.push);
            model = [...model, o.push].sort(byValue);
          } else if ('pop' in o) {
            expect(heap.pop()).toBe(model.shift());
          } else {
            heap.retain((v) => v > o.retainAbove);
            model = model.filter((v) => v > o.retainAbove);
          }
          expect(heap.size).toBe(model.length);
          expect(heap.peek()).toBe(model[0]);
        }
        const rest: number[] = [];
        for (let v = heap.pop(); v !== undefined; v = heap.pop()) rest.push(v);
        expect(rest).toEqual(model);
      }),
      { numRuns: 500 },
    );
  });

  it('compares O(n log n) times to take in and out n items, O(n) to build from them', () => {
    let comparisons = 0;
    const counted = (a: number, b: number) => {
      comparisons++;
      return a - b;
    };
    const n = 20_000;
    const values = Array.from({ length: n }, (_, i) => (i * 7_919) % n);
    const built = new MinHeap(counted, [...values]);
    expect(comparisons).toBeLessThan(2 * n);
    comparisons = 0;
    const heap = new MinHeap(counted);
    for (const v of values) heap.push(v);
    let previous = -1;
    for (let v = heap.pop(); v !== undefined; v = heap.pop()) {
      expect(v).toBeGreaterThan(previous);
      previous = v;
    }
    expect(previous).toBe(n - 1);
    // log2(20,000) ≈ 14.3: a push compares at most that many times, a take at most twice that.
    expect(comparisons).toBeLessThan(3 * 15 * n);
    expect(built.size).toBe(n);
  });
});
