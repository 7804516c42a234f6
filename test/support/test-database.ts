import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrations.js';

/** Which store the suite runs on: the PostgreSQL server of DATABASE_URL, or embedded PGlite. */
export const STORE_KIND = process.env.DATABASE_URL ? 'postgres' : 'pglite';

/**
 * A fresh, migrated, empty database for one test file: a new database on the server of
 * DATABASE_URL (dropped on close), or a PGlite loaded from the migrated template.
 */
export async function openTestDatabase(): Promise<DatabaseHandle & { url?: string }> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const template = readFileSync(inject('pgliteTemplate'));
    return openDatabase({ loadDataDir: new Blob([template]) });
  }
  const name = `loyalty_t_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}`);
  const url = withDatabase(serverUrl, name);
  const handle = await openDatabase({ databaseUrl: url });
  await migrateToLatest(handle.db);
  return {
    ...handle,
    url,
    async close() {
      await handle.close();
      await adminQuery(serverUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

/** A fresh, empty database on the server of DATABASE_URL (for tests that start server processes). */
export async function createServerDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `loyalty_t_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}`);
  return { url: withDatabase(serverUrl, name), drop: () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`) };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
