/**
 * `npm run bench`: the service as its own process on a fresh database of the local PostgreSQL
 * server, driven over HTTP by autocannon, next to the PostgreSQL append ceiling measured by pgbench
 * in the same run. Prints one table (see docs/performance.md for the scenarios and how to read it).
 *
 * Environment (all optional):
 *   BENCH_PG_URL          PostgreSQL server, without a database (postgres://postgres@127.0.0.1:5432)
 *   BENCH_SECONDS         length of the two main earn runs (20)
 *   BENCH_SHORT_SECONDS   length of the hot-customer, summary and PGlite runs (15)
 *   BENCH_TURN_ROUNDS     rounds of A B B A turns in the hot row over two processes against one (6)
 *   BENCH_TURN_SECONDS    length of each of those turns (5)
 *   BENCH_PGBENCH_SECONDS length of the pgbench run (20)
 *   BENCH_SOAK_SECONDS    length of the soak at half load (60; the target is stated for 300)
 *   BENCH_HISTORY_EVENTS  prior events of the long-history customer (100000)
 *   BENCH_CUSTOMERS       distinct customers the earn and summary loads spread over (1000)
 *   BENCH_REBUILD_EVENTS  events in the log that `loyalty projections rebuild` replays (1000000)
 *   BENCH_LIFECYCLE_LOTS  lots due at once in the lifecycle row (100000)
 *   BENCH_EXPORT_LINES    ledger lines that `loyalty export ledger` writes (1000000)
 *   BENCH_ONLY=rebuild    only the projection rebuild row (no pgbench, no server)
 *   BENCH_ONLY=export     only the export row (no pgbench, no server)
 *   BENCH_ONLY=lifecycle  only the lifecycle row (its own server and database; no pgbench)
 *   BENCH_ONLY=processes  only spread earns and one hot customer in the default topology, then rows 3b and 3c
 *                         (rows 1, 3, 3b, 3c; no pgbench: no ratio to the ceiling)
 *   BENCH_ONLY=soak       only the soak (row 7): customers with BENCH_SOAK_HISTORY earns each (seeded by the
 *                         bulk path, so the same whatever the load), then a restarted server at
 *                         BENCH_SOAK_RATE; RSS, V8 heap used / total and external memory every 5 s (no pgbench)
 *   BENCH_SOAK_HISTORY    earns per customer before the soak in BENCH_ONLY=soak (60)
 *   BENCH_SOAK_RATE       earns/s offered in BENCH_ONLY=soak (437, the rate of the reference run)
 *   BENCH_SOAK_NODE_FLAGS node flags of the soak's server (e.g. --max-semi-space-size=16); in BENCH_ONLY=soak,
 *                         several sets separated by | run one soak each, back to back (an empty set: none)
 *   BENCH_SOAK_SNAPSHOTS  seconds into the soak to write a heap snapshot at (e.g. 20,60; into the temp
 *                         directory, which is kept: the server runs with --heapsnapshot-signal=SIGUSR2)
 *   BENCH_DATABASE        BENCH_ONLY=soak: an existing empty database to use (not dropped) instead of a new one
 *   BENCH_SERVER=source   run the server as `node --import tsx src/cli.ts` instead of building dist/
 *   BENCH_LOG_LEVEL       the server's LOG_LEVEL (default: the service's own default)
 *   BENCH_RATE_LIMIT_RPS  the server's per-key limit (default 0: off, as the load drives one key); a limit
 *                         no load reaches (1000000) measures what the shared buckets cost a request
 *   BENCH_PROFILE=1       afterwards, one more earn run on a server under `node --cpu-prof`, summarized
 *   BENCH_NODE_FLAGS      node flags for every server the bench starts, its child processes included (they
 *                         inherit them): `--cpu-prof --cpu-prof-dir=DIR` profiles each process of a row
 *   BENCH_KEEP=1          keep the temporary directory (server logs, profiles) and print its path
 *   BENCH_DB_PREFIX       how the names of the databases the bench creates begin (loyalty_bench)
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { loadAggregate, withMetadata } from '../../src/commands/aggregate.js';
import { newId } from '../../src/ids.js';
import { loadConfig, servingProcesses, workersApart } from '../../src/config.js';
import { counted } from '../../src/plural.js';
import { type CustomerEvent, customerDecider } from '../../src/commands/customer/customer-decider.js';
import { snapshotStore } from '../../src/commands/snapshot-store.js';
import { streams } from '../../src/events/streams.js';
import { openDatabase } from '../../src/db/database.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { summarizeProfile } from './cpu-profile.js';
import { cpuDuring } from './cpu-time.js';
import { Api, earnLoad, type LoadResult, percentile, readLoad } from './load.js';
import { inTurns } from './turns.js';
import {
  createDatabase,
  createdDatabases,
  databaseCounters,
  databaseUrl,
  dropDatabase,
  measureAppendCeiling,
  sampleActivity,
  serverInfo,
  waitForProjections,
  withClient,
} from './postgres.js';
import { measureLifecycle } from './lifecycle.js';
import { EXPORT_HEAP_MB, measureExport } from './export.js';
import { earnOnePoint, measureRebuild } from './rebuild.js';
import { buildService, initStore, type Keys, REPO_ROOT, SERVER_MODE, ServerProcess, serveFresh, type Store } from './service.js';

function envInt(name: string, fallback: number): number {
  const value = process.env[name];
  const n = Number(value);
  return value && Number.isInteger(n) && n > 0 ? n : fallback;
}

const settings = {
  seconds: envInt('BENCH_SECONDS', 20),
  shortSeconds: envInt('BENCH_SHORT_SECONDS', 15),
  turnRounds: envInt('BENCH_TURN_ROUNDS', 6),
  turnSeconds: envInt('BENCH_TURN_SECONDS', 5),
  pgbenchSeconds: envInt('BENCH_PGBENCH_SECONDS', 20),
  soakSeconds: envInt('BENCH_SOAK_SECONDS', 60),
  historyEvents: envInt('BENCH_HISTORY_EVENTS', 100_000),
  customers: envInt('BENCH_CUSTOMERS', 1000),
  rebuildEvents: envInt('BENCH_REBUILD_EVENTS', 1_000_000),
  lifecycleLots: envInt('BENCH_LIFECYCLE_LOTS', 100_000),
  exportLines: envInt('BENCH_EXPORT_LINES', 1_000_000),
  only: process.env.BENCH_ONLY,
  soakRate: envInt('BENCH_SOAK_RATE', 0),
  soakHistory: envInt('BENCH_SOAK_HISTORY', 60),
  soakNodeFlags: (process.env.BENCH_SOAK_NODE_FLAGS ?? '').split('|').map((set) => set.split(/\s+/).filter(Boolean)),
  soakSnapshots: (process.env.BENCH_SOAK_SNAPSHOTS ?? '').split(',').filter(Boolean).map(Number),
  profile: process.env.BENCH_PROFILE === '1',
  keep: process.env.BENCH_KEEP === '1',
};

interface Row {
  scenario: string;
  measured: string;
  target: string;
  /** The figure over the pgbench append ceiling (throughput rows). */
  ratio: string;
  /** null: not measured. */
  pass: boolean | null;
}

