import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from '../../src/db/pglite-dialect.js';
import type { TestProject } from 'vitest/node';
import { migrateToLatest } from '../../src/db/migrations.js';
import { ensureDashboardBuilt } from './dashboard-build.js';
import { CLI_ENTRY, ensureDistBuilt } from './dist-build.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    /** An embedded store's directory after `loyalty migrate` (test/e2e/process-helpers.ts, `freshStore`). */
    migratedStoreTemplate: string;
  }
}

/**
 * Initialising PGlite takes seconds; loading a dump takes well under one. Build one migrated
 * database here and let every test file start from a copy of it (test/support/test-database.ts).
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'loyalty-test-'));
  const file = path.join(dir, 'template.tar.gz');
  const storeDir = path.join(dir, 'migrated-store');
  const embedded = !process.env.DATABASE_URL;
  // The builds the tests run (the dashboard, and dist/ for the process tests) beside the templates.
  await Promise.all([
    ensureDashboardBuilt(),
    ensureDistBuilt().then(() => (embedded ? migratedStore(storeDir) : undefined)),
    embedded ? writeTemplate(file) : undefined,
  ]);
  project.provide('pgliteTemplate', file);
  project.provide('migratedStoreTemplate', storeDir);
  return () => rmSync(dir, { recursive: true, force: true });
}

/** `loyalty migrate` on an empty embedded store, run as a user would. */
async function migratedStore(dataDir: string): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOYALTY_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  for (const name of ['DATABASE_URL', 'EVENTSTORE_URL', 'NODE_OPTIONS']) delete env[name];
  await promisify(execFile)(process.execPath, [CLI_ENTRY, 'migrate'], { env });
}

async function writeTemplate(file: string): Promise<void> {
  const pglite = await PGlite.create();
  const db = new Kysely<any>({ dialect: new PGliteDialect(pglite) });
  await migrateToLatest(db);
  const dump = await pglite.dumpDataDir('gzip');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  await db.destroy();
}
