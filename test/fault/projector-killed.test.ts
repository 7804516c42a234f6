import type pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { PROJECTORS } from '../../src/projectors.js';
import {
  api,
  killAllProcesses,
  killProcess,
  type ProcessStore,
  runCli,
  type ServerProcess,
  startServer,
} from '../e2e/process-helpers.js';
import { describeWithOwnCluster, type OwnPostgres, startOwnPostgres } from '../support/own-postgres.js';
import { earn } from './earn-request.js';
import { expectReadModelsToMatchLog, laggingProjections, withClient } from './log-checks.js';

const CUSTOMERS = 8;
/** Earns written while the workers are paused: more than one projection batch (500 events). */
const BACKLOG = 800;
const CLIENTS = 16;

/** The read-model tables a rebuild replaces (every projector but the webhooks reactor). */
const REBUILT_TABLES = PROJECTORS.filter((p) => !p.reactor).flatMap((p) => p.tables);

/**
 * One md5 per read-model table over all its rows in `seq` order (insertion order, which list
 * endpoints page by), without `seq` itself: a rolled-back batch consumed sequence values, so the
 * numbers may have gaps a replay does not have, but the order must be the same.
 */
async function readModelDigest(client: pg.Client): Promise<Record<string, string>> {
  const { rows } = await client.query<{ table_name: string }>(
    `select table_name from information_schema.columns where table_schema = 'public' and column_name = 'seq' and table_name = any($1)`,
    [REBUILT_TABLES],
  );
  const sequenced = new Set(rows.map((r) => r.table_name));
  const columns = REBUILT_TABLES.map((t) => {
    const order = sequenced.has(t) ? 'x.seq' : 'to_jsonb(x)::text';
    return `(select md5(coalesce(string_agg((to_jsonb(x) - 'seq')::text, '|' order by ${order}), '')) from "${t}" x) as "${t}"`;
  });
  return (await client.query(`select ${columns.join(', ')}`)).rows[0];
}

/**
 * A customers-projector batch has inserted ledger rows and not committed: a transaction holds
 * the row-exclusive lock on ledger_entries (kept until commit or rollback) and has written.
 */
async function batchInFlight(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query(
    `select 1 from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.relation = 'ledger_entries'::regclass and l.mode = 'RowExclusiveLock'
        and a.backend_xid is not null and a.pid <> pg_backend_pid()`,
  );
  return rows.length > 0;
}

describeWithOwnCluster('projector killed mid-batch', () => {
  let cluster: OwnPostgres;
  let store: ProcessStore;
  let apiServer: ServerProcess;
  let key: string;
  const customerIds: string[] = [];

  beforeAll(async () => {
    cluster = await startOwnPostgres();
    store = { env: { DATABASE_URL: cluster.url, LOYALTY_RATE_LIMIT_RPS: '0' }, dispose: async () => {} };
  });

  afterAll(async () => {
    await killAllProcesses();
    await cluster?.destroy();
  });

  it('leaves read models equal to a full replay after kill -9 of the workers while a batch is uncommitted', async () => {
    // A second API process takes the backlog: it answers without waiting for the (paused) workers.
    const noWait = { ...store, env: { ...store.env, LOYALTY_RYW_TIMEOUT_MS: '0' } };
    const [init, firstApi, backlogApi, workers] = await Promise.all([
      runCli(['init', '--json'], store),
      startServer(store, { role: 'api' }),
      startServer(noWait, { role: 'api' }),
      startServer(store, { role: 'workers' }),
    ]);
    expect(init.code, init.stderr).toBe(0);
    key = JSON.parse(init.stdout).private_key;
    apiServer = firstApi;
    for (let c = 0; c < CUSTOMERS; c++) {
      const created = await api(apiServer.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: `killed-${c}@example.com` } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      customerIds.push(created.body.id);
    }

    await withClient(cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 15_000, interval: 50 });

      // A backlog: the workers are paused (SIGSTOP) while the API takes the earns.
      workers.signal('SIGSTOP');
      let next = 0;
      const writeBacklog = async (lane: number) => {
        while (next < BACKLOG) {
          const n = next++;
          const answer = await earn(backlogApi.baseUrl, key, customerIds[n % CUSTOMERS]!, `backlog-${lane}-${n}`, 1 + (n % 7));
          expect(answer.status, `${answer.code ?? answer.error}\n${backlogApi.stdout.slice(-3000)}`).toBe(201);
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, (_, lane) => writeBacklog(lane)));

      // The workers resume and catch up in batches; kill -9 once a batch has written ledger rows
      // and not committed.
      workers.signal('SIGCONT');
      await vi.waitFor(async () => expect(await batchInFlight(client)).toBe(true), { timeout: 20_000, interval: 1 });
      await killProcess(workers.child);
      expect(await laggingProjections(client)).not.toEqual([]);

      // A new workers process resumes from the checkpoints.
      const replacement: ServerProcess = await startServer(store, { role: 'workers' });
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 30_000, interval: 50 });
      await expectReadModelsToMatchLog(client);

      // The read models are exactly what a full replay of the log builds.
      replacement.signal('SIGTERM');
      await replacement.exited;
      const recovered = await readModelDigest(client);
      const rebuild = await runCli(['projections', 'rebuild'], store);
      expect(rebuild.code, rebuild.stderr).toBe(0);
      expect(await readModelDigest(client)).toEqual(recovered);
    });
  }, 120_000);

  it('keeps projecting across a database restart: the workers re-open their append-signal connection, the API recovers', async () => {
    const workers = await startServer(store, { role: 'workers' });
    const listeners = (client: pg.Client) =>
      client.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where query = 'listen loyalty_appended'`).then((r) => r.rows[0]!.n);
    await withClient(cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await listeners(client)).toBe(1), { timeout: 10_000, interval: 50 });
    });

    await cluster.stop('fast');
    await cluster.start();

    await withClient(cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await listeners(client)).toBe(1), { timeout: 15_000, interval: 50 });
      await vi.waitFor(
        async () => {
          const answer = await earn(apiServer.baseUrl, key, customerIds[0]!, 'after-restart');
          expect(answer.status, answer.code ?? answer.error).toBe(201);
        },
        { timeout: 15_000, interval: 200 },
      );
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 15_000, interval: 50 });
      await expectReadModelsToMatchLog(client);
    });
    expect(workers.child.exitCode, workers.stdout).toBeNull();
    expect(apiServer.child.exitCode, apiServer.stdout).toBeNull();
  }, 60_000);
});