const SERVER_ENV =
  `logs at ${process.env.BENCH_LOG_LEVEL ? `LOG_LEVEL=${process.env.BENCH_LOG_LEVEL}` : "the service's default level"} into a file, ` +
  'per-key rate limiting off (LOYALTY_RATE_LIMIT_RPS=0), PORT=0 on 127.0.0.1';

const rows: Row[] = [];
const notes: string[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ms = (n: number) => `${fmt(n, n < 10 ? 2 : 1)} ms`;
const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

function describeErrors(r: LoadResult): string {
  const bad = Object.entries(r.statusCodes).filter(([code]) => !code.startsWith('2'));
  const parts = bad.map(([code, n]) => `${fmt(n)}× ${code}`);
  if (r.errors) parts.push(`${fmt(r.errors)} connection errors (${fmt(r.timeouts)} timeouts)`);
  return parts.length ? `; NOT 2xx: ${parts.join(', ')}` : '';
}

async function main() {
  const started = performance.now();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'loyalty-bench-'));
  cleanups.push(async () => (settings.keep ? log(`kept ${tmp}`) : rm(tmp, { recursive: true, force: true })));

  const pgInfo = await serverInfo();
  const cpus = os.cpus();
  const machine = [
    `${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}`,
    `${fmt(os.totalmem() / 2 ** 30, 1)} GiB memory`,
    `Node ${process.version}`,
    `PostgreSQL ${pgInfo.version} (${Object.entries(pgInfo.settings).map(([k, v]) => `${k}=${v}`).join(', ')})`,
    `load average at start ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    `code ${await codeVersion()}`,
  ];
  log(`machine: ${machine.join('; ')}`);
  if (SERVER_MODE === 'dist') {
    log('npm run build (the server runs from dist/, as `npm start` does; BENCH_SERVER=source runs src/ through tsx)');
    await buildService();
  }
  notes.push(
    SERVER_MODE === 'dist'
      ? `Server: \`node dist/cli.js serve\` (after \`npm run build\`), ${SERVER_ENV}.`
      : `Server: \`node --import tsx src/cli.ts serve\` (BENCH_SERVER=source), ${SERVER_ENV}.`,
  );

  if (settings.only === 'rebuild') {
    rows.push(await rebuildRow());
    machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    printReport(machine, null, (performance.now() - started) / 1000);
    return;
  }
  if (settings.only === 'export') {
    rows.push(await exportRow(tmp));
    machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    printReport(machine, null, (performance.now() - started) / 1000);
    return;
  }
  if (settings.only === 'processes') {
    await processesOnly(tmp);
    machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    printReport(machine, null, (performance.now() - started) / 1000);
    return;
  }
  if (settings.only === 'soak') {
    await soakOnly(tmp);
    machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    printReport(machine, null, (performance.now() - started) / 1000);
    return;
  }
  if (settings.only === 'lifecycle') {
    rows.push(await lifecycleRow(tmp));
    machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    printReport(machine, null, (performance.now() - started) / 1000);
    return;
  }
  if (settings.only) throw new Error(`BENCH_ONLY=${settings.only}: the scenarios that run alone are 'rebuild', 'export', 'processes', 'lifecycle' and 'soak'`);

  // 1. The PostgreSQL ceiling for the smallest append.
  log(`pgbench: 32 clients, ${settings.pgbenchSeconds} s, 100,000 streams`);
  const ceiling = await measureAppendCeiling(tmp, settings.pgbenchSeconds);
  log(`pgbench ceiling: ${fmt(ceiling.tps)} tps (avg latency ${ceiling.latencyMs} ms)`);
  const ratio = (perSecond: number) => `${fmt(perSecond / ceiling.tps, 2)}×`;

  // 2. The service on the PostgreSQL server.
  const dbName = await createDatabase('main');
  cleanups.push(() => dropDatabase(dbName));
  const store: Store = { databaseUrl: databaseUrl(dbName) };
  const keys = await initStore(store);
  let server = await ServerProcess.start({ store, processes: 'default', logFile: path.join(tmp, 'server-postgres.log') });
  cleanups.push(() => server.stop());
  log(`server (PostgreSQL mode, ${defaultTopology(store)}) pid ${server.pid} at ${server.url}, database ${dbName}`);
  let api = new Api(server.url, keys.private_key);

  const t0 = performance.now();
  const customers = await api.createCustomers(settings.customers, 'load');
  const createSeconds = (performance.now() - t0) / 1000;
  notes.push(`Setup: ${fmt(settings.customers)} customers created through POST /customers (16 concurrent) in ${fmt(createSeconds, 1)} s = ${fmt(settings.customers / createSeconds)} creates/s.`);
  log(`created ${settings.customers} customers in ${createSeconds.toFixed(1)} s`);

  const rssAfter: string[] = [];
  const markRss = async (label: string) => rssAfter.push(`${label} ${fmt(await server.rssMb())}`);
  await markRss('start-up + customers');
  log('warm-up: 3 s of earns');
  await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });

  // Row 1: earn throughput, distinct customers.
  log(`earn, distinct customers, 64 connections, ${settings.seconds} s`);
  const countersBefore = await databaseCounters(dbName);
  const activity = sampleActivity(dbName);
  const fullCpu = await cpuDuring(server.pid, dbName, () => earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.seconds }));
  const full = fullCpu.result;
  const waits = await activity.stop();
  await new Promise((r) => setTimeout(r, 1500)); // backends flush their statistics about once a second
  const countersAfter = await databaseCounters(dbName);
  const perEarn = (k: keyof typeof countersAfter) => fmt((countersAfter[k] - countersBefore[k]) / Math.max(1, full.ok), 1);
  notes.push(
    `Database work per answered earn in that run (pg_stat_database, approximate): ${perEarn('commits')} transactions (single-statement reads included), ${perEarn('rollbacks')} rollbacks, ` +
      `${perEarn('inserted')} rows inserted, ${perEarn('updated')} rows updated, ${perEarn('fetched')} rows fetched.`,
  );
  notes.push(
    `During the 64-connection earn run, the service's PostgreSQL backends were (share of pg_stat_activity samples every 100 ms): ` +
      waits.slice(0, 6).map((w) => `${w.state} ${fmt(w.share * 100)}%`).join(', ') + '.',
  );
  rows.push({
    scenario: `earn over HTTP, ${fmt(customers.length)} distinct customers, 64 connections, ${full.seconds} s (${defaultTopology(store)})`,
    measured: `${fmt(full.okPerSecond)} earns/s (p50 ${ms(full.p50)}, p99 ${ms(full.p99)})${describeErrors(full)}`,
    target: `≥ 1.0 × ceiling = ${fmt(ceiling.tps)}/s`,
    ratio: ratio(full.okPerSecond),
    pass: full.okPerSecond >= ceiling.tps && full.non2xx === 0 && full.errors === 0,
  });

  await markRss('earn run');

  // Row 2: the same load at half that rate.
  const halfRate = full.okPerSecond / 2;
  log(`earn at half rate (${halfRate.toFixed(0)}/s), 64 connections, ${settings.seconds} s`);
  const half = await earnLoad({
    baseUrl: server.url,
    key: keys.private_key,
    customers,
    connections: 64,
    seconds: settings.seconds,
    overallRate: halfRate,
  });
  rows.push({
    scenario: `same load at half that rate (${fmt(halfRate)}/s offered)`,
    measured: `p99 ${ms(half.p99)} (p50 ${ms(half.p50)}) at ${fmt(half.okPerSecond)} earns/s${describeErrors(half)}`,
    target: 'p99 ≤ 50 ms',
    ratio: ratio(half.okPerSecond),
    pass: half.p99 <= 50 && half.non2xx === 0 && half.errors === 0,
  });

  await markRss('half rate');

  // Row 3: one hot customer.
  const single = await hotCustomer(server, keys, dbName, 'one hot customer, 32 connections');
  rows.push({ ...single.row, target: '≥ 1,500 earns/s, final balance exact', pass: single.run.okPerSecond >= 1500 && single.exact });

  await markRss('hot customer');

  // Rows 3b and 3c: several HTTP processes (`serve --processes`).
  const [fresh, long] = await api.createCustomers(2, 'history');
  await server.stop();
  rows.push(...(await severalProcesses(store, keys, customers, tmp, full.okPerSecond, ratio)));

  // Row 4: a customer with a long history, seeded while the server is down (so its memory holds
  // nothing of that customer), then loaded the way it would be after any restart.
  const n = settings.historyEvents;
  log(`server stopped; seeding ${fmt(n)} PointsEarned events on ${long} (the service's decider, event store and snapshot store)`);
  const t1 = performance.now();
  await seedHistory(dbName, keys.business_id, long!, n);
  const seedSeconds = (performance.now() - t1) / 1000;
  const t2 = performance.now();
  server = await ServerProcess.start({ store, processes: 'default', logFile: path.join(tmp, 'server-postgres-2.log') });
  const caughtUp = await waitForProjections(dbName, 240);
  const restartSeconds = (performance.now() - t2) / 1000;
  api = new Api(server.url, keys.private_key);
  log(`seeded in ${seedSeconds.toFixed(1)} s; server restarted and its read models caught up in ${restartSeconds.toFixed(1)} s`);
  notes.push(
    `Long history: ${fmt(n)} events seeded in ${fmt(seedSeconds, 1)} s by the bulk path (the service's decider, event store and snapshot store in the bench process, 1,000 events per append); ` +
      (caughtUp
        ? `the restarted server was listening with its read models caught up after ${fmt(restartSeconds, 1)} s = ${fmt(n / restartSeconds)} events/s (start-up catch-up, not a rebuild).`
        : 'the restarted server\'s read models had NOT caught up after 240 s.'),
  );
  rows.push(await longHistory(api, fresh!, long!, n, caughtUp));
  await markRss('long history (restarted)');

  // Row 5: projection rebuild, on a database of its own (the server keeps running meanwhile, idle).
  rows.push(await rebuildRow());

  // Rows 6 and 6b: a summary, and one customer's row.
  const readRow = async (label: string, path: (id: string) => string, minRate: number, maxP99?: number) => {
    log(`${label}, 64 connections, ${settings.shortSeconds} s`);
    const cpu = await cpuDuring(server.pid, dbName, () =>
      readLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.shortSeconds, path }),
    );
    const run = cpu.result;
    rows.push({
      scenario: `${label}, ${fmt(customers.length)} customers, 64 connections, ${run.seconds} s`,
      measured: `${fmt(run.okPerSecond)} req/s (p50 ${ms(run.p50)}, p99 ${ms(run.p99)})${describeErrors(run)}`,
      target: `≥ ${fmt(minRate)} req/s${maxP99 === undefined ? '' : `, p99 ≤ ${maxP99} ms`}`,
      ratio: ratio(run.okPerSecond),
      pass: run.okPerSecond >= minRate && (maxP99 === undefined || run.p99 <= maxP99) && run.non2xx === 0 && run.errors === 0,
    });
    return { ...cpu, run };
  };
  const readsCpu = await readRow('summary GET', (id) => `/api/v1/customers/${id}/summary`, 5000, 50);
  const reads = readsCpu.run;
  const customerCpu = await readRow('GET customer', (id) => `/api/v1/customers/${id}`, 6000);
  const customerReads = customerCpu.run;

  // Row 6c: CPU per request, from /proc over the runs above (the server's process; its database backends).
  const perRequest = (cpu: { nodeMs: number; postgresMs: number }, answered: number) =>
    `${fmt((cpu.nodeMs * 1000) / Math.max(1, answered))} µs server + ${fmt((cpu.postgresMs * 1000) / Math.max(1, answered))} µs PostgreSQL`;
  rows.push({
    scenario: 'CPU per request (user + system time from /proc over rows 1, 6 and 6b)',
    measured: `earn ${perRequest(fullCpu, full.ok)}; summary GET ${perRequest(readsCpu, reads.ok)}; GET customer ${perRequest(customerCpu, customerReads.ok)}`,
    target: 'printed, no target',
    ratio: '—',
    pass: null,
  });

  await markRss('summary GET');
  notes.push(`Server RSS (MB) after each step: ${rssAfter.join(', ')}.`);

  // Row 7: soak at half load, RSS sampled from /proc, on a freshly started server (same database),
  // so the heap left grown by the bursts above does not count as the soak's.
  await server.stop();
  rows.push(await soak(store, tmp, keys, customers, halfRate, ratio));

  // Row 7b: lots due at once, expired by the workers' scheduler while earns go on.
  rows.push(await lifecycleRow(tmp));

  // Row 8: embedded PGlite.
  rows.push(await embedded(tmp, ratio));

  const totalSeconds = (performance.now() - started) / 1000;
  machine.push(`load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  printReport(machine, ceiling, totalSeconds);

  if (settings.profile) await profileRun(tmp);
}

/** Row 7b: BENCH_LIFECYCLE_LOTS lots due at once (see lifecycle.ts). */
async function lifecycleRow(tmp: string): Promise<Row> {
  const r = await measureLifecycle(tmp, { lots: settings.lifecycleLots, loadCustomers: settings.customers, seconds: settings.shortSeconds }, log);
  const keep = r.earnsDuring / r.earnsBefore;
  log(
    `lifecycle: ${fmt(r.lots)} lots expired at ${fmt(r.expiredPerSecond)}/s; earns ${fmt(r.earnsDuring)}/s during vs ${fmt(r.earnsBefore)}/s before` +
      (r.earnsAfter === null ? '' : ` and ${fmt(r.earnsAfter)}/s after the last expiry (the same load going on: a control at the same minute)`),
  );
  notes.push(
    `Lifecycle: ${fmt(r.lots)} lots (${fmt(r.customers)} customers × 10, seeded through the bulk path) all expiring at one instant, on ${defaultTopology({ databaseUrl: databaseUrl('lifecycle') })} ` +
      `under the spread earn load of row 1 (64 connections, ${fmt(settings.customers)} other customers, from 10 s before the due instant); rates read from the log's recorded_at: expiries from the due instant (or, if later, the moment the index held every lot) to the last one, ` +
      `earns of the load customers while both ran` +
      (r.earnsAfter === null ? '' : ` (and after the last expiry, the load going on: ${fmt(r.earnsAfter)}/s)`) +
      `. The first expiry came ${fmt(r.firstLateMs)} ms after the due instant. ` +
      `CPU (from /proc): ${fmt(r.cpu.perEarn.nodeMs, 2)} ms in the server (${fmt(r.cpu.perEarn.mainThreadMs, 2)} of it on the main thread of its HTTP process) + ${fmt(r.cpu.perEarn.postgresMs, 2)} ms in PostgreSQL per earn of the baseline; ` +
      `per expired lot, what the expiry window used beyond its earns at that cost: ${fmt(r.cpu.perLot.nodeUs)} µs (${fmt(r.cpu.perLot.mainThreadUs)} µs on that thread) + ${fmt(r.cpu.perLot.postgresUs)} µs.`,
  );
  return {
    scenario: `${fmt(r.lots)} lots due at once, expired by the scheduler while earns go on`,
    measured:
      `${fmt(r.expiredPerSecond)} lots/s (${fmt(r.expirySeconds, 1)} s; each lot expired ${r.exactlyOnce ? 'exactly once' : 'NOT exactly once'}); ` +
      `earns ${fmt(r.earnsDuring)}/s meanwhile = ${fmt(keep * 100)}% of ${fmt(r.earnsBefore)}/s before`,
    target: '≥ 5,000 lots/s; earns ≥ 80%',
    ratio: '—',
    pass: r.expiredPerSecond >= 5000 && keep >= 0.8 && r.exactlyOnce,
  };
}

