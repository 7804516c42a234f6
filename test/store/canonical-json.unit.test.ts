import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/json-equality.js';

/** The definition the hash chain was written with: JSON.stringify handed every object with its entries sorted. */
const bySortedCopies = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );

/** Keys that JavaScript orders apart (array indexes, numeric-looking strings that are not indexes) beside ordinary ones. */
const key = fc.oneof(fc.string(), fc.constantFrom('0', '1', '2', '9', '10', '01', '-1', '1.5', '4294967294', '4294967295', 'a', 'B', '_', '', '__proto__', 'toJSON'));
const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(undefined, Number.NaN, -0, Number.POSITIVE_INFINITY, 1e21, () => 1, Symbol('s'), { toJSON: () => ({ toJSON: () => 'twice', b: 1, a: [undefined] }) }),
    fc.date({ noInvalidDate: true }),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(key, tie('any'), { maxKeys: 6 }),
    fc.dictionary(fc.string(), fc.integer(), { minKeys: 17, maxKeys: 24 }), // sorted otherwise than a few keys are
  ),
})).any;

describe('canonicalJson', () => {
  it('answers exactly what JSON.stringify answers on copies with sorted keys, for any value', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(bySortedCopies(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('sorts keys at every depth, array indexes in numeric order first', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: undefined, x: null }], c: 2 }, 10: 'ten', 9: 'nine', '01': 0 })).toBe(
      '{"9":"nine","10":"ten","01":0,"a":{"c":2,"d":[{"x":null,"z":1}]},"b":1}',
    );
  });

  it('keeps an own `__proto__` key as a member, and calls a `toJSON` once, as JSON.stringify does', () => {
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":{"y":2,"x":1}}'))).toBe('{"__proto__":{"x":1,"y":2},"b":1}');
    expect(canonicalJson({ v: { toJSON: () => ({ toJSON: () => 'again', z: 1, a: 2 }) } })).toBe('{"v":{"a":2,"z":1}}');
  });
});
