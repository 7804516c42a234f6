import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { streams } from '../../src/events/streams.js';
import { seedLots } from '../../test/support/seed-lots.js';
import { cpuDuring } from './cpu-time.js';
import { Api, earnLoad } from './load.js';
import { createDatabase, databaseUrl, dropDatabase, waitForProjections, withClient } from './postgres.js';
import { initStore, ServerProcess } from './service.js';

/** Lots per seeded customer: 10,000 customers × 10 lots = 100,000 lots. */
const LOTS_PER_CUSTOMER = 10;
/** How long before the due instant the earn load starts. */
const LOAD_AHEAD_MS = 10_000;

export interface LifecycleMeasurement {
  lots: number;
  customers: number;
  /** Lots expired per second, from the due instant (or the moment the index held them all, if later) to the last expiry. */
  expiredPerSecond: number;
  expirySeconds: number;
  /** Whether every lot expired exactly once (named by one PointsExpired, none twice). */
  exactlyOnce: boolean;
  /** Earns/s of the same load before the expiry run, and while it ran (earns recorded in its window). */
  earnsBefore: number;
  earnsDuring: number;
  /**
   * Earns/s of the same load after the last expiry, when it ran on for 5 s or more: a control at
   * nearly the same minute and on the same heap, against which `earnsBefore` tells the machine's
   * or the process's drift from the expiry's own cost. Null when the load ended sooner.
   */
  earnsAfter: number | null;
  /** How late the first expiry was after the due instant. */
  firstLateMs: number;
  /**
   * CPU (from /proc: the server's process and the database's backends) per answered earn of the
   * baseline, and per expired lot: what the expiry window used beyond its earns at the baseline's
   * cost each. Holds on a loaded machine, where the rates above follow the load.
   */
  cpu: { perEarn: { nodeMs: number; postgresMs: number; mainThreadMs: number }; perLot: { nodeUs: number; postgresUs: number; mainThreadUs: number } };
}

/**
 * The lifecycle row (CONTRACT.md §13): a server on a fresh database runs a spread earn load
 * (the baseline), then `lots` lots of other customers — seeded through the bulk path with one
 * `expires_at` a little ahead — fall due at once while the same earn load goes on. The expiry rate
 * and the earns' rate in that window are read back from the log (recorded_at of the events), so
 * they measure what was written, not what a client saw.
 */
