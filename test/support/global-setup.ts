import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from '../../src/db/pglite-dialect.js';
import type { TestProject } from 'vitest/node';
import { migrateToLatest } from '../../src/db/migrations.js';
import { ensureDashboardBuilt } from './dashboard-build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}

/**
 * Initialising PGlite takes seconds; loading a dump takes well under one. Build one migrated
 * database here and let every test file start from a copy of it (test/support/test-database.ts).
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'loyalty-test-'));
  const file = path.join(dir, 'template.tar.gz');
  await ensureDashboardBuilt();
  if (!process.env.DATABASE_URL) {
    const pglite = await PGlite.create();
    const db = new Kysely<any>({ dialect: new PGliteDialect(pglite) });
    await migrateToLatest(db);
    const dump = await pglite.dumpDataDir('gzip');
    writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
    await db.destroy();
  }
  project.provide('pgliteTemplate', file);
  return () => rmSync(dir, { recursive: true, force: true });
}
