/**
 * Two yardsticks for this machine, measured beside the service in one run. #13 compares the
 * service with both:
 * - the plainest earn service there is: hono + pg, the key compared with a constant, one SQL
 *   statement per earn (`update … returning`), no log, no read models, no idempotency ("the CRUD
 *   service is 1.19× the pgbench ceiling"): what a Node HTTP service with one round trip per earn
 *   gets out of this machine;
 * - the idiomatic event-sourced alternative: hono and Emmett's PostgreSQL event store with a pure
 *   decider and no read models (`emmett-reference/server.mjs`; its packages, pinned in its own
 *   package.json, are installed there on first use, outside the project's dependencies).
 *
 *   tsx scripts/bench/crud-reference.ts [seconds=20] [processes=1,2] [services=crud,emmett,service] [spread|hot]
 *
 * prints the pgbench ceiling, then for each process count each service's earns, in one run: spread
 * over 1,000 customers on 64 connections (the bench's row 1), or `hot`: one customer on 32
 * connections (the bench's row 3), with the answers that were not 2xx. Beside each figure, the CPU
 * time (from /proc) per transaction or earn: PostgreSQL's backends, pgbench's client or the
 * service's processes, and this process (the load generator): at the ceiling's rate, the whole
 * machine has (cores / ceiling) of CPU per earn to share among them.
 * `tsx scripts/bench/crud-reference.ts serve <port> <database url> <processes>` is the CRUD service
 * itself (node:cluster when processes > 1).
 */
import cluster from 'node:cluster';
import os from 'node:os';
import path from 'node:path';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import { cpuDuring } from './cpu-time.js';
import { Api, earnLoad, type LoadResult } from './load.js';
import { createDatabase, databaseUrl, dropDatabase, measureAppendCeiling, withClient } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const KEY = 'crud-reference-key';
const EMMETT_KEY = 'emmett-reference-key';
const EMMETT_DIR = path.join(import.meta.dirname, 'emmett-reference');
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

/** Starts a reference service (`args` after node, listening on the port it is given) and waits for its first earn. */
async function startReference(args: (port: number) => string[], key: string, cwd?: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child: ChildProcess = spawn(process.execPath, args(port), { stdio: 'inherit', ...(cwd ? { cwd } : {}) });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const answer = await fetch(`${base}/api/v1/customers/c-1/points/transaction`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: '{"type":"earn","amount":1}',
    }).catch(() => null);
    if (answer?.status === 201) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url: base,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const startCrud = (url: string, processes: number) =>
  startReference((port) => ['--import', 'tsx', import.meta.filename, 'serve', String(port), url, String(processes)], KEY);

function startEmmett(url: string, processes: number) {
  if (!existsSync(path.join(EMMETT_DIR, 'node_modules'))) {
    console.log('installing the Emmett reference service\'s packages (once)');
    execFileSync('npm', ['install', '--no-package-lock', '--no-audit', '--no-fund'], { cwd: EMMETT_DIR, stdio: 'inherit' });
  }
  return startReference((port) => ['server.mjs', String(port), url, String(processes)], EMMETT_KEY, EMMETT_DIR);
}

const line = (name: string, r: LoadResult, ceiling: number) =>
  `${name.padEnd(40)} ${r.okPerSecond.toFixed(0).padStart(6)}/s  ${(r.okPerSecond / ceiling).toFixed(2)}× ceiling  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  errors ${r.errors}`;

const hot = process.argv[5] === 'hot';

/**
 * CPU per unit of work while `work` runs, in µs (`cpuDuring`): of `pid` and every process under it,
 * of the backends of database `db`, and of this process; `units` says how many were done.
 */
async function cpuPer<T>(pid: number, db: string, work: () => Promise<T>, units: (result: T) => number | Promise<number>) {
  const generatorBefore = process.cpuUsage();
  const { result, nodeMs, postgresMs } = await cpuDuring(pid, db, work);
  const generator = process.cpuUsage(generatorBefore);
  const n = await units(result);
  const per = (ms: number) => Math.round((ms * 1000) / n);
  return { result, own: per(nodeMs), postgres: per(postgresMs), generator: per((generator.user + generator.system) / 1000) };
}

/** Earns on one service (spread, or on its first customer only when `hot`): a 3 s warm-up, then the measured run. */
async function measure(name: string, baseUrl: string, key: string, customers: string[], seconds: number, ceiling: number, pid: number, db: string) {
  const load = { baseUrl, key, customers: hot ? customers.slice(0, 1) : customers, connections: hot ? 32 : 64 };
  await earnLoad({ ...load, seconds: 3 });
  const { result, own, postgres, generator } = await cpuPer(pid, db, () => earnLoad({ ...load, seconds }), (r) => r.ok);
  console.log(`${line(`${name}${hot ? ', one hot customer' : ''}`, result, ceiling)}  CPU per earn: service ${own} µs, PostgreSQL ${postgres} µs, load generator ${generator} µs`);
}