/** The commit the service was built from, and whether src/ had uncommitted changes. */
async function codeVersion(): Promise<string> {
  const git = (args: string[]) => promisify(execFile)('git', args, { cwd: REPO_ROOT }).then((r) => r.stdout.trim());
  try {
    const head = await git(['rev-parse', '--short', 'HEAD']);
    const dirty = await git(['status', '--porcelain', '--', 'src', 'package.json', 'package-lock.json']);
    return dirty ? `${head} + uncommitted changes in src/ or package files` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** Row 5: `loyalty projections rebuild` over BENCH_REBUILD_EVENTS events (see rebuild.ts). */
async function rebuildRow(): Promise<Row> {
  const r = await measureRebuild(settings.rebuildEvents, log);
  log(`rebuild: ${fmt(r.events)} events in ${r.rebuildSeconds.toFixed(1)} s = ${fmt(r.eventsPerSecond)} events/s; ${r.check.detail}`);
  notes.push(
    `Projection rebuild: ${fmt(r.events)} events (${fmt(r.customers)} customers: a registration and earns each) seeded in ${fmt(r.seedSeconds, 1)} s by the bulk path ` +
      `(10,000 events per append, 4 appends in flight); then \`loyalty projections rebuild\` (all projectors but the webhooks reactor, one pass) as its own process, start-up included.`,
  );
  return {
    scenario: `projection rebuild of ${fmt(r.events)} events (the CLI process, ${fmt(r.customers)} customers)`,
    measured: `${fmt(r.eventsPerSecond)} events/s (${fmt(r.rebuildSeconds, 1)} s); read models ${r.check.exact ? 'exact' : 'NOT EXACT'}: ${r.check.detail}`,
    target: '≥ 50,000 events/s',
    ratio: '—',
    pass: r.eventsPerSecond >= 50_000 && r.check.exact,
  };
}

/** `loyalty export ledger` of BENCH_EXPORT_LINES lines to a file, under a capped heap (see export.ts). */
async function exportRow(tmp: string): Promise<Row> {
  const r = await measureExport(settings.exportLines, tmp, log);
  const mb = (n: number) => `${fmt(n)} MB`;
  log(`export: ${fmt(r.ledger.lines)} lines in ${r.ledger.seconds.toFixed(1)} s, peak RSS ${mb(r.ledger.peakRssMb)} (customers: ${mb(r.small.peakRssMb)})`);
  notes.push(
    `Export: ${fmt(r.ledger.lines)} ledger lines over ${fmt(r.customers)} customers written into the read models by SQL in ${fmt(r.seedSeconds, 1)} s (no ANALYZE, as after a bulk load); ` +
      `then \`loyalty export ledger --format csv --output FILE\` as its own process with \`--max-old-space-size=${EXPORT_HEAP_MB}\` (start-up, catch-up check and count included): ` +
      `${fmt(r.ledger.bytes / 2 ** 20)} MiB written; \`loyalty export customers\` of the same store (${fmt(r.small.lines)} rows, heap not capped) took ${fmt(r.small.seconds, 1)} s and peaked at ${mb(r.small.peakRssMb)}.`,
  );
  return {
    scenario: `\`loyalty export ledger\` of ${fmt(r.ledger.lines)} lines as CSV (the CLI process)`,
    measured: `${fmt(r.ledger.linesPerSecond)} lines/s (${fmt(r.ledger.seconds, 1)} s), peak RSS ${mb(r.ledger.peakRssMb)} under a ${EXPORT_HEAP_MB} MB heap (a ${fmt(r.small.lines)}-row export: ${mb(r.small.peakRssMb)}); file ${r.exact ? 'exact' : 'NOT EXACT'}`,
    target: `constant memory: completes with the heap capped at ${EXPORT_HEAP_MB} MB`,
    ratio: '—',
    pass: r.exact,
  };
}

/**
 * One customer of a server, hot: earns from 32 connections in one run or several, then whether its
 * balance is exact (the sum of the earn events in the log, every answered earn one of them; a few
 * more may have been in flight when a run stopped: at most one per connection and run).
 */
class HotCustomer {
  readonly runs: LoadResult[] = [];
  private nodeMs = 0;
  private postgresMs = 0;
  private busyMs = 0;
  private warmed = 0;

  private constructor(
    private readonly server: ServerProcess,
    private readonly key: string,
    private readonly dbName: string,
    private readonly id: string,
    private readonly before: number,
  ) {}

  static async create(server: ServerProcess, keys: Keys, dbName: string): Promise<HotCustomer> {
    const api = new Api(server.url, keys.private_key);
    const [hot] = await api.createCustomers(1, `hot-${rows.length}`);
    return new HotCustomer(server, keys.private_key, dbName, hot!, await api.balance(hot!));
  }

  /** Earns for `seconds` that no figure counts (the balance check does). */
  async warmUp(seconds: number): Promise<void> {
    this.warmed += (await this.load(seconds)).ok;
  }

  /** One run of `seconds`; its CPU (server and its PostgreSQL backends) is added to the customer's. */
  async run(seconds: number): Promise<LoadResult> {
    const cost = await cpuDuring(this.server.pid, this.dbName, () => this.load(seconds));
    this.runs.push(cost.result);
    this.nodeMs += cost.nodeMs;
    this.postgresMs += cost.postgresMs;
    this.busyMs += cost.machineBusy * cost.result.seconds;
    return cost.result;
  }

  private load(seconds: number): Promise<LoadResult> {
    return earnLoad({ baseUrl: this.server.url, key: this.key, customers: [this.id], connections: 32, seconds });
  }

  /** After the runs: whether the balance is exact, and what the runs cost per answered earn. */
  async verify(): Promise<{ exact: boolean; ok: number; non2xx: number; errors: number; cpuPerEarnUs: number; text: string }> {
    const sum = (pick: (r: LoadResult) => number) => this.runs.reduce((total, r) => total + pick(r), 0);
    const [ok, non2xx, errors, seconds] = [sum((r) => r.ok), sum((r) => r.non2xx), sum((r) => r.errors), sum((r) => r.seconds)];
    await quiesce(this.dbName); // requests still in flight when a run stopped finish, and are projected
    const after = await new Api(this.server.url, this.key).balance(this.id);
    const logged = await withClient(
      async (c) =>
        (
          await c.query<{ n: number; points: number }>(
            `select count(*)::int as n, coalesce(sum((data->>'amount')::int), 0)::int as points from events where stream_id = $1 and type = 'PointsEarned'`,
            [streams.customer(this.id)],
          )
        ).rows[0]!,
      this.dbName,
    );
    const inFlight = logged.n - ok - this.warmed;
    const exact = after === this.before + logged.points && logged.points === logged.n && inFlight >= 0 && inFlight <= 32 * (this.runs.length + (this.warmed ? 1 : 0)) + non2xx;
    // Whether more processes could help at all: how busy the machine was, and what an earn cost it.
    const perEarn = (cpuMs: number) => (cpuMs * 1000) / Math.max(1, ok);
    const cpuPerEarnUs = perEarn(this.nodeMs + this.postgresMs);
    const text =
      `balance ${fmt(after)} = ${fmt(logged.n)} earn events in the log (${fmt(ok)} answered 201${this.warmed ? ` + ${fmt(this.warmed)} in the warm-up` : ''} + ${fmt(inFlight)} in flight at stop): ${exact ? 'exact' : 'NOT EXACT'}; ` +
      `CPU per earn ${fmt(cpuPerEarnUs)} µs (server ${fmt(perEarn(this.nodeMs))} + PostgreSQL ${fmt(perEarn(this.postgresMs))}), machine ${fmt((this.busyMs / Math.max(1, seconds)) * 100)}% busy`;
    return { exact, ok, non2xx, errors, cpuPerEarnUs, text };
  }
}

/** One hot customer (32 connections) on `server`, one run: row 3. */
async function hotCustomer(server: ServerProcess, keys: Keys, dbName: string, label: string): Promise<{ run: LoadResult; exact: boolean; row: Row; cpuPerEarnUs: number }> {
  const hot = await HotCustomer.create(server, keys, dbName);
  log(`earn, ${label}, ${settings.shortSeconds} s`);
  const run = await hot.run(settings.shortSeconds);
  const verified = await hot.verify();
  const measured = `${fmt(run.okPerSecond)} earns/s (p50 ${ms(run.p50)}, p99 ${ms(run.p99)}); ${verified.text}${describeErrors(run)}`;
  return { run, exact: verified.exact, cpuPerEarnUs: verified.cpuPerEarnUs, row: { scenario: `${label}, ${run.seconds} s`, measured, target: '', ratio: '', pass: null } };
}

/**
 * Row 3b (issue 12): one hot customer over `serve --processes 2` against `serve --processes 1`.
 * Both run at once, each started fresh on a database of its own and warmed alike, and are measured
 * in turns (`inTurns`: A B B A per round, BENCH_TURN_ROUNDS rounds of BENCH_TURN_SECONDS turns):
 * two runs of the whole row minutes apart moved by 15–25% on this machine, more than the
 * difference the row is about. The row passes on the median of the rounds' ratios.
 */
async function hotOverTwoProcesses(tmp: string): Promise<Row> {
  const started: Array<{ server: ServerProcess; dbName: string }> = [];
  try {
    const side = async (processes: number) => {
      const { database: dbName, keys, server } = await serveFresh(`turns_${processes}`, { processes, logFile: () => path.join(tmp, `server-turns-${processes}.log`) });
      cleanups.push(() => dropDatabase(dbName));
      started.push({ server, dbName });
      const hot = await HotCustomer.create(server, keys, dbName);
      await hot.warmUp(3);
      return hot;
    };
    const one = await side(1);
    const two = await side(2);
    log(`earn, one hot customer, --processes 2 against --processes 1 in turns: ${counted(settings.turnRounds, 'round', 'rounds')} of A B B A, ${settings.turnSeconds} s a turn`);
    const { ratios, median: ratio } = await inTurns(
      settings.turnRounds,
      async () => (await one.run(settings.turnSeconds)).okPerSecond,
      async () => (await two.run(settings.turnSeconds)).okPerSecond,
    );
    const [v1, v2] = [await one.verify(), await two.verify()];
    const mean = (hot: HotCustomer, pick: (r: LoadResult) => number) => hot.runs.reduce((sum, r) => sum + pick(r), 0) / hot.runs.length;
    const errors = (v: typeof v1) => (v.non2xx + v.errors > 0 ? `; NOT 2xx: ${fmt(v.non2xx)}, connection errors: ${fmt(v.errors)}` : '');
    return {
      scenario: `one hot customer over 2 HTTP processes (\`serve --processes 2\`) against 1, 32 connections, in turns (${counted(settings.turnRounds, 'round', 'rounds')} of A B B A, ${settings.turnSeconds} s a turn, each on a fresh database)`,
      measured:
        `2 processes ${fmt(mean(two, (r) => r.okPerSecond))} earns/s (mean p99 ${ms(mean(two, (r) => r.p99))}), 1 process ${fmt(mean(one, (r) => r.okPerSecond))} earns/s (mean p99 ${ms(mean(one, (r) => r.p99))}) in the same turns; ` +
        `ratio per round ${ratios.map((r) => fmt(r, 2)).join(', ')}: median **${fmt(ratio, 2)}×**, at ${fmt(v2.cpuPerEarnUs / v1.cpuPerEarnUs, 2)}× the CPU per earn; ` +
        `2 processes: ${v2.text}${errors(v2)}; 1 process: ${v1.text}${errors(v1)}`,
      target: '≥ 1.0 × the single process (median of the rounds), 0 non-2xx, balances exact',
      ratio: '—',
      pass: ratio >= 1 && v1.exact && v2.exact && v1.non2xx + v1.errors + v2.non2xx + v2.errors === 0,
    };
  } finally {
    for (const { server } of started) await server.stop();
  }
}

/**
 * Rows 3b and 3c (issue 12): `serve --processes 2` with one hot customer against the single
 * process (`hotOverTwoProcesses`, on databases of their own), and spread earns in one process
 * (`--processes 1`) against row 1's default topology (and, where the default is not one HTTP
 * process per core, with one per core too), each started on the same database as row 1 and
 * stopped after its row.
 */
async function severalProcesses(store: Store, keys: Keys, customers: string[], tmp: string, spreadDefault: number, ratio: (n: number) => string): Promise<Row[]> {
  const out: Row[] = [await hotOverTwoProcesses(tmp)];
  // One process (everything in it), and one HTTP process per core when the default has fewer.
  const cores = os.availableParallelism();
  const byDefault = servingProcesses(configOf(store), undefined, cores);
  const topologies: Array<{ processes: number; label: string }> = [
    { processes: 1, label: 'one process (`serve --processes 1`: HTTP, projections and the scheduler in one)' },
    ...(byDefault === cores || cores === 1 ? [] : [{ processes: cores, label: `one HTTP process per core (\`serve --processes ${cores}\`)` }]),
  ];
  for (const { processes, label } of topologies) {
    const server = await ServerProcess.start({ store, processes, logFile: path.join(tmp, `server-processes-${processes}.log`) });
    try {
      log(`server with ${label} at ${server.url}`);
      await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
      log(`earn, distinct customers, ${label}, 64 connections, ${settings.seconds} s`);
      const run = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.seconds });
      const vsDefault = run.okPerSecond / spreadDefault;
      out.push({
        scenario: `earn over HTTP, ${fmt(customers.length)} distinct customers, ${label}, 64 connections, ${run.seconds} s`,
        measured: `${fmt(run.okPerSecond)} earns/s (p50 ${ms(run.p50)}, p99 ${ms(run.p99)}); ${fmt(vsDefault, 2)}× the default (row 1)${describeErrors(run)}`,
        target: 'printed beside row 1 (no target of its own)',
        ratio: ratio(run.okPerSecond),
        pass: null,
      });
    } finally {
      await server.stop();
    }
  }
  return out;
}

