/**
 * Two checkouts of the service, each serving a database of its own at the same time, measured in
 * turns: earns on A, then B, then B, then A (ABBA), for several rounds. On a machine whose speed
 * drifts by 15–25% from one minute to the next (docs/performance.md), two runs of the whole bench
 * minutes apart cannot show a change of 10%; turns of a few seconds, each pair in both orders, can.
 * Usage (each checkout built, with its node_modules):
 *   tsx scripts/bench/ab-earn.ts <checkout A> <checkout B> [rounds=4] [seconds=8] [processes=1] [hot|spread]
 * `hot`: one customer, 32 connections; `spread`: 1,000 customers, 64 connections. It prints each
 * turn's earns/s and p99, and B's rate over A's per round and over all of them (the median).
 */
import os from 'node:os';
import path from 'node:path';
import { Api, earnLoad, type LoadResult } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const [rootA, rootB] = [process.argv[2], process.argv[3]].map((r) => (r ? path.resolve(r) : undefined));
if (!rootA || !rootB) throw new Error('usage: ab-earn.ts <checkout A> <checkout B> [rounds] [seconds] [processes] [hot|spread]');
const rounds = Number(process.argv[4] ?? 4);
const seconds = Number(process.argv[5] ?? 8);
const processes = Number(process.argv[6] ?? 1);
const shape = (process.argv[7] ?? 'hot') as 'hot' | 'spread';
if (shape !== 'hot' && shape !== 'spread') throw new Error(`unknown load ${shape}: hot or spread`);
const connections = shape === 'hot' ? 32 : 64;

interface Side {
  name: 'A' | 'B';
  root: string;
  database: string;
  server: ServerProcess;
  key: string;
  customers: string[];
  runs: LoadResult[];
}

async function start(name: 'A' | 'B', root: string): Promise<Side> {
  await buildService(root);
  const database = await createDatabase(`ab_${name.toLowerCase()}`);
  const store = { databaseUrl: databaseUrl(database) };
  const keys = await initStore(store, root);
  const server = await ServerProcess.start({ store, processes, root, logFile: path.join(os.tmpdir(), `ab-earn-${database}.log`) });
  const customers = await new Api(server.url, keys.private_key).createCustomers(shape === 'hot' ? 1 : 1000, `ab-${name}`);
  await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections, seconds: 3 }); // warm-up
  return { name, root, database, server, key: keys.private_key, customers, runs: [] };
}

async function turn(side: Side): Promise<LoadResult> {
  const run = await earnLoad({ baseUrl: side.server.url, key: side.key, customers: side.customers, connections, seconds });
  side.runs.push(run);
  const trouble = run.non2xx + run.errors > 0 ? `, ${run.non2xx} non-2xx, ${run.errors} errors` : '';
  console.log(`  ${side.name}: ${run.okPerSecond.toFixed(0)} earns/s, p50 ${run.p50} ms, p99 ${run.p99} ms${trouble}`);
  return run;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function main() {
  console.log(`A: ${rootA}\nB: ${rootB}\n${shape} earns, ${connections} connections, --processes ${processes}, ${rounds} rounds of ABBA, ${seconds} s a turn`);
  const sides: Side[] = [];
  try {
    sides.push(await start('A', rootA!));
    sides.push(await start('B', rootB!));
    const [a, b] = sides as [Side, Side];
    const ratios: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      console.log(`round ${round}`);
      const a1 = await turn(a);
      const b1 = await turn(b);
      const b2 = await turn(b);
      const a2 = await turn(a);
      const ratio = (b1.okPerSecond + b2.okPerSecond) / (a1.okPerSecond + a2.okPerSecond);
      ratios.push(ratio);
      console.log(`  B/A ${ratio.toFixed(2)}`);
    }
    const mean = (runs: LoadResult[], pick: (r: LoadResult) => number) => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
    for (const side of sides) {
      console.log(`${side.name}: mean ${mean(side.runs, (r) => r.okPerSecond).toFixed(0)} earns/s, mean p99 ${mean(side.runs, (r) => r.p99).toFixed(0)} ms`);
    }
    console.log(`B/A per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)}`);
  } finally {
    for (const side of sides) {
      await side.server.stop();
      await dropDatabase(side.database);
    }
  }
}

await main();
