import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
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

/** For `serve --role workers`: calls `onSignal` whenever an API process signals an append. */
export async function listenForAppends(databaseUrl: string, onSignal: () => void, logger: Logger): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('notification', onSignal);
  // Without the signal the runners still poll, so a lost connection only slows them down.
  client.on('error', (error) => logger.warn({ err: error }, 'append signal connection lost; projections fall back to polling'));
  await client.connect();
  await client.query(`listen ${CHANNEL}`);
  return () => client.end().catch(() => {});
}
