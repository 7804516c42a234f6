import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toApiError } from '../../src/http/errors/error-response.js';
import { expectError } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const serverUrl = process.env.DATABASE_URL;

/** The PostgreSQL error a connection to `url` (as `user`) fails with, or the one `query` raises. */
async function serverError(url: string, query = 'select 1'): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query(query);
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => {});
  }
  throw new Error(`expected ${query} on ${url} to fail`);
}

function withPath(url: string, database: string, user?: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  if (user) u.username = user;
  return u.toString();
}

/**
 * Every "store not available" condition answers 503 `unavailable` (CONTRACT.md §3). These need a
 * PostgreSQL server to refuse in each way, so they run in the DATABASE_URL pass (the embedded
 * store has no connections to refuse).
 */
describe.runIf(serverUrl)('a PostgreSQL server that is not available answers 503', () => {
  let t: TestApp;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    t = await startTestApp();
    database = new URL((t.services.database as { url?: string }).url!).pathname.slice(1);
    admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`alter database ${database} allow_connections true`).catch(() => {});
    await admin.end();
    await t.close();
  });

  it('maps real server refusals to unavailable: no such database, too many connections, statement timeout', async () => {
    const missing = await serverError(withPath(serverUrl!, `nope_${randomBytes(4).toString('hex')}`));
    expect((missing as { code: string }).code).toBe('3D000');
    const role = `limited_${randomBytes(4).toString('hex')}`;
    await admin.query(`create role ${role} login connection limit 0`);
    try {
      const tooMany = await serverError(withPath(serverUrl!, database, role));
      expect((tooMany as { code: string }).code).toBe('53300');
      expect(toApiError(tooMany)).toMatchObject({ status: 503, code: 'unavailable' });
    } finally {
      await admin.query(`drop role ${role}`);
    }
    const timeout = await serverError(serverUrl!, "set statement_timeout = '50ms'; select pg_sleep(1)");
    expect((timeout as { code: string }).code).toBe('57014');
    for (const error of [missing, timeout]) expect(toApiError(error)).toMatchObject({ status: 503, code: 'unavailable' });
  });

  it('answers 503 unavailable while the database refuses connections (55000), then recovers', async () => {
    const biz = await t.business();
    expect((await t.request('GET', '/api/v1/tiers', { key: biz.private_key })).status).toBe(200);
    await admin.query(`alter database ${database} allow_connections false`);
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
    const refused = await serverError(withPath(serverUrl!, database));
    expect((refused as { code: string }).code).toBe('55000');

    const answer = await t.request('GET', '/api/v1/tiers', { key: biz.private_key });
    expectError(answer, 503, 'unavailable');
    const write = await t.request('POST', '/api/v1/customers', { key: biz.private_key, body: { email: 'down@example.com' } });
    expectError(write, 503, 'unavailable');

    await admin.query(`alter database ${database} allow_connections true`);
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await t.request('GET', '/api/v1/tiers', { key: biz.private_key })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  });
});