/**
 * What one pgbench append transaction costs, measured while the ceiling runs (from 2 s in to 1 s
 * before its end, counted by the database's commits): PostgreSQL's backends and pgbench's client.
 */
async function ceilingCost(db: string, pgbenchPid: number, seconds: number) {
  const commits = () => withClient(async (c) => Number((await c.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = $1', [db])).rows[0]!.n));
  await new Promise((r) => setTimeout(r, 2000));
  const before = await commits();
  const cost = await cpuPer(pgbenchPid, db, () => new Promise((r) => setTimeout(r, (seconds - 3) * 1000)), async () => {
    await new Promise((r) => setTimeout(r, 1100)); // the statistics are sent about once a second
    return (await commits()) - before;
  });
  return { postgres: cost.postgres, client: cost.own };
}

/** Runs `body` on a database of its own, dropped afterwards. */
async function withDatabase(name: string, body: (db: string) => Promise<void>) {
  const db = await createDatabase(name);
  try {
    await body(db);
  } finally {
    await dropDatabase(db);
  }
}

const referenceCustomers = Array.from({ length: CUSTOMERS }, (_, i) => `c-${i + 1}`);

/** Earns on a started reference service (its customers need no creating), which is stopped afterwards. */
async function measureReference(name: string, reference: { url: string; pid: number; stop(): Promise<void> }, key: string, seconds: number, ceiling: number, db: string) {
  try {
    await measure(name, reference.url, key, referenceCustomers, seconds, ceiling, reference.pid, db);
  } finally {
    await reference.stop();
  }
}

const services: Record<string, (processes: number, seconds: number, ceiling: number) => Promise<void>> = {
  crud: (processes, seconds, ceiling) =>
    withDatabase('crud', async (db) => {
      await withClient(async (c) => {
        await c.query('create table crud_customers (id text primary key, balance bigint not null default 0)');
        await c.query(`insert into crud_customers (id) select 'c-' || i from generate_series(1, ${CUSTOMERS}) i`);
        await c.query('vacuum analyze crud_customers');
      }, db);
      await measureReference(`CRUD service, ${processes} process(es)`, await startCrud(databaseUrl(db), processes), KEY, seconds, ceiling, db);
    }),
  emmett: (processes, seconds, ceiling) =>
    withDatabase('emmett', async (db) =>
      measureReference(`Emmett service, ${processes} process(es)`, await startEmmett(databaseUrl(db), processes), EMMETT_KEY, seconds, ceiling, db),
    ),
  service: (processes, seconds, ceiling) =>
    withDatabase('reference', async (db) => {
      const store = { databaseUrl: databaseUrl(db) };
      const keys = await initStore(store);
      const server = await ServerProcess.start({ store, processes, logFile: path.join(os.tmpdir(), `reference-${db}.log`) });
      try {
        const customers = await new Api(server.url, keys.private_key).createCustomers(CUSTOMERS, 'reference');
        await measure(`the service, ${processes} process(es)`, server.url, keys.private_key, customers, seconds, ceiling, server.pid, db);
      } finally {
        await server.stop();
      }
    }),
};

async function main() {
  const seconds = Number(process.argv[2] ?? 20);
  const counts = (process.argv[3] ?? '1,2').split(',').map(Number);
  const names = (process.argv[4] ?? 'crud,emmett,service').split(',');
  const unknown = names.filter((n) => !(n in services));
  if (unknown.length) throw new Error(`unknown service(s) ${unknown.join(', ')}: choose among ${Object.keys(services).join(', ')}`);
  await buildService();
  let cost = { postgres: 0, client: 0 };
  const ceiling = await measureAppendCeiling(os.tmpdir(), 20, 32, async (db, pid) => void (cost = await ceilingCost(db, pid, 20)));
  console.log(`pgbench append ceiling: ${ceiling.tps.toFixed(0)} tps; load average ${os.loadavg()[0]!.toFixed(1)}; CPU per transaction: PostgreSQL ${cost.postgres} µs, pgbench ${cost.client} µs`);
  for (const processes of counts) for (const name of names) await services[name]!(processes, seconds, ceiling.tps);
}

if (process.argv[2] === 'serve') serveCrud(Number(process.argv[3]), process.argv[4]!, Number(process.argv[5] ?? 1));
else await main();
