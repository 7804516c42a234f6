/**
 * One hot customer under a program whose points expire: does an earn cost more as the customer's
 * lots pile up? Usage: `tsx scripts/bench/hot-expiring.ts [windows=4] [seconds=10] [CLI_ROOT]`.
 *
 * Starts the default `serve` (from CLI_ROOT's dist/, built here; by default this checkout, so
 * another checkout's build can be measured beside it) on a fresh database, sets
 * `points_expiry_days` to 365, and sends one customer earns of 1 point over 32 connections in
 * back-to-back windows: each earn makes a lot that expires, so every window starts with more. It
 * prints each window's earns per second and p99, and the lots the customer holds after it.
 * HOT_EXPIRING_ROLLING=1 also qualifies tiers over a rolling year, with one tier of 10 points the
 * customer reaches at once: every earn then also counts the window's credits and plans the next
 * downgrade.
 */
import os from 'node:os';
import path from 'node:path';
import { Api, earnLoad } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { buildService, initStore, REPO_ROOT, ServerProcess } from './service.js';

const windows = Number(process.argv[2] ?? 4);
const seconds = Number(process.argv[3] ?? 10);
const root = process.argv[4] ? path.resolve(process.argv[4]) : REPO_ROOT;

async function main(): Promise<void> {
  await buildService(root);
  const db = await createDatabase('hotexp');
  let server: ServerProcess | null = null;
  try {
    const store = { databaseUrl: databaseUrl(db) };
    const keys = await initStore(store, root);
    server = await ServerProcess.start({ store, processes: 'default', root, logFile: path.join(os.tmpdir(), `hot-expiring-${db}.log`) });
    const api = new Api(server.url, keys.private_key);
    const rolling = process.env.HOT_EXPIRING_ROLLING === '1';
    await api.expect(200, 'PATCH', '/api/v1/program', { points_expiry_days: 365, ...(rolling ? { tier_qualification: { mode: 'rolling', window_days: 365 } } : {}) });
    if (rolling) await api.expect(201, 'POST', '/api/v1/tiers', { name: 'Member', points_threshold: 10, multiplier: 1 });
    const [customer] = await api.createCustomers(1, 'hot-expiring');
    for (let w = 1; w <= windows; w++) {
      const result = await earnLoad({ baseUrl: server.url, key: keys.private_key, customers: [customer!], connections: 32, seconds });
      const summary = await api.expect<{ points: { balance: number } }>(200, 'GET', `/api/v1/customers/${customer}/summary`);
      process.stdout.write(
        `window ${w}: ${Math.round(result.okPerSecond)} earns/s, p99 ${result.p99} ms, ${result.non2xx} not 2xx; the customer holds ${summary.points.balance} lots that expire\n`,
      );
    }
  } finally {
    await server?.stop();
    await dropDatabase(db);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
