/**
 * Row 8 alone (embedded PGlite earn: 200 customers, 64 connections), any number of times, each on a
 * fresh data directory: `tsx scripts/bench/pglite-probe.ts [seconds=15] [runs=1]`. PROBE_PROF=dir
 * writes the server's CPU profile there; prints earns/s and the server's CPU per earn (from /proc).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cpuMs } from './cpu-time.js';
import { Api, earnLoad } from './load.js';
import { buildService, initStore, ServerProcess } from './service.js';

const seconds = Number(process.argv[2] ?? 15);
const runs = Number(process.argv[3] ?? 1);
await buildService();
for (let run = 1; run <= runs; run++) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pglite-probe-'));
  try {
    const store = { dataDir: path.join(dir, 'data') };
    const keys = await initStore(store);
    const nodeFlags = process.env.PROBE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROBE_PROF}`] : [];
    const server = await ServerProcess.start({ store, nodeFlags, logFile: path.join(dir, 'server.log') });
    try {
      const customers = await new Api(server.url, keys.private_key).createCustomers(200, 'embedded');
      await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds: 3 });
      const before = cpuMs(server.pid);
      const result = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections: 64, seconds });
      const used = cpuMs(server.pid) - before;
      console.log(
        `run ${run}: ${result.okPerSecond.toFixed(0)} earns/s (p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}); ` +
          `server ${((used * 1000) / Math.max(1, result.ok)).toFixed(0)} µs per earn; load ${os.loadavg()[0]!.toFixed(1)}`,
      );
    } finally {
      await server.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
