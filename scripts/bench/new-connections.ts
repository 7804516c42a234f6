/**
 * Earns from clients that open a new connection for every request (no keep-alive, as many simple
 * integrations do): `tsx scripts/bench/new-connections.ts [clients=32] [seconds=10] [processes|default]`
 * prints the earns answered per second with their p50 and p99, on `serve` (`default`: the topology
 * it picks; on PostgreSQL beside 2 cores, a primary that hands each connection to its HTTP child).
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Api } from './load.js';
import { createDatabase, databaseUrl, dropDatabase } from './postgres.js';
import { buildService, initStore, ServerProcess } from './service.js';

const clients = Number(process.argv[2] ?? 32);
const seconds = Number(process.argv[3] ?? 10);
const processes = process.argv[4] === undefined || process.argv[4] === 'default' ? ('default' as const) : Number(process.argv[4]);

await buildService();
const db = await createDatabase('newconn');
try {
  const store = { databaseUrl: databaseUrl(db) };
  const keys = await initStore(store);
  const server = await ServerProcess.start({ store, processes, logFile: path.join(os.tmpdir(), `newconn-${db}.log`) });
  try {
    const customers = await new Api(server.url, keys.private_key).createCustomers(1000, 'newconn');
    const url = new URL(server.url);
    const earn = (i: number) =>
      new Promise<number>((resolve, reject) => {
        const started = performance.now();
        const request = http.request(
          {
            host: url.hostname,
            port: url.port,
            method: 'POST',
            path: `/api/v1/customers/${customers[i % customers.length]}/points/transaction`,
            agent: false,
            headers: { 'x-api-key': keys.private_key, 'content-type': 'application/json', connection: 'close' },
          },
          (response) => {
            response.resume();
            response.on('end', () => (response.statusCode === 201 ? resolve(performance.now() - started) : reject(new Error(`status ${response.statusCode}`))));
          },
        );
        request.on('error', reject);
        request.end('{"type":"earn","amount":1}');
      });
    const latencies: number[] = [];
    let next = 0;
    const end = performance.now() + seconds * 1000;
    await Promise.all(Array.from({ length: clients }, async () => {
      while (performance.now() < end) latencies.push(await earn(next++));
    }));
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(1);
    console.log(`serve --processes ${processes}: ${clients} clients, a new connection per earn: ${(latencies.length / seconds).toFixed(0)} earns/s, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`);
  } finally {
    await server.stop();
  }
} finally {
  await dropDatabase(db);
}
