import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createDatabase, databaseUrl, dropDatabase, withClient } from './postgres.js';
import { cliCommand, initStore, REPO_ROOT, type Store } from './service.js';

export interface ExportRun {
  lines: number;
  seconds: number;
  linesPerSecond: number;
  bytes: number;
  /** The process's peak resident memory (VmHWM), MB. */
  peakRssMb: number;
}

export interface ExportMeasurement {
  customers: number;
  seedSeconds: number;
  ledger: ExportRun;
  /** A small export on the same store: what the process needs whatever the size. */
  small: ExportRun;
  /** The ledger file holds a header and exactly `lines` rows, and the command said so. */
  exact: boolean;
}

/** The V8 heap the ledger export runs under: were its memory to grow with the rows, it would die. */
export const EXPORT_HEAP_MB = 128;

/**
 * The export row: a fresh database (`loyalty init`) whose read models get `lines` ledger lines over
 * 10,000 customers, written by SQL straight into the tables (the export reads only the read models,
 * so how they were filled does not matter to it; seeding them through the log would cost minutes
 * of a shared machine), left without ANALYZE as after a bulk load. Then `loyalty export ledger
 * --format csv --output FILE`, timed as the real CLI process (start-up and count included), its
 * heap capped at EXPORT_HEAP_MB and its peak memory sampled, its file counted; and the customers'
 * export beside it for the memory of a small export.
 */
export async function measureExport(lines: number, dir: string, log: (message: string) => void): Promise<ExportMeasurement> {
  const dbName = await createDatabase('export');
  try {
    const store: Store = { databaseUrl: databaseUrl(dbName) };
    const keys = await initStore(store);
    const customers = 10_000;
    log(`export: writing ${lines.toLocaleString('en-US')} ledger lines over ${customers.toLocaleString('en-US')} customers into the read models`);
    const t0 = performance.now();
    await seedReadModels(dbName, keys.business_id, customers, lines);
    const seedSeconds = (performance.now() - t0) / 1000;
    log(`export: seeded in ${seedSeconds.toFixed(1)} s; exporting the ledger`);
    const ledgerFile = path.join(dir, 'ledger.csv');
    const ledger = await timedExport(store, ['ledger', '--business', keys.business_id, '--format', 'csv', '--output', ledgerFile], EXPORT_HEAP_MB);
    const small = await timedExport(store, ['customers', '--business', keys.business_id, '--format', 'csv', '--output', path.join(dir, 'customers.csv')]);
    const counted = await countLines(ledgerFile);
    return { customers, seedSeconds, ledger, small, exact: counted === lines + 1 && ledger.lines === lines };
  } finally {
    await dropDatabase(dbName);
  }
}

/** Customers and earns with running balances, one a second from 2026-01-01, as the projector writes them. */
async function seedReadModels(dbName: string, businessId: string, customers: number, lines: number): Promise<void> {
  await withClient(async (c) => {
    await c.query(
      `insert into customers (id, business_id, email, email_lower, metadata, points_balance, lifetime_earned, lifetime_redeemed, created_at, updated_at)
       select 'cust_export' || lpad(g::text, 12, '0'), $1, 'shopper-' || g || '@example.com', 'shopper-' || g || '@example.com', '{}'::jsonb, 0, 0, 0,
              timestamptz '2026-01-01T00:00:00Z', timestamptz '2026-01-01T00:00:00Z'
         from generate_series(1, $2::int) g`,
      [businessId, customers],
    );
    await c.query(
      `insert into ledger_entries (id, business_id, customer_id, type, amount, balance, description, reference, metadata, created_at)
       select 'txn_export' || lpad(g::text, 12, '0'), $1, 'cust_export' || lpad((1 + g % $2::int)::text, 12, '0'), 'earn', 1 + g % 500,
              (g / $2::int + 1) * 250, 'Order #' || g, 'order-' || g, jsonb_build_object('store', 'shop-' || g % 20),
              timestamptz '2026-01-01T00:00:00Z' + g * interval '1 second'
         from generate_series(1, $3::int) g`,
      [businessId, customers, lines],
    );
  }, dbName);
}

/** Runs `loyalty export ARGS…` (its V8 heap capped at `heapMb` if given) and samples its peak memory every 50 ms until it exits. */
async function timedExport(store: Store, args: string[], heapMb?: number): Promise<ExportRun> {
  const [command, ...prefix] = cliCommand();
  const started = performance.now();
  const child = spawn(command!, [...(heapMb ? [`--max-old-space-size=${heapMb}`] : []), ...prefix, 'export', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: 'databaseUrl' in store ? store.databaseUrl : '', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  let peakKb = 0;
  const sample = setInterval(() => {
    readFile(`/proc/${child.pid}/status`, 'utf8').then(
      (status) => (peakKb = Math.max(peakKb, Number(status.match(/VmHWM:\s+(\d+)/)?.[1] ?? 0))),
      () => {},
    );
  }, 50);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(sample);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`loyalty export ${args.join(' ')} exited ${code}:\n${stderr}`);
  const written = Number(stderr.match(/Exported (\d+) /)?.[1] ?? NaN);
  const output = args[args.indexOf('--output') + 1]!;
  return { lines: written, seconds, linesPerSecond: written / seconds, bytes: (await stat(output)).size, peakRssMb: peakKb / 1024 };
}

/** Line breaks in a file, read as a stream (the file may be large). */
async function countLines(file: string): Promise<number> {
  let n = 0;
  for await (const chunk of createReadStream(file)) {
    for (let at = (chunk as Buffer).indexOf(10); at !== -1; at = (chunk as Buffer).indexOf(10, at + 1)) n++;
  }
  return n;
}
