import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { listen } from '../db/listen.js';
import type { Database } from '../db/schema.js';
import { APPENDED_CHANNEL } from '../store/append-statements.js';
import type { EventStore } from '../store/event-store.js';

/** The PostgreSQL channel on which API processes tell worker processes that the log grew. */
const CHANNEL = APPENDED_CHANNEL;

/**
 * For `serve --role api` with the log in KurrentDB (the PostgreSQL log signals from the append's own
 * statement: `PostgresEventStore`'s `signal`): after appends in this process, one `pg_notify` (coalesced while one is
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

/**
 * For `serve --role workers`: calls `onSignal` whenever an API process signals an append (see
 * `listen`: meanwhile the runners poll, and after each reconnect `onSignal` is called once so they
 * look for what they may have missed). The first connection must succeed.
 */
export function listenForAppends(databaseUrl: string, onSignal: () => void, logger: Logger): Promise<() => Promise<void>> {
  return listen(databaseUrl, CHANNEL, { onNotification: onSignal, onReconnect: onSignal, what: 'append signal connection lost; projections poll until it is back' }, logger);
}
