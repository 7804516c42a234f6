/**
 * Rolling tier qualification (CONTRACT.md §13), pure: the tier is the highest whose threshold ≤
 * the points credited in the last `window_days` (reversals count against the credit they reverse,
 * negative adjusts are negative credits). Qualifying points only change when a credit leaves the
 * window, so a downgrade can only fall due at such an instant (or when the earliest allowed
 * instant comes: the last evaluation, or `window_days` after a change of mode or window).
 */
import type { TierDefinition } from '../../events/program-events.js';

const DAY_MS = 86_400_000;

/** A credit as qualification counts it: when it was made, and its points net of reversals. */
export interface QualifyingCredit {
  at: string;
  amount: number;
}

/**
 * Credits as qualification reads them, index by index: the time each was made (ms) and its points
 * net of reversals. Numbers, not `QualifyingCredit`s: a decision in rolling mode reads every
 * credit two or three times, and parsing their ISO times again each time was most of its cost
 * (1.6 ms an earn for a customer with 1,000 credits in the window). `ordered`: times never
 * decrease, so the window's credits are found by binary search, and their sum is the difference
 * of two running sums (`sums[i]`: the first i amounts'). Only the first `length` entries count
 * (`length + 1` of `sums`: the arrays may be shared with a longer series: `LotLedger`).
 */
export interface CreditSeries {
  readonly times: readonly number[];
  readonly amounts: readonly number[];
  readonly sums: readonly number[];
  readonly length: number;
  readonly ordered: boolean;
  /** No amount is below 0 (no negative adjust): the sums never decrease. */
  readonly nonNegative: boolean;
}

export const NO_CREDITS: CreditSeries = { times: [], amounts: [], sums: [0], length: 0, ordered: true, nonNegative: true };

/** `credits` as a series (in the order given). */
export function creditSeries(credits: Iterable<QualifyingCredit>): CreditSeries {
  let series = NO_CREDITS;
  for (const credit of credits) series = withCredit(series, Date.parse(credit.at), credit.amount);
  return series;
}

/**
 * The series with one more credit. In place when nothing was appended to its arrays since it was
 * made, so a customer's states share one pair of arrays along their history; as they are when
 * what was appended is this very credit (a decision folds its events onto the state it decided
 * on more than once); a state that branches off an older one otherwise copies its part first.
 */
export function withCredit(series: CreditSeries, time: number, amount: number): CreditSeries {
  let times = series.times as number[];
  let amounts = series.amounts as number[];
  let sums = series.sums as number[];
  const n = series.length;
  const ordered = series.ordered && (n === 0 || time >= times[n - 1]!);
  const nonNegative = series.nonNegative && amount >= 0;
  if (times.length > n && times[n] === time && amounts[n] === amount) return { times, amounts, sums, length: n + 1, ordered, nonNegative };
  if (times.length !== n || series === NO_CREDITS) {
    times = times.slice(0, n);
    amounts = amounts.slice(0, n);
    sums = sums.slice(0, n + 1);
  }
  times.push(time);
  amounts.push(amount);
  sums.push(sums[n]! + amount);
  return { times, amounts, sums, length: n + 1, ordered, nonNegative };
}

/** Both series' credits, in time order. */
export function mergedSeries(a: CreditSeries, b: CreditSeries): CreditSeries {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  return sortedSeries([...entries(a), ...entries(b)]);
}

/** The series in time order: itself when it is (the usual case: credits are made in time order). */
function inTimeOrder(series: CreditSeries): CreditSeries {
  return series.ordered ? series : sortedSeries(entries(series));
}

function entries(series: CreditSeries): Array<{ t: number; amount: number }> {
  return Array.from({ length: series.length }, (_, i) => ({ t: series.times[i]!, amount: series.amounts[i]! }));
}

function sortedSeries(credits: Array<{ t: number; amount: number }>): CreditSeries {
  credits.sort((x, y) => x.t - y.t);
  let series = NO_CREDITS;
  for (const { t, amount } of credits) series = withCredit(series, t, amount);
  return series;
}