export async function measureLifecycle(
  tmp: string,
  options: { lots: number; loadCustomers: number; seconds: number },
  log: (message: string) => void,
): Promise<LifecycleMeasurement> {
  const dbName = await createDatabase('lifecycle');
  const store = { databaseUrl: databaseUrl(dbName) };
  let server: ServerProcess | null = null;
  try {
    const keys = await initStore(store);
    const started = await ServerProcess.start({ store, processes: 'default', logFile: path.join(tmp, 'server-lifecycle.log') });
    server = started;
    const api = new Api(server.url, keys.private_key);
    const customers = await api.createCustomers(options.loadCustomers, 'lifecycle');
    await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
    log(`lifecycle: baseline earns, ${options.seconds} s`);
    const httpPid = started.httpPid();
    const baseline = await cpuDuring(started.pid, dbName, () => earnLoad({ baseUrl: started.url, key: keys.private_key, customers, connections: 64, seconds: options.seconds }), httpPid);
    const before = baseline.result;
    const perEarn = {
      nodeMs: baseline.nodeMs / Math.max(1, before.ok),
      postgresMs: baseline.postgresMs / Math.max(1, before.ok),
      mainThreadMs: baseline.mainThreadMs / Math.max(1, before.ok),
    };

    const lotCustomers = Math.ceil(options.lots / LOTS_PER_CUSTOMER);
    const seedStarted = performance.now();
    // Due after seeding and projecting (on a quiet machine about 10 s for 100,000 lots; a loaded one
    // took 64 s), so that the index is complete when they fall due; the earn load starts a few
    // seconds before (as a service's load runs on when its due work comes: the scheduler measures it).
    const dueAt = new Date(Date.now() + 30_000 + options.lots * 0.9);
    log(`lifecycle: seeding ${options.lots.toLocaleString('en-US')} lots over ${lotCustomers.toLocaleString('en-US')} customers, all expiring at ${dueAt.toISOString()}`);
    await seedLots(databaseUrl(dbName), keys.business_id, lotCustomers, options.lots, dueAt);
    if (!(await waitForProjections(dbName, 300))) throw new Error('the read models did not catch up with the seeded lots within 300 s');
    // When the index held every seeded customer: the rates below count from then (or from the due instant, if later).
    const indexed = new Date();
    log(`lifecycle: seeded and projected in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${Math.max(0, (dueAt.getTime() - Date.now()) / 1000).toFixed(1)} s before they are due`);

    const startLoadIn = dueAt.getTime() - Date.now() - LOAD_AHEAD_MS;
    if (startLoadIn > 0) await new Promise((r) => setTimeout(r, startLoadIn));
    const loadStarted = new Date();
    const during = earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: options.seconds + 40 });
    const windowStarted = new Date();
    const { result: expired, nodeMs, postgresMs, mainThreadMs } = await cpuDuring(started.pid, dbName, () => waitForExpiries(dbName, options.lots, 600), httpPid);
    const windowEnded = new Date();
    const duringResult = await during;
    const loadEnded = new Date(loadStarted.getTime() + duringResult.seconds * 1000);

    const from = new Date(Math.max(dueAt.getTime(), indexed.getTime()));
    const window = await withClient(async (c) => {
      const { rows } = await c.query<{ first: Date; last: Date; n: string; lots: string; counted: string }>(
        `select min(e.recorded_at) as first, max(e.recorded_at) as last, count(*) as n, count(distinct l->>'transaction_id') as lots,
                count(*) filter (where e.recorded_at >= $1) as counted
           from events e cross join lateral jsonb_array_elements(e.data->'lots') l where e.type = 'PointsExpired'`,
        [from],
      );
      const w = rows[0]!;
      // Earns while both ran: the load may stop before the last expiry, or go on after it.
      const overlap = { from: new Date(Math.max(from.getTime(), loadStarted.getTime())), to: new Date(Math.min(new Date(w.last).getTime(), loadEnded.getTime())) };
      const earns = await c.query<{ n: string }>(
        `select count(*) as n from events
          where type = 'PointsEarned' and recorded_at >= $1 and recorded_at <= $2 and stream_id = any($3)`,
        [overlap.from, overlap.to, customers.map((id) => streams.customer(id))],
      );
      const overlapSeconds = Math.max(0.001, (overlap.to.getTime() - overlap.from.getTime()) / 1000);
      const inWindow = await c.query<{ n: string }>(`select count(*) as n from events where type = 'PointsEarned' and recorded_at >= $1 and recorded_at <= $2 and stream_id = any($3)`, [
        windowStarted,
        windowEnded,
        customers.map((id) => streams.customer(id)),
      ]);
      // The control: from a second after the last expiry (its projection done) to a second before the load's end.
      const after = { from: new Date(new Date(w.last).getTime() + 1000), to: new Date(loadEnded.getTime() - 1000) };
      const afterSeconds = (after.to.getTime() - after.from.getTime()) / 1000;
      const earnsAfter =
        afterSeconds < 5
          ? null
          : Number(
              (await c.query<{ n: string }>(`select count(*) as n from events where type = 'PointsEarned' and recorded_at >= $1 and recorded_at <= $2 and stream_id = any($3)`, [
                after.from,
                after.to,
                customers.map((id) => streams.customer(id)),
              ])).rows[0]!.n,
            ) / afterSeconds;
      return {
        earnsAfter,
        earnsInWindow: Number(inWindow.rows[0]!.n), first: new Date(w.first), last: new Date(w.last), n: Number(w.n), lots: Number(w.lots), counted: Number(w.counted), earnsPerSecond: Number(earns.rows[0]!.n) / overlapSeconds };
    }, dbName);
    const expirySeconds = (window.last.getTime() - from.getTime()) / 1000;
    return {
      lots: expired,
      customers: lotCustomers,
      expiredPerSecond: window.counted / expirySeconds,
      expirySeconds,
      exactlyOnce: window.n === options.lots && window.lots === options.lots,
      earnsBefore: before.okPerSecond,
      earnsDuring: window.earnsPerSecond,
      earnsAfter: window.earnsAfter,
      firstLateMs: window.first.getTime() - dueAt.getTime(),
      cpu: {
        perEarn,
        perLot: {
          nodeUs: ((nodeMs - window.earnsInWindow * perEarn.nodeMs) * 1000) / options.lots,
          postgresUs: ((postgresMs - window.earnsInWindow * perEarn.postgresMs) * 1000) / options.lots,
          mainThreadUs: ((mainThreadMs - window.earnsInWindow * perEarn.mainThreadMs) * 1000) / options.lots,
        },
      },
    };
  } finally {
    await server?.stop();
    await dropDatabase(dbName);
  }
}

/**
 * Waits until `lots` expiries are in the log; how many there were at the end. Each look counts only
 * the events after the last one it saw (a range of the primary key): counting the whole log by
 * type every 250 ms is a sequential scan that, at 300,000 events, took a core of its own and was
 * charged to the lots.
 */
async function waitForExpiries(dbName: string, lots: number, timeoutSeconds: number): Promise<number> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return withClient(async (c) => {
    // Planned for the whole log's tail (a generic estimate of hundreds of thousands of rows), the
    // poll started two parallel workers every 250 ms: about 12 ms of the server's CPU a poll,
    // taken from the row it measures. It reads a few hundred rows: one backend is plenty.
    await c.query('set max_parallel_workers_per_gather = 0');
    let seen = 0;
    let after = '0';
    for (;;) {
      const { rows } = await c.query<{ n: string; last: string | null }>(
        `select coalesce(sum(jsonb_array_length(data->'lots')) filter (where type = 'PointsExpired'), 0) as n, max(global_position)::text as last
           from events where global_position > $1`,
        [after],
      );
      seen += Number(rows[0]!.n);
      after = rows[0]!.last ?? after;
      if (seen >= lots || Date.now() > deadline) return seen;
      await new Promise((r) => setTimeout(r, 250));
    }
  }, dbName);
}
