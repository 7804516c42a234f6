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

/** Points credited in the window that ends at `at` (a credit counts while `at` < its time + window). */
export function qualifyingPoints(credits: Iterable<QualifyingCredit>, at: string, windowDays: number): number {
  const from = Date.parse(at) - windowDays * DAY_MS;
  let sum = 0;
  for (const credit of credits) {
    const t = Date.parse(credit.at);
    if (t <= Date.parse(at) && t > from) sum += credit.amount;
  }
  return sum;
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
 */
export function nextDowngrade(
  credits: readonly QualifyingCredit[],
  windowDays: number,
  threshold: number,
  notBefore: string,
  tiers: readonly TierDefinition[],
): DowngradePlan | null {
  const start = Date.parse(notBefore);
  const candidates = new Set<number>([start]);
  for (const credit of credits) {
    const leaves = Date.parse(credit.at) + windowDays * DAY_MS;
    if (leaves > start) candidates.add(leaves);
  }
  for (const t of [...candidates].sort((a, b) => a - b)) {
    const at = new Date(t).toISOString();
    const qualifying = qualifyingPoints(credits, at, windowDays);
    if (qualifying < threshold) return { at, qualifying, tier: tierFor(tiers, qualifying) };
  }
  return null;
}

/** `at` plus `days` whole days (ISO). */
export function addDays(at: string | Date, days: number): string {
  return new Date((typeof at === 'string' ? Date.parse(at) : at.getTime()) + days * DAY_MS).toISOString();
}
