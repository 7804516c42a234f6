import { rmSync } from 'node:fs';
import type { RequestListener, Server } from 'node:http';
import { type AddressInfo, Server as NetServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import pino from 'pino';
import { Counter } from 'prom-client';
import { clusterChildRole, primaryChannel } from '../cluster/cluster-child.js';
import { ConnectionAdopter } from '../cluster/connection-adopter.js';
import type { ChildRole } from '../cluster/cluster-messages.js';
import { superviseCluster } from '../cluster/cluster-primary.js';
import { type Config, ConfigError, servingProcesses, workersApart } from '../config.js';
import { type App, type AppOptions, createApp } from '../http/app.js';
import { AFFINITY_VARIABLES, affinitySocket, passingOnWrites } from '../cluster/customer-affinity.js';
import { createHttpServer } from '../http/http-server.js';
import { createMetrics, type Metrics } from '../http/routes/ops-routes.js';
import { createServices, type Services, type ServicesOptions } from '../services.js';
import { listenForAppends, signalAppends } from '../projections/append-signal.js';
import { boundHeapGrowth } from './heap-growth.js';
import { LISTEN_BACKLOG, listenOrSayWhy } from './listen.js';
import { describeKeys, provisionBusiness } from './provision.js';

/** `api`: HTTP only (other processes project); `workers`: projections, webhook delivery and the lifecycle scheduler, no API (only /healthz, /readyz and /metrics on PORT); `all`: both. */
export const SERVE_ROLES = ['all', 'api', 'workers'] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

/**
 * Runs the API and/or the workers (projections, webhook delivery). With role `all`, an empty store
 * first gets a business whose keys are printed once; split roles leave that to `loyalty init`, so
 * replicas starting together cannot each create one. SIGTERM/SIGINT stop accepting, let in-flight
 * requests finish, then close. On a PostgreSQL server, roles `all` and `api` run `processes` HTTP
 * processes (`--processes`, else LOYALTY_PROCESSES, else one per core) under a primary
 * (src/cluster/cluster-primary.ts), for role `all` with the workers apart (`workersApart`: also
 * beside a single HTTP process, unless one was asked for); with one asked for, or on the embedded
 * store, everything runs in this process.
 */
export async function serve(config: Config, role: ServeRole = 'all', processesFlag?: string): Promise<void> {
  boundHeapGrowth();
  // Only one process may open an embedded store: an API without workers would never project.
  if (role !== 'all' && !config.databaseUrl) {
    throw new ConfigError(
      'DATABASE_URL',
      `--role ${role} needs a PostgreSQL server (DATABASE_URL): one process owns the embedded store (PGlite), so it cannot be split into API and workers; use --role all, or set DATABASE_URL.`,
    );
  }
  const cores = availableParallelism();
  const processes = servingProcesses(config, processesFlag, cores);
  const childRole = clusterChildRole();
  if (childRole) return serveClusterChild(config, childRole);
  // Under a primary: role `all` whenever its workers go apart (always beside several HTTP processes), `api` beside several.
  if (role !== 'workers' && (role === 'all' ? workersApart(config, processesFlag, cores) : processes > 1)) {
    return superviseCluster(config, { role, processes, logger: pino({ level: config.logLevel }) });
  }

  const { services, stopListening } = await startRole(config, role);
  const close = async () => void (await Promise.all([stopListening(), services.close()]));
  if (role === 'workers') {
    // No API: /healthz (the loops), /readyz and /metrics only, for the container's health check and scraping.
    const server = await listenHttp(services, createApp(services, { opsOnly: true }), close);
    stopOnSignal(services, (done) => void Promise.all([stopListening(), stopAccepting(server)]).then(done));
    const port = (server.address() as AddressInfo).port;
    services.logger.info({ port, store: services.database.kind, eventLog: config.eventStoreUrl ? 'kurrentdb' : 'postgres' }, 'loyalty workers running');
    process.stdout.write(`Workers running: projections and webhook delivery (health and metrics on http://${shownHost(config.host)}:${port})\n`);
    return;
  }
  let draining = false;
  let stopping = false;
  const server = await listenHttp(services, createApp(services, { draining: () => draining, stopping: () => stopping }), close);
  // Before "Listening on": until a process listens for SIGTERM, the signal's default action kills
  // it, and a supervisor may send one as soon as it reads that line.
  stopOnSignal(
    services,
    (done) => {
      draining = true;
      void stopAccepting(server).then(done);
      closeIdleAfterGrace(server);
    },
    () => (stopping = true),
  );
  // The first business is made once the port is ours: a start that cannot listen leaves an empty
  // store, whose next start prints the keys. Until then no key exists, so no request gets in.
  if (role === 'all') {
    try {
      await provisionOnFirstStart(services);
    } catch (error) {
      server.close();
      await close();
      throw error;
    }
  }
  const port = (server.address() as AddressInfo).port;
  services.logger.info({ port, host: config.host, store: services.database.kind }, 'loyalty API listening');
  process.stdout.write(`Listening on http://${shownHost(config.host)}:${port}\n`);
}

/**
 * A child of a cluster (see cluster-primary.ts): `api` is `serve --role api` without its own
 * "Listening on" line and with the instance's `/metrics`; `workers` is `serve --role workers` that
 * also provisions an empty store. Both shut down when the primary says.
 */
async function serveClusterChild(config: Config, role: ChildRole): Promise<void> {
  const channel = primaryChannel();
  const { services, stopListening } = await startRole(config, role, { forgetPrincipals: () => channel.keyRevoked() });
  channel.onForgetPrincipals(() => services.principals.clear());
  const metrics = createMetrics(services);
  channel.answerMetrics(metrics.registry);
  if (role === 'workers') {
    await provisionOnFirstStart(services);
    channel.ready();
    channel.onDrain(() => shutDown(services, 'drain', (done) => void stopListening().then(done)));
    return;
  }
  let draining = false;
  let stopping = false;
  channel.onStopping(() => (stopping = true));
  const options: AppOptions = { draining: () => draining, stopping: () => stopping, metrics, metricsText: () => channel.instanceMetrics() };
  const app = createApp(services, options);
  const affinity = await passWritesToOwners(services, app, metrics, () => draining);
  // The primary holds the port and hands this child its connections (connection-router.ts), or,
  // to the instance's only HTTP child, the port's listening socket itself.
  const server = createHttpServer(app.fetch, { hostname: config.host, logger: services.logger, ...(affinity ? { route: affinity.route } : {}) });
  const connections = new ConnectionAdopter(server);
  channel.onConnection((socket, head) => connections.adopt(socket, head));
  let listening = false;
  channel.onPort((handle, taken) => {
    if (draining) return;
    server.listen(handle, LISTEN_BACKLOG, () => {
      listening = true;
      taken();
    });
  });
  channel.onDrain(() =>
    shutDown(services, 'drain', (done) => {
      draining = true;
      void Promise.all([connections.closed(), listening ? stopAccepting(server) : undefined, affinity?.close()]).then(done);
      closeIdleAfterGrace(server);
    }),
  );
  services.logger.info({ host: config.host, store: services.database.kind }, 'loyalty API process taking connections');
  channel.ready();
}

/**
 * Each customer's writes made by its owner among the instance's HTTP children (customer-affinity.ts),
 * when the primary said where this child stands: `route` passes the writes this child does not own
 * on; the writes the others pass on to it come in on its own Unix socket, to the same `app`. `close`
 * (on the drain, after which this child makes every write itself) waits for what it passed on and
 * for what was passed on to it.
 */
async function passWritesToOwners(services: Services, app: App, metrics: Metrics, draining: () => boolean) {
  const instance = process.env[AFFINITY_VARIABLES.instance];
  const index = Number(process.env[AFFINITY_VARIABLES.index]);
  const size = Number(process.env[AFFINITY_VARIABLES.size]);
  if (!instance || !Number.isInteger(index) || !Number.isInteger(size) || size < 2) return undefined;
  if (affinitySocket(instance, index) === undefined) {
    services.logger.warn({ tmpdir: tmpdir() }, 'the temporary directory path is too long for a socket; every HTTP process makes its writes itself');
    return undefined;
  }
  const socketOf = (i: number) => affinitySocket(instance, i)!;
  const outcomes = new Counter({
    name: 'loyalty_http_requests_passed_on_total',
    help: "Writes this HTTP process passed on to the customer's owner among the instance's processes, by outcome",
    labelNames: ['outcome'],
    registers: [metrics.registry],
  });
  let passing: ReturnType<typeof passingOnWrites> | undefined;
  const route = (local: RequestListener) =>
    (passing = passingOnWrites(local, { index, size, socketOf, passing: () => !draining(), passed: (outcome) => outcomes.inc({ outcome }) }));
  const passedOn = createHttpServer(app.fetch, { hostname: services.config.host, logger: services.logger });
  try {
    rmSync(socketOf(index), { force: true }); // left by a child that died before this one replaced it
    await new Promise<void>((resolve, reject) => {
      passedOn.once('error', reject);
      // Exclusive: this child's own socket, not one node:cluster would share among the children.
      passedOn.listen({ path: socketOf(index), exclusive: true }, resolve);
    });
  } catch (error) {
    // A temporary directory that is not writable, say: every write is then made where it arrives
    // (the others, finding no socket here, make this child's too).
    services.logger.warn({ err: error, socket: socketOf(index) }, 'cannot listen for writes passed on; this process makes every write itself');
    return undefined;
  }
  return {
    route,
    close: async () => {
      const closed = stopAccepting(passedOn);
      closeIdleAfterGrace(passedOn);
      await Promise.all([passing?.close(), closed]);
    },
  };
}

/** Opens the services for a role and starts its background work and cross-process wake-ups. */
async function startRole(
  config: Config,
  role: ServeRole,
  options: Pick<ServicesOptions, 'forgetPrincipals'> = {},
): Promise<{ services: Services; stopListening: () => Promise<void> }> {
  const services = await createServices({ config, projectionsElsewhere: role === 'api', ...options });
  if (role !== 'api') {
    // Whether the store is new is read from the read models, so bring them up to the log first.
    await services.projections.catchUp();
    services.projections.start();
    services.dispatcher.start();
    services.scheduler.start();
  }
  // Split roles on a PostgreSQL server: API processes wake the workers on every append. The
  // PostgreSQL log sends that signal from the append's own statement; with KurrentDB's log, a
  // notify follows each append.
  let stopListening = async () => {};
  if (config.databaseUrl && config.eventStoreUrl && role === 'api') signalAppends(services.db, services.store, services.logger);
  if (config.databaseUrl && role === 'workers') {
    stopListening = await listenForAppends(config.databaseUrl, () => services.projections.runners.forEach((r) => r.wake()), services.logger);
  }
  return { services, stopListening };
}

/** On an empty store, the first business and its keys, printed once (read models caught up first). */
async function provisionOnFirstStart(services: Services): Promise<void> {
  if ((await services.queries.access.businesses()).length > 0) return;
  const first = await provisionBusiness(services, 'My business', 'unlimited');
  process.stdout.write(`${describeKeys(first, 'First start: created a business and its API keys.')}\n`);
}

const shownHost = (host: string) => (host === '0.0.0.0' ? 'localhost' : host);

/** Listens on PORT and HOST; if it cannot (the port is taken, say), runs `close` (what the role opened) and throws why. */
async function listenHttp(services: Services, app: App, close: () => Promise<void>): Promise<Server> {
  const { port, host } = services.config;
  const server = createHttpServer(app.fetch, { hostname: host, logger: services.logger });
  try {
    await listenOrSayWhy(server, port, host);
  } catch (error) {
    await close();
    throw error;
  }
  return server;
}

/**
 * Stops accepting connections and lets each open one end after its next answer (which carries
 * `Connection: close`, see `draining` above), so no request a client has sent on a kept-alive
 * connection is cut off. `http.Server.close` would also destroy the connections idle at that
 * instant, racing a client that is just sending on one; those are closed after a grace instead
 * (`closeIdleAfterGrace`). Resolves once the last connection has closed.
 */
function stopAccepting(server: Server): Promise<void> {
  return new Promise((resolve) => NetServer.prototype.close.call(server, () => resolve()));
}

/**
 * A connection idle at shutdown may still bring one more request: it is closed once idle for the
 * server's keep-alive timeout (5 s), as it would be at any other time, so a client that copes
 * with the server's keep-alive timeout copes with a shutdown. (A 1 s grace reset connections of
 * clients busy reading large answers when it struck.)
 */
function closeIdleAfterGrace(server: Server): void {
  setTimeout(() => server.closeIdleConnections(), server.keepAliveTimeout).unref();
}

/**
 * On SIGTERM/SIGINT: `announce` (readiness goes 503), serve on for `LOYALTY_SHUTDOWN_DELAY_MS`,
 * then `drain` (stop accepting, finish in-flight work), close the services, exit.
 */
function stopOnSignal(services: Services, drain: (done: () => void) => void, announce?: () => void): void {
  let signalled = false;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = true;
    announce?.();
    // Only an HTTP server has a load balancer to wait for.
    setTimeout(() => shutDown(services, signal, drain), announce ? services.config.shutdownDelayMs : 0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

let stopping = false;

/** At shutdown, the longest the states in memory are snapshotted for (within the 10 s a shutdown may take). */
const SHUTDOWN_SNAPSHOTS_MS = 2_000;

/** `drain`, snapshot the states in memory (`StateCache.snapshotHeld`), close the services and exit 0; exit 1 if that takes more than 10 s. Once only. */
function shutDown(services: Services, reason: string, drain: (done: () => void) => void): void {
  if (stopping) return;
  stopping = true;
  services.logger.info({ signal: reason }, 'shutting down');
  const force = setTimeout(() => process.exit(1), 10_000).unref();
  drain(async () => {
    // The customers in memory folded events since their snapshots: keep what they hold for the next start.
    const snapshots = await services.stateCache.snapshotHeld(SHUTDOWN_SNAPSHOTS_MS);
    if (snapshots > 0) services.logger.info({ snapshots }, 'states snapshotted for the next start');
    await services.close();
    clearTimeout(force);
    process.exit(0);
  });
}
