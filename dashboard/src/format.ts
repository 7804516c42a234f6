const numbers = new Intl.NumberFormat('en-US');
const relative = new Intl.RelativeTimeFormat('en-US', { numeric: 'auto' });
const absolute = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' });

/** `1234` → `1,234` (CONTRACT.md §14: numbers en-US style). */
export const formatNumber = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : numbers.format(n));

/** A signed change: `+1,234`, `−50`. */
export const formatChange = (n: number): string => (n > 0 ? `+${numbers.format(n)}` : n < 0 ? `−${numbers.format(-n)}` : '0');

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 86_400],
  ['month', 30 * 86_400],
  ['week', 7 * 86_400],
  ['day', 86_400],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/** `3 minutes ago`, `in 2 days`, relative to `now`. */
export function formatRelative(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') {
      return Math.abs(seconds) < 10 && unit === 'second' ? 'just now' : relative.format(Math.round(seconds / size), unit);
    }
  }
  return iso;
}

/** `Nov 24, 2026, 2:03:07 PM UTC`. */
export const formatAbsolute = (iso: string): string => `${absolute.format(new Date(iso))} UTC`;
