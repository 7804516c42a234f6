/**
 * Instructions per request, for changes too small for a noisy machine's clock:
 * `tsx scripts/bench/instructions-per-request.ts [healthz|customer|summary] [rounds=2] [checkout …]`.
 *
 * Each checkout's server, built already (`npm run build`), runs as `serve --processes 1` (default: this checkout) under
 * `valgrind --tool=callgrind` on a fresh database, answers WARMUP requests (autocannon, 8
 * connections) uninstrumented so that V8 has compiled its hot code, then REQUESTS instrumented
 * ones; the main thread's instructions divided by REQUESTS are printed. The other threads (V8's
 * compiler, the collector's helpers) vary with when they happen to run and are left out. Rounds go
 * A B … A B, so drift shows as disagreement between a checkout's own rounds (1–2% between runs of
 * one build here; about one run in eight is off by a tenth: run at least two). Instruction counts
 * do not depend on what else the machine is doing, only the time each round takes does (minutes).
 * Needs valgrind (Debian's package) and the local PostgreSQL. WARMUP and REQUESTS (6,000 and 4,000)
 * may be set in the environment; KEEP=1 keeps the temp dir (callgrind's files, the servers' logs).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Api } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { initStore, REPO_ROOT, ServerProcess } from './service.js';

const kind = (process.argv[2] ?? 'customer') as 'healthz' | 'customer' | 'summary';
const rounds = Number(process.argv[3] ?? 2);
const roots = process.argv.length > 4 ? process.argv.slice(4).map((root) => path.resolve(root)) : [REPO_ROOT];
const warmup = Number(process.env.WARMUP ?? 6_000);
const requests = Number(process.env.REQUESTS ?? 4_000);

async function load(url: string, key: string, amount: number): Promise<void> {
  const result = await autocannon({ url, connections: 8, amount, headers: { 'x-api-key': key } });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${failed} of ${amount} requests to ${url} failed`);
}

async function measure(root: string, tmp: string, label: string): Promise<number> {
  const dbName = await createDatabase('instructions');
  const outFile = path.join(tmp, `callgrind.${label}`);
  // Where valgrind and callgrind_control meet: valgrind names its pipes after its USER and HOST, and
  // the server runs with HOST=127.0.0.1, so callgrind_control is given the same (`control`).
  const vgdb = path.join(tmp, 'vgdb');
  const store = { databaseUrl: databaseUrl(dbName) };
  let server: ServerProcess | null = null;
  try {
    const keys = await initStore(store, root);
    server = await ServerProcess.start({
      store,
      root,
      logFile: path.join(tmp, `server.${label}.log`),
      wrapper: ['valgrind', '--tool=callgrind', '--separate-threads=yes', '--instr-atstart=no', `--callgrind-out-file=${outFile}`, `--vgdb-prefix=${vgdb}`],
    });
    const api = new Api(server.url, keys.private_key);
    const customer = (await api.expect<{ id: string }>(201, 'POST', '/api/v1/customers', { email: `${label}@bench.example` })).id;
    const url = `${server.url}${kind === 'healthz' ? '/healthz' : `/api/v1/customers/${customer}${kind === 'summary' ? '/summary' : ''}`}`;
    await load(url, keys.private_key, warmup);
    const pid = String(server.pid);
    const control = (...args: string[]) => execFileSync('callgrind_control', [`--vgdb-prefix=${vgdb}`, ...args, pid], { stdio: 'ignore', env: { ...process.env, HOST: '127.0.0.1' } });
    control('-i', 'on');
    await load(url, keys.private_key, requests);
    control('-i', 'off');
    control('-d');
    await server.stop();
    server = null;
    // The dump writes a file per thread, `<out>.<dump>-<thread>`, the main thread's 01.
    const mainThread = readdirSync(tmp).find((name) => name === `callgrind.${label}.1-01`);
    if (!mainThread) throw new Error(`no callgrind dump of the main thread among ${readdirSync(tmp).join(', ')}`);
    const totals = /^totals:\s+(\d+)/m.exec(readFileSync(path.join(tmp, mainThread), 'utf8'));
    if (!totals) throw new Error(`no totals line in ${mainThread}`);
    return Number(totals[1]) / requests;
  } finally {
    await server?.stop();
    await dropDatabase(dbName);
  }
}

async function main(): Promise<void> {
  const tmp = path.join(os.tmpdir(), `instructions-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const results = new Map<string, number[]>(roots.map((root) => [root, []]));
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const [i, root] of roots.entries()) {
        const perRequest = await measure(root, tmp, `r${round}c${i}`);
        results.get(root)!.push(perRequest);
        console.error(`round ${round}, ${root}: ${Math.round(perRequest).toLocaleString('en-US')} main-thread instructions per ${kind}`);
      }
    }
  } finally {
    if (!process.env.KEEP) rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`Main-thread instructions per ${kind} request (${warmup} warm-up, ${requests} counted, \`serve --processes 1\` under callgrind):`);
  for (const [root, values] of results) console.log(`  ${root}: ${values.map((v) => Math.round(v).toLocaleString('en-US')).join(', ')}`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
