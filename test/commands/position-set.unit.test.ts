import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PositionSet } from '../../src/commands/customer/position-set.js';

const change = fc.record({ position: fc.nat({ max: 200 }), member: fc.boolean() });

describe('PositionSet: positions as a persistent bitmap', () => {
  it('holds what a Set of the same changes holds, and every earlier version stays as it was', () => {
    fc.assert(
      fc.property(fc.array(change, { maxLength: 120 }), fc.boolean(), (changes, batch) => {
        const expected = new Set<number>();
        let set = batch ? PositionSet.EMPTY.asMutable() : PositionSet.EMPTY;
        const versions: Array<[PositionSet, number[]]> = [];
        for (const { position, member } of changes) {
          set = set.with(position, member);
          if (member) expected.add(position);
          else expected.delete(position);
          if (!batch) versions.push([set, [...expected].sort((a, b) => a - b)]);
        }
        if (batch) set = set.asImmutable();
        const sorted = [...expected].sort((a, b) => a - b);
        expect(set.positions()).toEqual(sorted);
        expect(set.size).toBe(expected.size);
        for (let p = 0; p <= 200; p++) expect(set.has(p)).toBe(expected.has(p));
        for (const [version, members] of versions) expect(version.positions()).toEqual(members);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps positions far apart, each word boundary included', () => {
    const positions = [0, 29, 30, 59, 60, 61, 899, 900, 100_000];
    const set = positions.reduce((s, p) => s.with(p, true), PositionSet.EMPTY);
    expect(set.positions()).toEqual(positions);
    expect(set.with(30, false).positions()).toEqual(positions.filter((p) => p !== 30));
    expect(set.with(29, true)).toBe(set);
  });
});