function configOf(store: Store) {
  return loadConfig({ DATABASE_URL: 'databaseUrl' in store ? store.databaseUrl : undefined });
}

/** What `serve` runs by default on this machine for `store`, e.g. "the default \`serve\`: 1 HTTP process and a workers process". */
function defaultTopology(store: Store): string {
  const [config, cores] = [configOf(store), os.availableParallelism()];
  const http = servingProcesses(config, undefined, cores);
  return `the default \`serve\`: ${workersApart(config, undefined, cores) ? `${counted(http, 'HTTP process', 'HTTP processes')} and a workers process` : 'one process'}`;
}

/** BENCH_ONLY=processes: rows 1 and 3 in the default topology, then rows 3b and 3c. */
async function processesOnly(tmp: string): Promise<void> {
  const dbName = await createDatabase('processes');
  cleanups.push(() => dropDatabase(dbName));
  const store: Store = { databaseUrl: databaseUrl(dbName) };
  const keys = await initStore(store);
  const server = await ServerProcess.start({ store, processes: 'default', logFile: path.join(tmp, 'server-default.log') });
  cleanups.push(() => server.stop());
  const customers = await new Api(server.url, keys.private_key).createCustomers(settings.customers, 'load');
  await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
  log(`earn, distinct customers, ${defaultTopology(store)}, 64 connections, ${settings.seconds} s`);
  const spread = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.seconds });
  rows.push({
    scenario: `earn over HTTP, ${fmt(customers.length)} distinct customers, ${defaultTopology(store)}, 64 connections, ${spread.seconds} s`,
    measured: `${fmt(spread.okPerSecond)} earns/s (p50 ${ms(spread.p50)}, p99 ${ms(spread.p99)})${describeErrors(spread)}`,
    target: '—',
    ratio: '—',
    pass: null,
  });
  const single = await hotCustomer(server, keys, dbName, `one hot customer, ${defaultTopology(store)}, 32 connections`);
  rows.push({ ...single.row, target: 'final balance exact', ratio: '—', pass: single.exact });
  await server.stop();
  rows.push(...(await severalProcesses(store, keys, customers, tmp, spread.okPerSecond, () => '—')));
}

