import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventStore } from '../store/event-store.js';
import type { Projector } from './projector.js';

export interface ProjectionStatus {
  name: string;
  /** Global position of the last event applied. */
  checkpoint: number;
  /** Events in the log after the checkpoint. */
  lag: number;
  updated_at: string | null;
  tables: readonly string[];
  rebuildable: boolean;
}

/**
 * Each projector's checkpoint (in `db`) and how many events of the log (`store`) lie after it
 * (`loyalty projections status`).
 */
export async function projectionStatus(
  db: Kysely<Database>,
  store: EventStore,
  projectors: readonly Projector[],
): Promise<ProjectionStatus[]> {
  const rows = await db.selectFrom('projection_checkpoints').selectAll().execute();
  return Promise.all(
    projectors.map(async (p) => {
      const row = rows.find((r) => r.name === p.name);
      const checkpoint = Number(row?.global_position ?? 0);
      return {
        name: p.name,
        checkpoint,
        lag: await store.countEvents({ globalPosition: BigInt(checkpoint) }),
        updated_at: row ? new Date(row.updated_at).toISOString() : null,
        tables: p.tables,
        rebuildable: !p.reactor,
      };
    }),
  );
}

/**
 * Each named projector's checkpoint and how far the log's `head` is past it, for gauges and
 * readiness that are asked often: the store subtracts positions where it can, and where it has to
 * count the events (KurrentDB) it stops at `max`.
 */
export async function projectionLag(db: Kysely<Database>, store: EventStore, names: readonly string[], max: number) {
  const head = await store.headPosition();
  const rows = await db.selectFrom('projection_checkpoints').select(['name', 'global_position']).execute();
  return Promise.all(
    names.map(async (name) => {
      const position = rows.find((r) => r.name === name)?.global_position ?? 0;
      const lag = await store.lag({ globalPosition: BigInt(position) }, head, { max });
      return { name, position, lag };
    }),
  );
}

export function formatProjectionStatus(statuses: readonly ProjectionStatus[]): string {
  const header = ['projector', 'checkpoint', 'lag', 'updated_at', 'tables'];
  const rows = statuses.map((s) => [
    s.name + (s.rebuildable ? '' : ' (reactor)'),
    String(s.checkpoint),
    String(s.lag),
    s.updated_at ?? '-',
    s.tables.join(', '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((cells) => cells.map((c, i) => (i === 1 || i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}
