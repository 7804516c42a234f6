import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ConfigError } from '../config.js';
import { DatabaseUnreachable } from '../db/database.js';
import type { EventStore } from './event-store.js';
import { PostgresEventStore } from './postgres-event-store.js';

/**
 * The event log the configuration names: KurrentDB with `EVENTSTORE_URL`, otherwise the
 * PostgreSQL database (server or PGlite) that also holds the read models. The KurrentDB client
 * (gRPC and its protocol buffers) is loaded only then: it was a fifth of every start of the
 * `loyalty` command, which most installations never use.
 */
export async function openEventStore(
  eventStoreUrl: string | undefined,
  db: Kysely<Database>,
  /** `signalAppends`: the PostgreSQL log signals every append to workers elsewhere, in the append's transaction (KurrentDB: see src/projections/append-signal.ts). */
  options: { server: boolean; signalAppends?: boolean },
): Promise<{ store: EventStore; close: () => Promise<void> }> {
  if (!eventStoreUrl) return { store: new PostgresEventStore(db, { redecide: options.server, signal: options.signalAppends ?? false }), close: async () => {} };
  const { KurrentDbEventStore } = await import('./kurrentdb-event-store.js');
  let store: InstanceType<typeof KurrentDbEventStore>;
  try {
    store = KurrentDbEventStore.connect(eventStoreUrl);
  } catch (error) {
    throw new ConfigError('EVENTSTORE_URL', `EVENTSTORE_URL: not a KurrentDB connection string (${oneLine(error)}).`);
  }
  try {
    await store.headPosition();
  } catch (error) {
    await store.close().catch(() => {});
    throw new DatabaseUnreachable(`EVENTSTORE_URL: cannot reach KurrentDB at ${hostsOf(eventStoreUrl)} (${oneLine(error)}).`);
  }
  return { store, close: () => store.close() };
}

/** Where a KurrentDB connection string points (`kurrentdb://user:pass@a:2113,b:2113?…`), without its credentials. */
function hostsOf(url: string): string {
  return url.replace(/^[a-z+]+:\/\//i, '').replace(/^[^@/]*@/, '').replace(/[/?].*$/, '') || url.split(':')[0]!;
}

const oneLine = (error: unknown) => String((error as Error)?.message || error).replace(/\s+/g, ' ').trim();
