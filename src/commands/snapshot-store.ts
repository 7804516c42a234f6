import type { Kysely } from 'kysely';
import { withoutQueryDeadline } from '../db/query-deadline.js';
import type { Database } from '../db/schema.js';

/**
 * Bump when any aggregate's state shape changes: snapshots of another version are ignored (and
 * replaced), so a deploy never folds events onto a state it does not understand.
 */
export const STATE_VERSION = 3;

/** A snapshot this large (a customer with thousands of lots) is written without the query deadline. */
const LARGE_SNAPSHOT_CHARS = 1_000_000;

/** Folded aggregate states kept in PostgreSQL, so a cold load reads a snapshot and the events after it. */
export function snapshotStore(db: Kysely<Database>) {
  return {
    async get(stream: string): Promise<{ state: unknown; revision: number } | undefined> {
      const row = await db
        .selectFrom('aggregate_snapshots')
        .select(['state', 'revision'])
        .where('stream_id', '=', stream)
        .where('state_version', '=', STATE_VERSION)
        .executeTakeFirst();
      return row && { state: row.state, revision: row.revision };
    },

    /**
     * Saves a snapshot unless a newer one of this version is already there; answers its size in
     * characters. A large one goes without the query deadline: it may take longer than a request's
     * query may (40 MB took 2–4 s under load), and a background write that timed out would tell the
     * whole process that the database does not answer (src/db/query-deadline.ts). Only a large one:
     * while a run without the deadline is under way, every request pays for tracking its promises.
     */
    async put(stream: string, revision: number, state: unknown): Promise<number> {
      const json = JSON.stringify(state);
      const write = () =>
        db
          .insertInto('aggregate_snapshots')
          .values({ stream_id: stream, state_version: STATE_VERSION, revision, state: json, taken_at: new Date() })
          .onConflict((oc) =>
            oc
              .column('stream_id')
              .doUpdateSet((eb) => ({
                state_version: eb.ref('excluded.state_version'),
                revision: eb.ref('excluded.revision'),
                state: eb.ref('excluded.state'),
                taken_at: eb.ref('excluded.taken_at'),
              }))
              .where((eb) => eb.or([eb('aggregate_snapshots.revision', '<', eb.ref('excluded.revision')), eb('aggregate_snapshots.state_version', '<>', STATE_VERSION)])),
          )
          .execute();
      await (json.length >= LARGE_SNAPSHOT_CHARS ? withoutQueryDeadline(write) : write());
      return json.length;
    },
  };
}

export type SnapshotStore = ReturnType<typeof snapshotStore>;