/** The first index of an ordered series whose time is after `t` (its length when none is). */
function firstAfter(series: CreditSeries, t: number): number {
  let lo = 0;
  let hi = series.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (series.times[mid]! > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Points credited in the window that ends at `at` (a credit counts while `at` < its time + window). */
export function qualifyingPoints(credits: CreditSeries, at: string, windowDays: number): number {
  const until = Date.parse(at);
  const from = until - windowDays * DAY_MS;
  const series = inTimeOrder(credits);
  return series.sums[firstAfter(series, until)]! - series.sums[firstAfter(series, from)]!;
}

/** The highest tier of `tiers` whose threshold ≤ `points`, or null. */
export function tierFor(tiers: readonly TierDefinition[], points: number): TierDefinition | null {
  let best: TierDefinition | null = null;
  for (const tier of tiers) if (tier.points_threshold <= points && (!best || tier.points_threshold > best.points_threshold)) best = tier;
  return best;
}

export interface DowngradePlan {
  at: string;
  qualifying: number;
  tier: TierDefinition | null;
}

/**
 * The first instant ≥ `notBefore` at which the qualifying points fall below `threshold` (the held
 * tier's), with the tier then qualified for; null when that never happens without a new event.
 *
 * The instants to look at are `notBefore` and each time a credit leaves the window after it. They
 * are swept in order with a running sum: a credit enters it once the instant reaches its time and
 * leaves once the instant reaches its time plus the window. In time order, the instants are the
 * credits' own order, and the sweep starts at the window that ends at `notBefore` (found by binary
 * search). (Summing every credit again at each instant cost O(n²): 250 ms of the event loop per
 * earn of a customer with 1,000 credits in the window.) Once every credit has entered and none is
 * negative, the points only fall as credits leave, so the first instant below the threshold is
 * found by binary search too (`firstDrop`): O(log² n) where the sweep went on through every credit
 * still to leave (0.8 ms an earn with 100,000 credits in the window).
 */
export function nextDowngrade(
  credits: CreditSeries,
  windowDays: number,
  threshold: number,
  notBefore: string,
  tiers: readonly TierDefinition[],
): DowngradePlan | null {
  const start = Date.parse(notBefore);
  const window = windowDays * DAY_MS;
  const series = inTimeOrder(credits);
  const { times, amounts, length } = series;
  let left = firstAfter(series, start - window); // the first credit still in the window at `start`, and the next to leave after it
  let entered = firstAfter(series, start);
  let sum = series.sums[entered]! - series.sums[left]!;
  let instant = start;
  let leaving = left;
  const plan = (at: number, qualifying: number): DowngradePlan => ({ at: new Date(at).toISOString(), qualifying, tier: tierFor(tiers, qualifying) });
  for (;;) {
    while (entered < length && times[entered]! <= instant) sum += amounts[entered++]!;
    while (left < entered && times[left]! + window <= instant) sum -= amounts[left++]!;
    if (sum < threshold) return plan(instant, sum);
    if (leaving >= length) return null;
    if (entered === length && series.nonNegative) {
      const drop = firstDrop(series, leaving, threshold);
      return drop === null ? null : plan(times[drop]! + window, series.sums[length]! - series.sums[firstAfter(series, times[drop]!)]!);
    }
    instant = times[leaving++]! + window;
  }
}

/**
 * With every credit of an ordered, non-negative series in the window, the first credit from
 * `from` on whose leaving (with those of its instant) takes the points below `threshold`; null
 * when none does. The points after the credits up to time t left are the total less `sums` up to
 * t, which never rises with t: a binary search.
 */
function firstDrop(series: CreditSeries, from: number, threshold: number): number | null {
  const total = series.sums[series.length]!;
  const below = (k: number) => total - series.sums[firstAfter(series, series.times[k]!)]! < threshold;
  let lo = from;
  let hi = series.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (below(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo < series.length ? lo : null;
}

/** `at` plus `days` whole days (ISO). */
export function addDays(at: string | Date, days: number): string {
  return new Date((typeof at === 'string' ? Date.parse(at) : at.getTime()) + days * DAY_MS).toISOString();
}