/**
 * BENCH_ONLY=soak: row 7 alone. The customers get a history first (BENCH_SOAK_HISTORY earns each,
 * seeded by the bulk path: about what rows 1–3c give them), then the soak runs on a restarted server
 * as in the whole bench, once per set of BENCH_SOAK_NODE_FLAGS.
 */
async function soakOnly(tmp: string): Promise<void> {
  const given = process.env.BENCH_DATABASE;
  const dbName = given ?? (await createDatabase('soak'));
  if (!given) cleanups.push(() => dropDatabase(dbName));
  const store: Store = { databaseUrl: databaseUrl(dbName) };
  const keys = await initStore(store);
  const server = await ServerProcess.start({ store, logFile: path.join(tmp, 'server-postgres.log') });
  cleanups.push(() => server.stop());
  const customers = await new Api(server.url, keys.private_key).createCustomers(settings.customers, 'load');
  await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
  await server.stop();
  // The same history whatever the machine's load: earns seeded by the bulk path (as row 4's).
  const earns = settings.soakHistory;
  const t0 = performance.now();
  await seedHistory(dbName, keys.business_id, customers, earns);
  await quiesceAfterRestart(store, tmp, dbName);
  notes.push(
    `Before the soak: ${fmt(earns)} earns of 1 point on each of the ${fmt(customers.length)} customers, seeded by the bulk path in ${fmt((performance.now() - t0) / 1000, 1)} s ` +
      '(their history, about what rows 1–3c give them in the whole bench), and projected by a server then stopped.',
  );
  const rate = settings.soakRate || 437;
  for (const flags of settings.soakNodeFlags) rows.push(await soak(store, tmp, keys, customers, rate, () => '—', flags));
}

