import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { smallestFirst } from '../src/smallest-first.js';

describe('smallestFirst', () => {
  const byValue = (a: number, b: number) => a - b;

  it('yields any items in sorted order, and as far as read, the smallest', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -50, max: 50 }), { maxLength: 60 }), fc.nat(70), (items, k) => {
        const sorted = [...items].sort(byValue);
        expect([...smallestFirst([...items], byValue)]).toEqual(sorted);
        const firstFew: number[] = [];
        for (const item of smallestFirst([...items], byValue)) {
          if (firstFew.length === k) break;
          firstFew.push(item);
        }
        expect(firstFew).toEqual(sorted.slice(0, k));
      }),
      { numRuns: 500 },
    );
  });

  it('compares about n + k log n times to take k of n, not n log n', () => {
    const items = Array.from({ length: 20_000 }, (_, i) => (i * 7_919) % 20_000);
    let comparisons = 0;
    const counted = (a: number, b: number) => {
      comparisons++;
      return a - b;
    };
    const taken: number[] = [];
    for (const item of smallestFirst(items, counted)) {
      taken.push(item);
      if (taken.length === 5) break;
    }
    expect(taken).toEqual([0, 1, 2, 3, 4]);
    expect(comparisons).toBeLessThan(3 * 20_000); // a sort takes about 20,000 × log2(20,000) ≈ 286,000
  });
});
