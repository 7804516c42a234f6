/**
 * CPU time per answered request, by process, for one hot customer (or spread customers) on
 * `serve --processes N`: robust on a busy machine where throughput is not. Usage:
 *   tsx scripts/bench/cpu-per-earn.ts [processes=1|default] [requests=4000] [customers=1] [earn|summary|customer|healthz]
 * (`default`: the default `serve`, with no --processes: on PostgreSQL, an HTTP process and a workers process.)
 * The GET kinds read customers that earned during the warm-up; `healthz` is the floor: a request
 * that passes no middleware and touches no database. PROBE_PATH=/some/path GETs that path instead
 * (any kind but earn). PROBE_PROF=dir writes each process's CPU profile there (`node --cpu-prof`);
 * PROBE_NODE_FLAGS='--flag …' starts the server with more node flags. PROBE_PG_LOG=/path/to/the/server's/log
 * counts the statements the database ran per request in the measured window (it sets `log_statement
 * = all` on the probe's own database, and reads that log: a local server only). PROBE_WARMUP=n makes the
 * warm-up n earns (default: twice the customers, at least 500): history per customer, for reads that grow with it.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { descendants } from '../../test/support/process-tree.js';
import { backendPids, cpuMs } from './cpu-time.js';
import { Api } from './load.js';
import { createDatabase, databaseUrl, dropDatabase, withClient } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const processes = process.argv[2] === 'default' ? ('default' as const) : Number(process.argv[2] ?? 1);
const requests = Number(process.argv[3] ?? 4000);
const customerCount = Number(process.argv[4] ?? 1);
/** PROBE_IDEMPOTENCY=1: every earn carries an Idempotency-Key of its own, as careful clients send. */
const idempotencyKeys = process.env.PROBE_IDEMPOTENCY === '1';
const kind = (process.argv[5] ?? 'earn') as 'earn' | 'summary' | 'customer' | 'healthz';
if (!['earn', 'summary', 'customer', 'healthz'].includes(kind)) throw new Error(`unknown kind ${kind}: earn, summary, customer or healthz`);
async function main() {
  await buildService();
  const db = await createDatabase('cpuprobe');
  const tmp = os.tmpdir();
  try {
    const store = { databaseUrl: databaseUrl(db) };
    const keys = await initStore(store);
    const pgLog = process.env.PROBE_PG_LOG;
    if (pgLog) await withClient((c) => c.query(`alter database "${db}" set log_statement = 'all'`));
    const nodeFlags = [...(process.env.PROBE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROBE_PROF}`] : []), ...(process.env.PROBE_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])];
    const server = await ServerProcess.start({ store, processes, nodeFlags, logFile: path.join(tmp, `cpuprobe-${db}.log`) });
    const api = new Api(server.url, keys.private_key);
    const customers = await api.createCustomers(customerCount, 'probe');
    const earnPaths = customers.map((id) => `/api/v1/customers/${id}/points/transaction`);
    const readPaths = process.env.PROBE_PATH ? [process.env.PROBE_PATH] : kind === 'healthz' ? ['/healthz'] : customers.map((id) => `/api/v1/customers/${id}${kind === 'summary' ? '/summary' : ''}`);
    const load = (amount: number, read: boolean) => {
      let next = 0;
      const paths = read ? readPaths : earnPaths;
      const request = read ? { method: 'GET' as const } : { method: 'POST' as const, body: JSON.stringify({ type: 'earn', amount: 1 }) };
      return autocannon({
        url: server.url,
        connections: read ? 64 : 32,
        amount,
        headers: { 'x-api-key': keys.private_key, 'content-type': 'application/json' },
        requests: [
          {
            ...request,
            setupRequest: (r) => ({
              ...r,
              path: paths[next++ % paths.length]!,
              ...(idempotencyKeys && !read ? { headers: { ...r.headers, 'idempotency-key': `probe-${next}-${Math.random()}` } } : {}),
            }),
          },
        ],
      });
    };
    const run = (amount: number) => load(amount, kind !== 'earn');
    await load(Number(process.env.PROBE_WARMUP ?? Math.max(500, customerCount * 2)), false); // warm-up: every customer earns
    if (kind !== 'earn') await run(500);
    if (process.env.PROBE_ANALYZE === '1') await withClient((c) => c.query('analyze'), db);
    await new Promise((r) => setTimeout(r, 1000));
    const pids = descendants(server.pid);
    const backends = await backendPids(db);
    const xacts = async () => withClient(async (c) => Number((await c.query<{ n: string }>('select pg_stat_get_db_xact_commit(oid) + pg_stat_get_db_xact_rollback(oid) as n from pg_database where datname = $1', [db])).rows[0]!.n));
    const xactsBefore = await xacts();
    const before = new Map([...pids, ...backends].map((p) => [p, cpuMs(p)]));
    const started = performance.now();
    const windowStart = new Date();
    const logOffset = pgLog ? statSync(pgLog).size : 0;
    const result = await run(requests);
    await new Promise((r) => setTimeout(r, 500)); // read-your-writes and projections finish
    const windowEnd = new Date();
    const wall = (performance.now() - started) / 1000;
    const after = new Map([...pids, ...(await backendPids(db))].map((p) => [p, cpuMs(p)]));
    const ok = result['2xx'];
    await new Promise((r) => setTimeout(r, 1200)); // statistics are flushed about once a second
    const transactions = (await xacts()) - xactsBefore;
    const statements = pgLog ? statementsLogged(pgLog, logOffset, db, windowStart, windowEnd) : undefined;
    const per = (ms: number) => ((ms * 1000) / ok).toFixed(0);
    let nodeTotal = 0;
    let pgTotal = 0;
    const lines: string[] = [];
    for (const [pid, ms] of after) {
      const used = ms - (before.get(pid) ?? 0);
      if (pids.includes(pid)) {
        nodeTotal += used;
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 60);
        lines.push(`  node ${pid} ${cmd}: ${per(used)} µs/${kind}`);
      } else pgTotal += used;
    }
    console.log(`${kind}: processes=${processes} customers=${customerCount}: ${ok} 2xx, ${result.non2xx} non-2xx in ${wall.toFixed(1)} s (${(ok / wall).toFixed(0)}/s, p50 ${result.latency.p50} ms); load ${os.loadavg()[0]!.toFixed(1)}`);
    console.log(lines.join('\n'));
    console.log(`  node total ${per(nodeTotal)} µs/${kind}, postgres backends ${per(pgTotal)} µs/${kind}, sum ${per(nodeTotal + pgTotal)} µs/${kind}; ${(transactions / ok).toFixed(2)} transactions per ${kind}${statements === undefined ? '' : `, ${(statements / ok).toFixed(2)} statements per ${kind}`}`);
    await server.stop();
  } finally {
    await dropDatabase(db);
  }
}

/**
 * Statements `db` ran between `from` and `to`, by the server's log (`log_statement = all` on that
 * database) from byte `offset` on; the most frequent (by their first 70 characters) are printed.
 */
function statementsLogged(logFile: string, offset: number, db: string, from: Date, to: Date): number {
  const stamp = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[\d+\] [^@ ]+@(\S+) LOG: {2}(?:execute [^:]*|statement): ?(.*)/;
  let count = 0;
  const byText = new Map<string, number>();
  const fd = openSync(logFile, 'r');
  const tail = Buffer.alloc(fstatSync(fd).size - offset);
  readSync(fd, tail, 0, tail.length, offset);
  closeSync(fd);
  for (const line of tail.toString('utf8').split('\n')) {
    const m = stamp.exec(line);
    if (!m || m[2] !== db) continue;
    const at = Date.parse(`${m[1]!.replace(' ', 'T')}Z`);
    if (at < from.getTime() || at > to.getTime()) continue;
    count++;
    const text = m[3]!.trim().slice(0, 70) || '(text on the next line)';
    byText.set(text, (byText.get(text) ?? 0) + 1);
  }
  for (const [text, n] of [...byText].sort((x, y) => y[1] - x[1]).slice(0, 12)) console.log(`  ${String(n).padStart(7)}  ${text}`);
  return count;
}

await main();