/** A server started until the read models have applied everything in the log, then stopped. */
async function quiesceAfterRestart(store: Store, tmp: string, dbName: string): Promise<void> {
  const server = await ServerProcess.start({ store, logFile: path.join(tmp, 'server-postgres-catch-up.log') });
  try {
    if (!(await waitForProjections(dbName, 240))) throw new Error('the read models did not catch up with the seeded history within 240 s');
  } finally {
    await server.stop();
  }
}

/** Row 4: p50 of sequential earns on a customer with a long history, against a fresh customer's. */
async function longHistory(api: Api, fresh: string, long: string, n: number, caughtUp: boolean): Promise<Row> {
  const seconds = 8;
  const scenario = `earn on a customer with ${fmt(n)} prior events (1 connection, ${seconds} s each)`;
  const target = 'p50 ≤ 1.25 × fresh';
  const balance = await api.balance(long);
  if (!caughtUp || balance !== n) {
    const why = caughtUp ? `the seeded customer's balance reads ${balance}, expected ${n}` : 'the read models did not catch up with the seeded events in 240 s';
    return { scenario, measured: `not measured: ${why}`, target, ratio: '—', pass: false };
  }
  // The first earn on the long customer is its cold load (snapshot + events after it) in a server
  // that has not seen it; it is timed on its own, before the fresh customer warms the path.
  const [firstEarn] = await api.sequentialEarns(long, 120, 1);
  await api.sequentialEarns(fresh, 1); // warm-up
  const freshLatencies = await api.sequentialEarns(fresh, seconds);
  const longLatencies = await api.sequentialEarns(long, seconds);
  const after = await api.balance(long);
  const expected = n + 1 + longLatencies.length;
  const p50Fresh = percentile(freshLatencies, 50);
  const p50Long = percentile(longLatencies, 50);
  const factor = p50Long / p50Fresh;
  return {
    scenario,
    measured:
      `p50 ${ms(p50Long)} vs ${ms(p50Fresh)} fresh = ${fmt(factor, 2)}× (p99 ${ms(percentile(longLatencies, 99))} vs ${ms(percentile(freshLatencies, 99))}); ` +
      `first (cold) earn after the restart ${ms(firstEarn ?? Number.NaN)}; balance ${after === expected ? 'exact' : `OFF: ${after} ≠ ${expected}`}`,
    target,
    ratio: '—',
    pass: factor <= 1.25 && after === expected,
  };
}

