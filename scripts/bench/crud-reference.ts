/**
 * The plainest earn service there is, as a yardstick for this machine: hono + pg, the key compared
 * with a constant, one SQL statement per earn (`update … returning`), no log, no read models, no
 * idempotency. #13 compares the service with it ("the CRUD service is 1.19× the pgbench ceiling"):
 * run it here, beside the pgbench ceiling and the service, to see what a Node HTTP service with one
 * round trip per earn gets out of this machine.
 *
 *   tsx scripts/bench/crud-reference.ts [seconds=20] [processes=1,2]
 *
 * prints the pgbench ceiling, then for each process count the CRUD service's and the service's
 * spread earns (1,000 customers, 64 connections, the bench's own load), in one run.
 * `tsx scripts/bench/crud-reference.ts serve <port> <database url> <processes>` is the CRUD service
 * itself (node:cluster when processes > 1).
 */
import cluster from 'node:cluster';
import os from 'node:os';
import path from 'node:path';
import { type ChildProcess, spawn } from 'node:child_process';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import { Api, earnLoad, type LoadResult } from './load.js';
import { createDatabase, databaseUrl, dropDatabase, measureAppendCeiling, withClient } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const KEY = 'crud-reference-key';
const CUSTOMERS = 1000;

function serveCrud(port: number, url: string, processes: number): void {
  if (processes > 1 && cluster.isPrimary) {
    for (let i = 0; i < processes; i++) cluster.fork();
    return;
  }
  const pool = new pg.Pool({ connectionString: url, max: 16 });
  const app = new Hono();
  app.post('/api/v1/customers/:id/points/transaction', async (c) => {
    if (c.req.header('x-api-key') !== KEY) return c.json({ error: { code: 'unauthorized' } }, 401);
    const body = await c.req.json<{ amount: number }>();
    const { rows } = await pool.query<{ balance: string }>({
      name: 'earn',
      text: 'update crud_customers set balance = balance + $1 where id = $2 returning balance',
      values: [body.amount, c.req.param('id')],
    });
    if (rows.length === 0) return c.json({ error: { code: 'not_found' } }, 404);
    return c.json({ balance: Number(rows[0]!.balance) }, 201);
  });
  serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
}

async function startCrud(url: string, processes: number): Promise<{ url: string; stop(): Promise<void> }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'serve', String(port), url, String(processes)], {
    stdio: 'inherit',
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const answer = await fetch(`${base}/api/v1/customers/c-1/points/transaction`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: '{"amount":0}',
    }).catch(() => null);
    if (answer?.status === 201) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url: base,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const line = (name: string, r: LoadResult, ceiling: number) =>
  `${name.padEnd(40)} ${r.okPerSecond.toFixed(0).padStart(6)}/s  ${(r.okPerSecond / ceiling).toFixed(2)}× ceiling  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  errors ${r.errors}`;

async function main() {
  const seconds = Number(process.argv[2] ?? 20);
  const counts = (process.argv[3] ?? '1,2').split(',').map(Number);
  await buildService();
  const tmp = os.tmpdir();
  const ceiling = await measureAppendCeiling(tmp, 20);
  console.log(`pgbench append ceiling: ${ceiling.tps.toFixed(0)} tps; load average ${os.loadavg()[0]!.toFixed(1)}`);

  const crudDb = await createDatabase('crud');
  try {
    await withClient(async (c) => {
      await c.query('create table crud_customers (id text primary key, balance bigint not null default 0)');
      await c.query(`insert into crud_customers (id) select 'c-' || i from generate_series(1, ${CUSTOMERS}) i`);
      await c.query('vacuum analyze crud_customers');
    }, crudDb);
    const crudCustomers = Array.from({ length: CUSTOMERS }, (_, i) => `c-${i + 1}`);
    for (const processes of counts) {
      const crud = await startCrud(databaseUrl(crudDb), processes);
      await earnLoad({ baseUrl: crud.url, key: KEY, customers: crudCustomers, connections: 64, seconds: 3 });
      console.log(line(`CRUD service, ${processes} process(es)`, await earnLoad({ baseUrl: crud.url, key: KEY, customers: crudCustomers, connections: 64, seconds }), ceiling.tps));
      await crud.stop();

      const db = await createDatabase('reference');
      try {
        const store = { databaseUrl: databaseUrl(db) };
        const keys = await initStore(store);
        const server = await ServerProcess.start({ store, processes, logFile: path.join(tmp, `reference-${db}.log`) });
        try {
          const customers = await new Api(server.url, keys.private_key).createCustomers(CUSTOMERS, 'reference');
          await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
          console.log(line(`the service, ${processes} process(es)`, await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds }), ceiling.tps));
        } finally {
          await server.stop();
        }
      } finally {
        await dropDatabase(db);
      }
    }
  } finally {
    await dropDatabase(crudDb);
  }
}

if (process.argv[2] === 'serve') serveCrud(Number(process.argv[3]), process.argv[4]!, Number(process.argv[5] ?? 1));
else await main();
