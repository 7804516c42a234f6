import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import { serve as listen } from '@hono/node-server';
import { type Config, ConfigError } from '../config.js';
import { createApp } from '../http/app.js';
import { answerClientErrors } from '../http/client-error.js';
import { createServices, type Services } from '../services.js';
import { listenForAppends, signalAppends } from '../projections/append-signal.js';
import { describeKeys, provisionBusiness } from './provision.js';

/** `api`: HTTP only (other processes project); `workers`: projections and webhook delivery, no HTTP; `all`: both. */
export const SERVE_ROLES = ['all', 'api', 'workers'] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

/**
 * Runs the API and/or the workers (projections, webhook delivery). With role `all`, an empty store
 * first gets a business whose keys are printed once; split roles leave that to `loyalty init`, so
 * replicas starting together cannot each create one. SIGTERM/SIGINT stop accepting, let in-flight
 * requests finish, then close.
 */
export async function serve(config: Config, role: ServeRole = 'all'): Promise<void> {
  // Only one process may open an embedded store: an API without workers would never project.
  if (role !== 'all' && !config.databaseUrl) {
    throw new ConfigError(
      'DATABASE_URL',
      `--role ${role} needs a PostgreSQL server (DATABASE_URL): one process owns the embedded store (PGlite), so it cannot be split into API and workers; use --role all, or set DATABASE_URL.`,
    );
  }
  const services = await createServices({ config, projectionsElsewhere: role === 'api' });
  if (role !== 'api') {
    // Whether the store is new is read from the read models, so bring them up to the log first.
    await services.projections.catchUp();
    services.projections.start();
    services.dispatcher.start();
  }
  // Split roles on a PostgreSQL server: API processes wake the workers on every append.
  let stopListening = async () => {};
  if (config.databaseUrl && role === 'api') signalAppends(services.db, services.store, services.logger);
  if (config.databaseUrl && role === 'workers') {
    stopListening = await listenForAppends(config.databaseUrl, () => services.projections.runners.forEach((r) => r.wake()), services.logger);
  }
  if (role === 'all' && (await services.queries.access.businesses()).length === 0) {
    const first = await provisionBusiness(services, 'My business', 'unlimited');
    process.stdout.write(`${describeKeys(first, 'First start: created a business and its API keys.')}\n`);
  }
  if (role === 'workers') {
    services.logger.info({ store: services.database.kind, eventLog: config.eventStoreUrl ? 'kurrentdb' : 'postgres' }, 'loyalty workers running');
    process.stdout.write('Workers running: projections and webhook delivery\n');
    return stopOnSignal(services, (done) => void stopListening().then(done));
  }
  let draining = false;
  const app = createApp(services, { draining: () => draining });
  const server = listen({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    services.logger.info({ port: info.port, host: config.host, store: services.database.kind }, 'loyalty API listening');
    process.stdout.write(`Listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${info.port}\n`);
  }) as Server;

  // A request Node cannot parse (oversized headers, broken framing) gets a JSON error too.
  answerClientErrors(server, services.logger);

  stopOnSignal(services, (done) => {
    draining = true;
    drainConnections(server, done);
  });
}

/** How long a keep-alive connection idle at shutdown may still bring one more request. */
const IDLE_GRACE_MS = 1000;

/**
 * Stops accepting connections and lets each open one end after its next answer (which carries
 * `Connection: close`, see `draining` above), so no request a client has sent on a kept-alive
 * connection is cut off. `http.Server.close` would also destroy the connections idle at that
 * instant, racing a client that is just sending on one; those are closed after a grace instead.
 * `done` runs once the last connection has closed.
 */
function drainConnections(server: Server, done: () => void): void {
  NetServer.prototype.close.call(server, () => done());
  setTimeout(() => server.closeIdleConnections(), IDLE_GRACE_MS).unref();
}

/** On SIGTERM/SIGINT: `drain` (stop accepting, finish in-flight work), close the services, exit. */
function stopOnSignal(services: Services, drain: (done: () => void) => void): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000).unref();
    drain(async () => {
      await services.close();
      clearTimeout(force);
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
