/**
 * What one earn allocates in the server, garbage included: the services and the HTTP app run in
 * this process (`serve --processes 1`: projections in the same process, logs at info into a file
 * as the bench's server writes them), a child process drives spread earns at them over HTTP, and
 * V8's sampling heap profiler (objects later collected kept) covers the measured span.
 *   tsx scripts/bench/earn-allocations.ts [seconds=10] [customers=1000]
 * prints KB allocated per earn and the top allocating functions; the `.heapprofile` (DevTools
 * opens it) is written beside the temporary log.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createHttpServer } from '../../src/http/http-server.js';
import { createServices } from '../../src/services.js';
import { startAllocationSampling, stopAllocationSampling } from './allocation-profile.js';
import { Api, earnLoad } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { initStore } from './service.js';

if (process.argv[2] === 'load') {
  // The child: `load <url> <key> <seconds> <customer ids, comma-separated>`; prints the load's result as JSON.
  const [, , , baseUrl, key, seconds, ids] = process.argv;
  const result = await earnLoad({ baseUrl: baseUrl!, key: key!, connections: 64, seconds: Number(seconds), customers: ids!.split(',') });
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
}

const seconds = Number(process.argv[2] ?? 10);
const customerCount = Number(process.argv[3] ?? 1000);

function runLoad(url: string, key: string, secs: number, customers: string[]): Promise<{ ok: number; okPerSecond: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.resolve('scripts/bench/earn-allocations.ts'), 'load', url, key, String(secs), customers.join(',')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited ${code}`))));
  });
}

const dbName = await createDatabase('earnalloc');
const url = databaseUrl(dbName);
const logFile = path.join(os.tmpdir(), `earn-allocations-${process.pid}.log`);
try {
  const keys = await initStore({ databaseUrl: url });
  const logger = pino({ level: 'info' }, pino.destination(logFile));
  const services = await createServices({ config: loadConfig({ ...process.env, DATABASE_URL: url, LOYALTY_RATE_LIMIT_RPS: '0' }), logger, runProjections: true, runDispatcher: true, runScheduler: false });
  const server = createHttpServer(createApp(services).fetch, { logger });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const customers = await new Api(base, keys.private_key).createCustomers(customerCount, 'alloc');
    await runLoad(base, keys.private_key, 3, customers); // warm-up
    const session = new Session();
    session.connect();
    await startAllocationSampling(session);
    const load = await runLoad(base, keys.private_key, seconds, customers);
    const allocated = await stopAllocationSampling(session, 40);
    session.disconnect();
    const file = `${logFile}.heapprofile`;
    await writeFile(file, JSON.stringify(allocated.profile));
    console.log(`${load.ok} earns (${load.okPerSecond.toFixed(0)}/s, ${load.non2xx} non-2xx); ${(allocated.totalBytes / load.ok / 1024).toFixed(1)} KB allocated per earn (sampled, garbage included; ${file})`);
    for (const f of allocated.functions) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${((f.share * allocated.totalBytes) / load.ok / 1024).toFixed(2).padStart(6)} KB  ${f.name}`);
  } finally {
    server.closeAllConnections();
    server.close();
    await services.close();
  }
} finally {
  await dropDatabase(dbName);
}
