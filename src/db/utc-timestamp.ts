/**
 * A `timestamptz` as the server sends it to a UTC session ("2026-11-29 04:00:00.123456+00"), read
 * by character codes. Anything else (another time zone, BC, infinity, a year below 1000) goes to
 * `otherwise`, node-postgres' own parser, which runs three regular expressions per value: a
 * projection batch reads several timestamps per row (a lifecycle run spent 3% of its thread there).
 * Milliseconds are truncated, as that parser's `Date` truncates them.
 */
export function utcTimestampParser(otherwise: (text: string) => unknown): (text: string) => unknown {
  return (text) => {
    const n = text.length;
    if (n < 22 || n > 29 || text.charCodeAt(n - 3) !== PLUS || text.charCodeAt(n - 2) !== ZERO || text.charCodeAt(n - 1) !== ZERO) return otherwise(text);
    if (text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(10) !== SPACE || text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON) return otherwise(text);
    const year = digits(text, 0, 4);
    const month = digits(text, 5, 2);
    const day = digits(text, 8, 2);
    const hour = digits(text, 11, 2);
    const minute = digits(text, 14, 2);
    const second = digits(text, 17, 2);
    let ms = 0;
    if (n > 22) {
      // ".f" to ".ffffff" between the seconds and the offset
      if (text.charCodeAt(19) !== DOT || n === 23) return otherwise(text);
      const fraction = digits(text, 20, n - 23);
      if (fraction < 0) return otherwise(text);
      const places = n - 23;
      ms = places <= 3 ? fraction * 10 ** (3 - places) : Math.trunc(fraction / 10 ** (places - 3));
    }
    if (year < 1000 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return otherwise(text);
    return new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms));
  };
}

const PLUS = 43;
const ZERO = 48;
const DASH = 45;
const SPACE = 32;
const COLON = 58;
const DOT = 46;

/** The decimal number of `length` digits at `from`; −1 if one is not a digit. */
function digits(text: string, from: number, length: number): number {
  let value = 0;
  for (let i = from; i < from + length; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}
