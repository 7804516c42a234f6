/**
 * The service's HTTP app on the PostgreSQL server of DATABASE_URL, as `loyalty serve` runs it
 * (config from the environment, projections in this process), with the PostgreSQL adapter's
 * transactional receipts turned off: each answer is stored after its append, as on KurrentDB.
 * Run with tsx by test/fault/answer-from-log-process.test.ts, which kills it with SIGKILL; prints
 * "Listening on <url>" once it serves.
 */
import { serve } from '@hono/node-server';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';

const services = await createServices({ config: loadConfig(), runProjections: true, runDispatcher: false, runScheduler: false });
if (!(services.store instanceof PostgresEventStore)) throw new Error('expected the PostgreSQL event store (no EVENTSTORE_URL)');
services.store.transactionalReceipts = false;
const app = createApp(services);
serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  console.log(`Listening on http://127.0.0.1:${info.port}`);
});
