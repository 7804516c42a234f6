import { type Kysely, Migrator } from 'kysely';
import { migrations } from './migrations/index.js';
import { withoutQueryDeadline } from './query-deadline.js';

/** Applies the pending migrations. They may run long (a table rewritten, a lock waited for): no query deadline. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await withoutQueryDeadline(() => migrator.migrateToLatest());
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
