import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { EventStore } from '../store/event-store.js';

/** The PostgreSQL channel on which API processes tell worker processes that the log grew. */
const CHANNEL = 'loyalty_appended';

/**
 * For `serve --role api`: after appends in this process, one `pg_notify` (coalesced while one is
 * in flight), so workers in other processes project at once instead of at their next poll — the
 * writes' read-your-writes wait is for them. Losing a signal costs a poll interval, nothing more.
 */
export function signalAppends(db: Kysely<Database>, store: EventStore, logger: Logger): () => void {
  let sending = false;
  let again = false;
  const send = async (): Promise<void> => {
    if (sending) {
      again = true;
      return;
    }
    sending = true;
    try {
      do {
        again = false;
        await sql`select pg_notify(${CHANNEL}, '')`.execute(db);
      } while (again);
    } catch (error) {
      logger.warn({ err: error }, 'could not signal an append to the workers; they will find it on their next poll');
    } finally {
      sending = false;
    }
  };
  return store.onAppended(() => void send());
}

/** Pause before reconnecting the LISTEN connection, doubling per failed attempt up to the cap. */
const RECONNECT_MS = { first: 100, max: 5_000 };

/**
 * For `serve --role workers`: calls `onSignal` whenever an API process signals an append. The
 * LISTEN connection is reopened whenever it drops (a database restart), with a growing pause;
 * meanwhile the runners poll, and after each reconnect `onSignal` is called once so they look for
 * what they may have missed. The first connection must succeed (the caller fails to start otherwise).
 */
export async function listenForAppends(databaseUrl: string, onSignal: () => void, logger: Logger): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  const open = async (): Promise<void> => {
    // A server that accepts the connection and never answers must not hold the reconnect loop for ever.
    const next = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    next.on('notification', onSignal);
    const lost = (error?: Error) => {
      if (client !== next || stopped) return;
      client = null;
      logger.warn({ err: error }, 'append signal connection lost; projections poll until it is back');
      void next.end().catch(() => {});
      reconnect(RECONNECT_MS.first);
    };
    next.on('error', lost);
    next.on('end', () => lost());
    try {
      await next.connect();
      await next.query(`listen ${CHANNEL}`);
    } catch (error) {
      void next.end().catch(() => {});
      throw error;
    }
    if (stopped) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
  };

  const reconnect = (delayMs: number): void => {
    if (stopped) return;
    retry = setTimeout(() => {
      retry = null;
      open().then(
        () => onSignal(),
        () => reconnect(Math.min(RECONNECT_MS.max, delayMs * 2)),
      );
    }, delayMs);
  };

  await open();
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => {});
    client = null;
  };
}
