import type { Logger } from 'pino';
import type { RefusalReason } from './connection-router.js';

/**
 * Counts the connections the primary answered 503 (connection-router.ts) and logs them at most
 * once a second, as one line with a count per reason: a flood of connections while every child
 * restarts is one line a second, not one per connection.
 */
export function refusalLog(logger: Logger, everyMs = 1_000) {
  let counts: Partial<Record<RefusalReason, number>> = {};
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (Object.keys(counts).length === 0) return;
    logger.warn({ refused: counts }, 'connections answered 503 by the primary: no HTTP process could take them');
    counts = {};
  };
  return {
    count(reason: RefusalReason) {
      counts[reason] = (counts[reason] ?? 0) + 1;
      timer ??= setTimeout(flush, everyMs).unref();
    },
    flush,
  };
}
