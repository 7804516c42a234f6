const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * When each attempt of a message is made, counted from the end of the previous one (CONTRACT.md
 * §10): at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h. After the last, the
 * message fails.
 */
export const RETRY_DELAYS_MS = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];

/** When to try again after `attemptsMade` failed attempts, the last of which ended at `now`; null when none is left. */
export function nextAttemptAt(attemptsMade: number, now: Date): Date | null {
  const delay = RETRY_DELAYS_MS[attemptsMade];
  return delay === undefined ? null : new Date(now.getTime() + delay);
}