/**
 * The bulk path for a long history: the service's own decider decides `n` earns of 1 point on the
 * customer's current state, the service's own event store appends them, 1,000 events per append
 * (so hashes, revisions and the append lock are exactly what the server would have written), and
 * the snapshot store keeps the folded state, as the server does while a stream grows. The server's
 * projections apply the events when it starts, like any commit it has not seen.
 */
async function seedHistory(dbName: string, businessId: string, customerIds: string | string[], n: number): Promise<void> {
  const database = await openDatabase({ databaseUrl: databaseUrl(dbName), poolSize: 2 });
  try {
    const store = new PostgresEventStore(database.db);
    for (const customerId of typeof customerIds === 'string' ? [customerIds] : customerIds) {
      const stream = streams.customer(customerId);
      const loaded = await loadAggregate(store, stream, customerDecider);
      let state = loaded.state;
      let revision = loaded.revision;
      const ctx = { businessId, actor: 'bench-seed', requestId: null, idempotencyKey: null, now: new Date() };
      for (let done = 0; done < n; ) {
        const batch: CustomerEvent[] = [];
        for (let i = 0; i < Math.min(1000, n - done); i++) {
          const decided = customerDecider.decide(earnOnePoint(), state);
          for (const event of decided) state = customerDecider.evolve(state, event);
          batch.push(...decided);
        }
        const result = await store.append([{ stream, expected: revision, events: withMetadata(batch, ctx, newId) }]);
        revision = result.revisions[stream]!;
        done += batch.length;
      }
      // The server snapshots a stream every SNAPSHOT_EVERY events it folds; the latest one is what a
      // cold load reads, so write that one.
      await snapshotStore(database.db).put(stream, revision as number, state);
    }
  } finally {
    await database.close();
  }
}

/** Waits until the log stops growing (for 1 s) and the read models have applied all of it. */
async function quiesce(dbName: string): Promise<void> {
  const last = () =>
    withClient(async (c) => Number((await c.query('select coalesce(max(global_position), 0) as p from events')).rows[0]!.p), dbName);
  const deadline = Date.now() + 60_000;
  for (let previous = await last(); Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await last();
    if (now === previous) break;
    previous = now;
  }
  if (!(await waitForProjections(dbName, 60))) throw new Error('the read models did not catch up within 60 s after the load stopped');
}

let soaks = 0;

/** From the server's /metrics (prom-client's Node figures): V8 heap used and total, and external memory, in MB. */
async function nodeMemoryMb(server: ServerProcess): Promise<{ used: number; total: number; external: number; text: string }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const mb = (name: string) => Number(new RegExp(`^loyalty_nodejs_${name} (\\S+)`, 'm').exec(text)?.[1]) / 2 ** 20;
  return { used: mb('heap_size_used_bytes'), total: mb('heap_size_total_bytes'), external: mb('external_memory_bytes'), text };
}

/**
 * Row 7: half load for BENCH_SOAK_SECONDS on a freshly started server (same database), so the heap
 * left grown by the bursts before does not count as the soak's; RSS (from /proc) and V8 heap used
 * sampled every 5 s.
 */
async function soak(
  store: Store,
  tmp: string,
  keys: Keys,
  customers: string[],
  rate: number,
  ratio: (n: number) => string,
  nodeFlags = settings.soakNodeFlags[0] ?? [],
): Promise<Row> {
  const snapshotFlags = settings.soakSnapshots.length ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${tmp}`] : [];
  if (snapshotFlags.length) settings.keep = true;
  const server = await ServerProcess.start({
    store,
    logFile: path.join(tmp, `server-postgres-soak-${++soaks}.log`), // its own: a start waits for "Listening on" in it
    nodeFlags: [...nodeFlags, ...snapshotFlags],
  });
  cleanups.push(() => server.stop());
  const samples: number[] = [];
  const heap: Array<{ used: number; total: number; external: number }> = [];
  const sample = async () => {
    const none = { used: Number.NaN, total: Number.NaN, external: Number.NaN, text: '' };
    const [rss, node] = await Promise.all([server.rssMb(), nodeMemoryMb(server).catch(() => none)]);
    if (settings.keep) await writeFile(path.join(tmp, `soak-${server.pid}-metrics-${String(samples.length).padStart(2, '0')}.txt`), node.text);
    samples.push(rss);
    heap.push(node);
  };
  await sample();
  log(`soak: ${settings.soakSeconds} s at ${rate.toFixed(0)} earns/s offered, RSS and heap used every 5 s${nodeFlags.length ? ` (server flags ${nodeFlags.join(' ')})` : ''}`);
  const timer = setInterval(() => void sample().catch(() => undefined), 5000);
  const snapshots = settings.soakSnapshots.map((s) =>
    setTimeout(() => {
      log(`soak: heap snapshot at ${s} s (SIGUSR2) into ${tmp}`);
      process.kill(server.pid, 'SIGUSR2');
    }, s * 1000),
  );
  const run = await earnLoad({
    baseUrl: server.url,
    key: keys.private_key,
    customers,
    connections: 64,
    seconds: settings.soakSeconds,
    overallRate: rate,
  }).finally(() => {
    clearInterval(timer);
    for (const t of snapshots) clearTimeout(t);
  });
  await sample();
  const start = samples[0]!;
  const end = samples.at(-1)!;
  const max = Math.max(...samples);
  // RSS saws up and down with garbage collection, so compare peaks, after the first third of the
  // run (the fresh server's heap growing to its working size): a leak raises the peak of the last
  // half of the remaining samples above the peak of the first half.
  const settled = samples.slice(Math.floor(samples.length / 3));
  const half = Math.max(1, Math.floor(settled.length / 2));
  const firstPeak = Math.max(...settled.slice(0, half));
  const lastPeak = Math.max(...settled.slice(half));
  const growth = (lastPeak - firstPeak) / firstPeak;
  await server.stop();
  const which = nodeFlags.length ? ` (node ${nodeFlags.join(' ')})` : '';
  notes.push(`Soak${which} RSS samples (MB, every 5 s): ${samples.map((s) => s.toFixed(0)).join(' ')}.`);
  notes.push(`Soak${which} V8 heap used / total (MB, same instants): ${heap.map((h) => `${h.used.toFixed(0)}/${h.total.toFixed(0)}`).join(' ')}.`);
  notes.push(`Soak${which} external memory (MB, same instants): ${heap.map((h) => h.external.toFixed(0)).join(' ')}.`);
  return {
    scenario:
      `${settings.soakSeconds} s at half load (${fmt(rate)}/s offered) on a restarted server in one process (\`--processes 1\`: its memory is the code's)${nodeFlags.length ? ` (node ${nodeFlags.join(' ')})` : ''}` +
      `${settings.soakSeconds < 300 ? ' (the target is for 300 s: BENCH_SOAK_SECONDS=300)' : ''}`,
    measured:
      `RSS start ${fmt(start)} MB, max ${fmt(max)} MB, end ${fmt(end)} MB (after the first third, peak of the last half vs the first: ${growth >= 0 ? '+' : ''}${fmt(growth * 100, 1)}%); ` +
      `${fmt(run.okPerSecond)} earns/s, p99 ${ms(run.p99)}${describeErrors(run)}`,
    target: 'RSS ≤ 300 MB and flat (after the first third: last-half peak ≤ first-half peak + 10%)',
    ratio: ratio(run.okPerSecond),
    pass: max <= 300 && growth <= 0.1 && run.non2xx === 0 && run.errors === 0,
  };
}

