/**
 * The bench's half-rate earn row alone, to study its tail: 1,000 customers, 64 connections, open
 * loop at a given rate, on `serve --processes 1` (PROBE_PROCESSES: another count, or `default`:
 * the topology `serve` picks), with the server's garbage-collection pauses (of every process of
 * it, when it serves from several: the children inherit `--trace-gc` and the log).
 * Usage: tsx scripts/bench/half-rate.ts [rate=960] [seconds=20]; PROBE_NODE_FLAGS='--flag …' adds
 * node flags to the server (`--trace-gc` is always on: the pauses are read from its log);
 * PROBE_WARMUP_SECONDS (5) is the full-speed warm-up before it (the bench's row 1 is 3 + 20 s).
 */
import { readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Api, earnLoad } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const rate = Number(process.argv[2] ?? 960);
const seconds = Number(process.argv[3] ?? 20);
const warmupSeconds = Number(process.env.PROBE_WARMUP_SECONDS ?? 5);

async function main() {
  await buildService();
  const db = await createDatabase('halfrate');
  const logFile = path.join(os.tmpdir(), `halfrate-${db}.log`);
  try {
    const store = { databaseUrl: databaseUrl(db) };
    const keys = await initStore(store);
    const nodeFlags = ['--trace-gc', ...(process.env.PROBE_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])];
    const processes = process.env.PROBE_PROCESSES === 'default' ? 'default' : Number(process.env.PROBE_PROCESSES ?? 1);
    const server = await ServerProcess.start({ store, processes, nodeFlags, logFile });
    const api = new Api(server.url, keys.private_key);
    const customers = await api.createCustomers(1000, 'half');
    await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: warmupSeconds }); // warm-up, at full speed
    const from = statSync(logFile).size;
    const result = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds, overallRate: rate });
    // `--trace-gc` lines: "... Scavenge 12.1 (20.3) -> 8.2 (21.3) MB, 3.4 / 0.0 ms ..." (the pause, then the time on helper threads).
    const byKind = new Map<string, number[]>();
    for (const line of readFileSync(logFile, 'utf8').slice(from).split('\n')) {
      const m = /(Scavenge|Mark-Compact|Mark-sweep).*? ([\d.]+) \/ [\d.]+ ms/.exec(line);
      if (!m) continue;
      const pauses = byKind.get(m[1]!) ?? [];
      pauses.push(Number(m[2]));
      byKind.set(m[1]!, pauses);
    }
    console.log(`rate ${rate}/s offered: ${result.okPerSecond.toFixed(0)}/s answered, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`);
    for (const [kind, pauses] of byKind) {
      const sorted = [...pauses].sort((a, b) => a - b);
      const total = pauses.reduce((a, b) => a + b, 0);
      console.log(`  ${kind}: ${pauses.length} pauses, ${total.toFixed(0)} ms in all, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`);
    }
    await server.stop();
  } finally {
    await dropDatabase(db);
  }
}

await main();
