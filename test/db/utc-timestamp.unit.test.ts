import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { utcTimestampParser } from '../../src/db/utc-timestamp.js';

const TIMESTAMPTZ_OID = 1184;
// node-postgres' own parser, as the service found it before putting this one in front.
const theirs = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => unknown;

/** A timestamptz as PostgreSQL writes it to a UTC session: microseconds with trailing zeros dropped. */
function asPostgresWrites(at: Date, micros: number): string {
  const iso = at.toISOString(); // 2026-11-29T04:00:00.123Z
  const fraction = `${iso.slice(20, 23)}${String(micros).padStart(3, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`;
}

describe('utcTimestampParser', () => {
  const ours = utcTimestampParser(theirs);

  it('reads any instant of years 1000–9999 as node-postgres does', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), fc.integer({ min: 0, max: 999 }), (at, micros) => {
        const text = asPostgresWrites(at, micros);
        expect((ours(text) as Date).getTime()).toBe((theirs(text) as Date).getTime());
        expect((ours(text) as Date).getTime()).toBe(at.getTime());
      }),
      { numRuns: 3000 },
    );
  });

  it('hands every other form to the parser it was given', () => {
    const otherwise = vi.fn((text: string) => theirs(text));
    const parse = utcTimestampParser(otherwise);
    const others = ['2026-11-29 05:30:00+05:30', '2026-11-29 04:00:00-08', '0050-03-01 00:00:00+00', '2026-11-29 04:00:00+00 BC', 'infinity', '-infinity', '2026-11-29 04:00:00.+00', '2026-11-29T04:00:00+00', '12026-11-29 04:00:00+00'];
    for (const text of others) {
      const got = parse(text);
      expect(got instanceof Date ? got.getTime() : got).toEqual((() => {
        const want = theirs(text);
        return want instanceof Date ? want.getTime() : want;
      })());
    }
    expect(otherwise).toHaveBeenCalledTimes(others.length);
    expect((parse('2026-11-29 04:00:00.5+00') as Date).toISOString()).toBe('2026-11-29T04:00:00.500Z');
    expect((parse('2026-11-29 04:00:00.123999+00') as Date).toISOString()).toBe('2026-11-29T04:00:00.123Z');
  });
});
