/**
 * Two checkouts of the service, each serving a database of its own at the same time, measured in
 * turns: earns on A, then B, then B, then A (ABBA), for several rounds. On a machine whose speed
 * drifts by 15–25% from one minute to the next (docs/performance.md), two runs of the whole bench
 * minutes apart cannot show a change of 10%; turns of a few seconds, each pair in both orders, can.
 * Usage (each checkout with its node_modules; it is built here):
 *   tsx scripts/bench/ab-earn.ts <checkout A>[:processes|default] <checkout B>[:processes|default] [rounds=4] [seconds=8] [processes=1] [hot|spread]
 * `hot`: one customer, 32 connections; `spread`: 1,000 customers, 64 connections (AB_CONNECTIONS: another count). A side's own
 * `:processes` overrides the common one, so one checkout can be measured against itself on more
 * HTTP processes (`. .:2`), or in the topology `serve` picks by default (`. .:default`). It prints
 * each turn's earns/s and p99, and B's rate over A's per round and the median of those.
 */
import os from 'node:os';
import path from 'node:path';
import { Api, earnLoad, type LoadResult } from './load.js';
import { dropDatabase } from './postgres.js';
import { buildService, type ServerProcess, serveFresh } from './service.js';
import { inTurns } from './turns.js';

if (!process.argv[2] || !process.argv[3]) throw new Error('usage: ab-earn.ts <checkout A>[:processes] <checkout B>[:processes] [rounds] [seconds] [processes] [hot|spread]');
const rounds = Number(process.argv[4] ?? 4);
const seconds = Number(process.argv[5] ?? 8);
const processes = Number(process.argv[6] ?? 1);
/** A side: `<checkout>[:processes|default]`. */
const sideOf = (arg: string) => {
  const [root, own] = /^(.*?)(?::(\d+|default))?$/.exec(arg)!.slice(1);
  const count: number | 'default' = own === 'default' ? 'default' : own ? Number(own) : processes;
  return { root: path.resolve(root!), processes: count };
};
const [sideA, sideB] = [sideOf(process.argv[2]), sideOf(process.argv[3])];
const shape = (process.argv[7] ?? 'hot') as 'hot' | 'spread';
if (shape !== 'hot' && shape !== 'spread') throw new Error(`unknown load ${shape}: hot or spread`);
/** AB_CONNECTIONS: another connection count than the shape's (32 hot, 64 spread). */
const connections = Number(process.env.AB_CONNECTIONS ?? (shape === 'hot' ? 32 : 64));

interface Side {
  name: 'A' | 'B';
  root: string;
  processes: number | 'default';
  database: string;
  server: ServerProcess;
  key: string;
  customers: string[];
  runs: LoadResult[];
}

const built = new Set<string>();

async function start(name: 'A' | 'B', { root, processes }: { root: string; processes: number | 'default' }): Promise<Side> {
  if (!built.has(root)) await buildService(root);
  built.add(root);
  const { database, keys, server } = await serveFresh(`ab_${name.toLowerCase()}`, { processes, root, logFile: (db) => path.join(os.tmpdir(), `ab-earn-${db}.log`) });
  const customers = await new Api(server.url, keys.private_key).createCustomers(shape === 'hot' ? 1 : 1000, `ab-${name}`);
  await earnLoad({ baseUrl: server.url, key: keys.private_key, customers, connections, seconds: 3 }); // warm-up
  return { name, root, processes, database, server, key: keys.private_key, customers, runs: [] };
}

async function turn(side: Side): Promise<LoadResult> {
  const run = await earnLoad({ baseUrl: side.server.url, key: side.key, customers: side.customers, connections, seconds });
  side.runs.push(run);
  const trouble = run.non2xx + run.errors > 0 ? `, ${run.non2xx} non-2xx, ${run.errors} errors` : '';
  console.log(`  ${side.name}: ${run.okPerSecond.toFixed(0)} earns/s, p50 ${run.p50} ms, p99 ${run.p99} ms${trouble}`);
  return run;
}

async function main() {
  console.log(`A: ${sideA.root} --processes ${sideA.processes}\nB: ${sideB.root} --processes ${sideB.processes}\n${shape} earns, ${connections} connections, ${rounds} rounds of ABBA, ${seconds} s a turn`);
  const sides: Side[] = [];
  try {
    sides.push(await start('A', sideA));
    sides.push(await start('B', sideB));
    const [a, b] = sides as [Side, Side];
    const { ratios, median } = await inTurns(
      rounds,
      async () => (await turn(a)).okPerSecond,
      async () => (await turn(b)).okPerSecond,
    );
    const mean = (runs: LoadResult[], pick: (r: LoadResult) => number) => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
    for (const side of sides) {
      console.log(`${side.name}: mean ${mean(side.runs, (r) => r.okPerSecond).toFixed(0)} earns/s, mean p99 ${mean(side.runs, (r) => r.p99).toFixed(0)} ms`);
    }
    console.log(`B/A per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}; median ${median.toFixed(2)}`);
  } finally {
    for (const side of sides) {
      await side.server.stop();
      await dropDatabase(side.database);
    }
  }
}

await main();