/** Row 8: a second server on an embedded PGlite store (LOYALTY_DATA_DIR, no DATABASE_URL). */
async function embedded(tmp: string, ratio: (n: number) => string): Promise<Row> {
  const store: Store = { dataDir: path.join(tmp, 'pglite') };
  const keys = await initStore(store);
  const server = await ServerProcess.start({ store, logFile: path.join(tmp, 'server-pglite.log') });
  cleanups.push(() => server.stop());
  log(`server (embedded PGlite) pid ${server.pid} at ${server.url}`);
  try {
    const api = new Api(server.url, keys.private_key);
    const customers = await api.createCustomers(200, 'embedded');
    await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
    log(`embedded earn, 200 distinct customers, 64 connections, ${settings.shortSeconds} s`);
    const run = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.shortSeconds });
    return {
      scenario: `embedded PGlite mode, earn, 200 distinct customers, 64 connections, ${run.seconds} s`,
      measured: `${fmt(run.okPerSecond)} earns/s (p50 ${ms(run.p50)}, p99 ${ms(run.p99)})${describeErrors(run)}`,
      target: '≥ 1,000 earns/s',
      ratio: ratio(run.okPerSecond),
      pass: run.okPerSecond >= 1000 && run.non2xx === 0 && run.errors === 0,
    };
  } finally {
    await server.stop();
  }
}

function printReport(machine: string[], ceiling: { tps: number; latencyMs: number | null; seconds: number } | null, totalSeconds: number) {
  const verdict = (pass: boolean | null) => (pass === null ? 'not measured' : pass ? 'PASS' : 'FAIL');
  const lines = [
    '',
    ceiling
      ? `PostgreSQL append ceiling (pgbench, 32 clients, 100,000 streams, ${ceiling.seconds} s): ${fmt(ceiling.tps)} tps, average latency ${ceiling.latencyMs} ms`
      : `PostgreSQL append ceiling: not measured (BENCH_ONLY=${settings.only})`,
    '',
    '| Scenario | Measured | Target | × ceiling | Result |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.scenario} | ${r.measured} | ${r.target} | ${r.ratio} | ${verdict(r.pass)} |`),
    '',
    ...notes.map((n) => `- ${n}`),
    `- Machine: ${machine.join('; ')}.`,
    `- Whole run: ${fmt(totalSeconds)} s.`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

/** BENCH_PROFILE=1: the distinct-customer earn load once more, on a server under `node --cpu-prof`. */
async function profileRun(tmp: string) {
  const dir = path.join(tmp, 'profile');
  await mkdir(dir, { recursive: true });
  const dbName = await createDatabase('profile');
  cleanups.push(() => dropDatabase(dbName));
  const store: Store = { databaseUrl: databaseUrl(dbName) };
  const keys = await initStore(store);
  const server = await ServerProcess.start({
    store,
    logFile: path.join(tmp, 'server-profile.log'),
    nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  cleanups.push(() => server.stop());
  const api = new Api(server.url, keys.private_key);
  const customers = await api.createCustomers(settings.customers, 'profile');
  log(`profile: earn, distinct customers, 64 connections, ${settings.seconds} s, server in one process (\`--processes 1\`) under --cpu-prof`);
  const run = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: settings.seconds });
  await server.stop();
  const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile was written in ${dir}`);
  const summary = await summarizeProfile(path.join(dir, file));
  const pct = (share: number) => `${fmt(share * 100, 1)}%`;
  process.stdout.write(
    [
      '',
      `CPU profile of the server (whole process: start-up, ${fmt(settings.customers)} customer creations, ${settings.seconds} s of earns at ${fmt(run.okPerSecond)}/s):`,
      `busy ${fmt(summary.busyMs / 1000, 1)} s of ${fmt(summary.totalMs / 1000, 1)} s profiled`,
      '',
      'Self time by place:',
      ...summary.places.map((p) => `  ${pct(p.share).padStart(6)}  ${p.name}`),
      '',
      'Top self-time functions:',
      ...summary.functions.map((f) => `  ${pct(f.share).padStart(6)}  ${f.name}`),
      '',
      ...summary.callers.flatMap((c) => [
        `Heaviest paths into ${c.name} (nearest caller first):`,
        ...c.paths.map((p) => `  ${pct(p.share).padStart(6)}  ${p.name}`),
        '',
      ]),
      `(profile: ${path.join(dir, file)}${settings.keep ? '' : ' — set BENCH_KEEP=1 to keep it'})`,
      '',
    ].join('\n'),
  );
}

async function cleanup() {
  for (const name of createdDatabases) cleanups.splice(1, 0, () => dropDatabase(name)); // before the temp dir goes
  while (cleanups.length > 0) {
    const step = cleanups.pop()!;
    try {
      await step();
    } catch (error) {
      log(`cleanup: ${(error as Error).message}`);
    }
  }
}

let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
  log('interrupted: stopping servers, dropping databases');
  void cleanup().finally(() => process.exit(130));
});

try {
  await main();
} catch (error) {
  if (!interrupted) {
    settings.keep = true; // the server logs explain most failures
    log(`FAILED: ${(error as Error).stack ?? String(error)}`);
    process.exitCode = 1;
  }
} finally {
  await cleanup();
}
