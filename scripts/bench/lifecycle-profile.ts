/**
 * The lifecycle scheduler's cost per lot, alone: `tsx scripts/bench/lifecycle-profile.ts [lots]`.
 *
 * The services run in this process on a fresh database (projections on, no HTTP, no earn load);
 * `lots` lots (10 per customer, seeded through the bulk path) get their expiring notices at once,
 * then the injected clock moves past their expiry and the scheduler expires them all, as the
 * lifecycle row's does. What that costs is read from /proc (this process, and the database's
 * backends) from the first claim until the read models include every expiry, so it holds on a
 * busy machine where the row's throughput does not; a V8 CPU profile covers the same span.
 * LIFECYCLE_PROFILE_OUT=file keeps the .cpuprofile. LIFECYCLE_PROFILE_ALLOCATIONS=1 also samples
 * what the span allocates, garbage included (bytes per lot, and by function). With PostgreSQL's
 * `pg_stat_statements` loaded (`shared_preload_libraries`: not on CI, and it slows every statement),
 * LIFECYCLE_PROFILE_STATEMENTS=1 prints the span's statements by their total time.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/services.js';
import { seedLots } from '../../test/support/seed-lots.js';
import { cpuDuring } from './cpu-time.js';
import { startAllocationSampling, stopAllocationSampling } from './allocation-profile.js';
import { summarizeProfile } from './cpu-profile.js';
import { createDatabase, databaseUrl, dropDatabase, waitForProjections, withClient } from './postgres.js';
import { initStore } from './service.js';

const lots = Number(process.argv[2] ?? 20_000);
const HOUR = 3_600_000;

async function main(): Promise<void> {
  const dbName = await createDatabase('lifeprof');
  const url = databaseUrl(dbName);
  let offset = 0;
  const clock = { now: () => new Date(Date.now() + offset) };
  try {
    const keys = await initStore({ databaseUrl: url });
    const services = await createServices({
      config: loadConfig({ ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' }),
      logger: pino({ level: 'warn' }),
      runProjections: true,
      runDispatcher: false,
      runScheduler: false,
      clock,
    });
    try {
      await seedLots(url, keys.business_id, Math.ceil(lots / 10), lots, new Date(Date.now() + HOUR));
      await settle(dbName);
      const notices = await services.scheduler.runUntilIdle(); // notices fall due at once (7 days ahead)
      await settle(dbName);
      offset = 2 * HOUR;
      const statements = process.env.LIFECYCLE_PROFILE_STATEMENTS === '1';
      if (statements) await withClient((c) => c.query('select pg_stat_statements_reset()'), dbName);
      const session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      const allocations = process.env.LIFECYCLE_PROFILE_ALLOCATIONS === '1';
      if (allocations) await startAllocationSampling(session);
      const walBefore = await walStats(dbName);
      const started = performance.now();
      const { result: runs, nodeMs, postgresMs } = await cpuDuring(process.pid, dbName, async () => {
        const runs = await services.scheduler.runUntilIdle();
        await settle(dbName);
        return runs;
      });
      const seconds = (performance.now() - started) / 1000;
      const walAfter = await walStats(dbName);
      const { profile } = await session.post('Profiler.stop');
      const allocated = allocations ? await stopAllocationSampling(session) : null;
      session.disconnect();
      const expired = runs.reduce((n, r) => n + r.work.filter((w) => w.type === 'PointsExpired').length, 0);
      const file = process.env.LIFECYCLE_PROFILE_OUT ?? path.join(os.tmpdir(), `lifecycle-${process.pid}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      const summary = await summarizeProfile(file, 25);
      const perLot = (ms: number) => `${((ms * 1000) / expired).toFixed(1)} µs`;
      const out = [
        `${notices.length} customers noticed first; then ${expired} lots of ${runs.length} customers expired in ${seconds.toFixed(1)} s (${Math.round(expired / seconds)} lots/s, projections included), load average ${os.loadavg()[0]!.toFixed(1)}`,
        `CPU per lot: this process ${perLot(nodeMs)}, PostgreSQL backends ${perLot(postgresMs)}`,
        `WAL per lot (the whole server's, pg_stat_wal): ${((walAfter.bytes - walBefore.bytes) / expired).toFixed(0)} bytes, ${((walAfter.records - walBefore.records) / expired).toFixed(1)} records, ${((walAfter.fpi - walBefore.fpi) / expired).toFixed(2)} full-page images`,
        `profile: busy ${(summary.busyMs / 1000).toFixed(1)} s of ${(summary.totalMs / 1000).toFixed(1)} s (${file})`,
        'Self time by place:',
        ...summary.places.map((p) => `  ${(p.share * 100).toFixed(1).padStart(5)}%  ${p.name}`),
        'Top self-time functions:',
        ...summary.functions.map((f) => `  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`),
        ...summary.callers.flatMap((c) => [`Heaviest paths into ${c.name}:`, ...c.paths.map((p) => `  ${(p.share * 100).toFixed(1).padStart(5)}%  ${p.name}`)]),
      ];
      if (allocated) {
        await writeFile(`${file}.heapprofile`, JSON.stringify(allocated.profile));
        out.push(`Allocated: ${(allocated.totalBytes / expired / 1024).toFixed(1)} KB per lot (sampled, garbage included; ${file}.heapprofile), by function:`);
        out.push(...allocated.functions.map((f) => `  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`));
      }
      if (statements) out.push('Statements by total time:', ...(await topStatements(dbName)));
      process.stdout.write(`${out.join('\n')}\n`);
      const check = await withClient(
        async (c) => (await c.query<{ n: string; lots: string }>(`select count(*) n, count(distinct l->>'transaction_id') lots from events e cross join lateral jsonb_array_elements(e.data->'lots') l where e.type = 'PointsExpired'`)).rows[0]!,
        dbName,
      );
      if (Number(check.n) !== lots || Number(check.lots) !== lots) throw new Error(`expected ${lots} expiries, each lot once: ${check.n} lot expiries, ${check.lots} lots`);
    } finally {
      await services.close();
    }
  } finally {
    await dropDatabase(dbName);
  }
}

/** The span's statements from `pg_stat_statements`, by their total time. */
async function topStatements(dbName: string): Promise<string[]> {
  const rows = await withClient(
    async (c) =>
      (
        await c.query<{ calls: string; rows: string; ms: number; query: string }>(
          `select calls, rows, total_exec_time as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
           from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
           order by total_exec_time desc limit 12`,
        )
      ).rows,
    dbName,
  );
  return rows.map((r) => `  ${r.ms.toFixed(0).padStart(6)} ms  ${String(r.calls).padStart(6)} calls  ${String(r.rows).padStart(7)} rows  ${r.query}`);
}

/** The server's WAL written so far (pg_stat_wal: every database's, so run this on a quiet server). */
async function walStats(dbName: string): Promise<{ bytes: number; records: number; fpi: number }> {
  const row = await withClient(async (c) => (await c.query<{ bytes: string; records: string; fpi: string }>('select wal_bytes::text as bytes, wal_records::text as records, wal_fpi::text as fpi from pg_stat_wal')).rows[0]!, dbName);
  return { bytes: Number(row.bytes), records: Number(row.records), fpi: Number(row.fpi) };
}

async function settle(dbName: string): Promise<void> {
  if (!(await waitForProjections(dbName, 600))) throw new Error('the read models did not catch up');
}

await main();
