import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { LISTEN_BACKLOG, listenOrSayWhy } from '../cli/listen.js';
import type { Config } from '../config.js';
import { assertReachable, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrations.js';
import { CHILD_ROLE_VARIABLE, type ChildRole, isLoyaltyMessage, type ToChild, type ToPrimary } from './cluster-messages.js';
import { connectionRouter } from './connection-router.js';
import { refusalLog } from './refusal-log.js';
import { AFFINITY_VARIABLES } from './customer-affinity.js';
import { MetricsCollector } from './cluster-metrics.js';
import { RestartBackoff } from './restart-backoff.js';
import { counted } from '../plural.js';

/** CONTRACT.md §12 gives a drain 10 s; past this the primary kills what is left and exits 1. */
const STOP_DEADLINE_MS = 9_500;
/** How long a revocation waits for one HTTP child to forget its principals. */
const FORGET_PRINCIPALS_TIMEOUT_MS = 2_000;

interface Child {
  readonly role: ChildRole;
  /** For the logs: "HTTP process 2", "the workers process". */
  readonly label: string;
  /** Undefined while it waits to be restarted, and once it has exited during the stop. */
  worker: Worker | undefined;
  /** Taking connections (HTTP), or caught up and running (workers). */
  ready: boolean;
  readonly backoff: RestartBackoff;
  restart: NodeJS.Timeout | undefined;
}

export interface ClusterOptions {
  /** `all`: HTTP children and one workers child; `api`: HTTP children only (workers run elsewhere). */
  role: 'all' | 'api';
  /** How many HTTP children. */
  processes: number;
  logger: Logger;
}

/**
 * `loyalty serve` on every core: this process (the primary) forks `processes` HTTP children
 * (`--role api`) and, for role `all`, one workers child (projections and webhook delivery: one set
 * per instance, whatever the number of HTTP processes). The primary holds the port and hands each
 * new connection to a child, chosen by the connection's first request (connection-router.ts);
 * otherwise it only supervises. With one HTTP child (the default beside PostgreSQL on 2 cores), it
 * hands that child the port's listening socket instead, once the child takes connections, and the
 * child accepts them itself: node passes sockets to a child one per round trip of the channel, so
 * a busy child took new connections at about 1,500 a second (docs/performance.md). While that
 * child is down the primary listens again and holds the connections until the next one takes the
 * port. Why not let it run the workers, one process fewer: it accepts
 * every connection of the instance, so a long projection batch or a webhook burst in it would
 * delay every new connection; and a bug in the workers would take the whole instance down instead
 * of one child that is restarted like any other.
 *
 * - Start: the primary checks the database and migrates (one line if it cannot, not one per
 *   child), listens on the port, starts the workers child and waits until it has caught up and,
 *   on an empty store, created the first business and printed its keys (it is the only process
 *   that may, so that happens once), then starts the HTTP children, and prints "Listening on" once
 *   all take connections.
 * - The HTTP children write as `--role api` does: each append is signalled with `pg_notify` to
 *   the workers child, and a write answers once the workers' checkpoints have passed it.
 * - A child that dies is restarted after a pause that grows while it keeps dying young.
 * - Writes to a customer are made by one HTTP child, the customer's owner; the others pass them on
 *   (customer-affinity.ts).
 * - `/metrics`, asked of any HTTP child, is the sum of every child's (cluster-metrics.ts).
 * - SIGTERM/SIGINT: see `stop`.
 */
export async function superviseCluster(config: Config, { role, processes, logger }: ClusterOptions): Promise<void> {
  await prepareDatabase(config.databaseUrl!);
  const child = (r: ChildRole, label: string): Child => ({
    role: r,
    label,
    worker: undefined,
    ready: false,
    backoff: new RestartBackoff(),
    restart: undefined,
  });
  const workers = role === 'all' ? [child('workers', 'the workers process')] : [];
  const apis = Array.from({ length: processes }, (_, i) => child('api', `HTTP process ${i + 1}`));
  const children = [...workers, ...apis];
  const metrics = new MetricsCollector();
  /**
   * The port, held here and listened on before any child starts (a start that cannot listen makes
   * nothing, not even the first business): each connection goes to the child its first request
   * says (a write to a customer: the customer's owner), else to the next child in turn; only to
   * children that take connections, and until one does (the instance starting, every child
   * restarting), it waits here.
   */
  const refusals = refusalLog(logger);
  const port = connectionRouter({
    children: () => apis.map((c) => (c.ready && c.worker?.isConnected() ? c.worker : undefined)),
    onRefused: refusals.count,
  });
  await listenOrSayWhy(port, config.port, config.host);
  const bound = port.address() as AddressInfo;
  // Once listening, an error is one connection's that could not be accepted (EMFILE, say): logged, the port stays open.
  port.on('error', (error) => logger.error({ err: error }, 'a connection could not be accepted'));
  let state: 'starting' | 'running' | 'stopping' = 'starting';
  let cleanExits = true;

  // Whoever waits for the children (`until`) looks again whenever one changes.
  const waiting = new Set<() => void>();
  const changed = () => {
    port.childrenChanged();
    [...waiting].forEach((check) => check());
  };
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!done()) return;
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
      check();
    });
  const tell = (c: Child, message: ToChild) => void c.worker?.send(message, () => {});

  const fork = (c: Child) => {
    const place = c.role === 'api' ? { [AFFINITY_VARIABLES.instance]: String(process.pid), [AFFINITY_VARIABLES.index]: String(apis.indexOf(c)), [AFFINITY_VARIABLES.size]: String(apis.length) } : {};
    const worker = cluster.fork({ [CHILD_ROLE_VARIABLE]: c.role, ...place });
    Object.assign(c, { worker, ready: false });
    c.backoff.started(Date.now());
    worker.on('message', (message: unknown) => onMessage(c, worker, message));
    worker.on('exit', (code, signal) => onExit(c, worker, code, signal));
  };

  const onMessage = (c: Child, worker: Worker, message: unknown) => {
    if (!isLoyaltyMessage<ToPrimary>(message)) return;
    switch (message.type) {
      case 'loyalty:ready':
        c.ready = true;
        changed();
        // The only HTTP child accepts the port's connections itself: handing each one over costs
        // the child a round trip on this channel, and node sends one socket per round trip.
        if (c.role === 'api' && apis.length === 1) worker.send({ type: 'loyalty:port' } satisfies ToChild, (port as unknown as { _handle: object })._handle as never, () => {});
        return;
      case 'loyalty:port-taken':
        // The child's copy keeps the socket listening; this one would accept too.
        if (c.worker === worker) port.close();
        return;
      case 'loyalty:metrics':
        return metrics.answered(message);
      case 'loyalty:metrics-request': {
        const running = children.flatMap((o) => (o.ready && o.worker?.isConnected() ? [o.worker] : []));
        const { id } = message;
        metrics.instanceText(running).then(
          (text) => worker.send({ type: 'loyalty:instance-metrics', id, text } satisfies ToChild, () => {}),
          (error: Error) => worker.send({ type: 'loyalty:instance-metrics', id, error: error.message } satisfies ToChild, () => {}),
        );
        return;
      }
      case 'loyalty:key-revoked': {
        const { id } = message;
        const running = apis.flatMap((o) => (o.worker?.isConnected() ? [o.worker] : []));
        void forgetEverywhere(running).then(() => worker.send({ type: 'loyalty:key-revoked-everywhere', id } satisfies ToChild, () => {}));
        return;
      }
      case 'loyalty:principals-forgotten':
        forgotten.get(message.id)?.(worker);
        return;
      default: {
        const _exhaustive: never = message;
        return _exhaustive;
      }
    }
  };

  /** Has every HTTP child forget its principals; resolves when each has said so (or 2 s passed). */
  const forgotten = new Map<number, (from: Worker) => void>();
  let nextForgetId = 0;
  const forgetEverywhere = (running: Worker[]) =>
    new Promise<void>((resolve) => {
      const id = nextForgetId++;
      const left = new Set(running);
      const done = () => {
        clearTimeout(timer);
        forgotten.delete(id);
        resolve();
      };
      const timer = setTimeout(done, FORGET_PRINCIPALS_TIMEOUT_MS);
      forgotten.set(id, (from) => {
        left.delete(from);
        if (left.size === 0) done();
      });
      if (left.size === 0) return done();
      for (const w of running) w.send({ type: 'loyalty:forget-principals', id } satisfies ToChild, () => {});
    });

  const onExit = (c: Child, worker: Worker, code: number | null, signal: string | null) => {
    if (c.worker !== worker) return;
    c.worker = undefined;
    c.ready = false;
    metrics.forget(worker);
    // The only HTTP child held the port's socket: hold the port here again (its connections wait
    // here) until the next one takes it. Another program may have taken the port in between.
    if (c.role === 'api' && apis.length === 1 && !port.listening && state !== 'stopping') {
      const lost = (error: Error) => {
        logger.error({ err: error, port: bound.port }, 'the port could not be listened on again after the HTTP process exited; stopping');
        void stop('port lost', 1);
      };
      port.once('error', lost);
      port.listen(bound.port, bound.address, LISTEN_BACKLOG, () => port.removeListener('error', lost));
    }
    changed();
    const how = { pid: worker.process.pid, code, signal };
    if (state === 'stopping') {
      if (code !== 0) cleanExits = false;
      return;
    }
    if (state === 'starting') {
      // It has said why on the shared stderr (a child exits with the CLI's codes).
      logger.error(how, `${c.label} exited while the instance was starting; stopping`);
      void stop('start failed', code || 1);
      return;
    }
    const delayMs = c.backoff.crashed(Date.now());
    logger.error({ ...how, restart_in_ms: delayMs }, `${c.label} exited; restarting it`);
    c.restart = setTimeout(() => {
      c.restart = undefined;
      if (state !== 'stopping') fork(c);
    }, delayMs);
  };

  /**
   * The drain, in an order that leaves no request unanswered:
   * 1. the port closes: new connections are refused (ECONNREFUSED: never sent, safe to retry
   *    elsewhere); the connections accepted go on being handed over and served;
   * 2. each HTTP child answers what it has received, with `Connection: close`, and exits;
   * 3. the workers child last, since the HTTP children's writes wait for its checkpoints.
   * The primary exits 0 once every child has exited 0.
   */
  async function stop(reason: string, exitCode?: number): Promise<void> {
    if (state === 'stopping') return;
    state = 'stopping';
    logger.info({ reason, delayMs: config.shutdownDelayMs }, 'shutting down');
    for (const c of children) clearTimeout(c.restart);
    for (const c of apis) tell(c, { type: 'loyalty:stopping' });
    await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
    setTimeout(() => {
      logger.error('children still running 9.5 s after the stop began; killing them');
      for (const c of children) c.worker?.process.kill('SIGKILL');
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    port.close();
    port.refuseHeld();
    refusals.flush();
    for (const c of apis) tell(c, { type: 'loyalty:drain' });
    await until(() => apis.every((c) => !c.worker));
    for (const c of workers) tell(c, { type: 'loyalty:drain' });
    await until(() => children.every((c) => !c.worker));
    process.exit(exitCode ?? (cleanExits ? 0 : 1));
  }
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  for (const group of [workers, apis]) {
    group.forEach(fork);
    await until(() => state !== 'starting' || group.every((c) => c.ready));
    if (state !== 'starting') return;
  }
  state = 'running';
  const { port: listening } = port.address() as AddressInfo;
  const host = config.host === '0.0.0.0' ? 'localhost' : config.host;
  const what = `${counted(processes, 'HTTP process', 'HTTP processes')}${workers.length ? ' and a workers process' : ''}`;
  logger.info({ port: listening, host: config.host, processes, pids: children.map((c) => c.worker?.process.pid) }, 'loyalty API listening');
  process.stdout.write(`Listening on http://${host}:${listening} (${what})\n`);
}

/** Reaches the database and brings the schema up to date, once, before any child starts. */
async function prepareDatabase(databaseUrl: string): Promise<void> {
  const database = await openDatabase({ databaseUrl });
  await assertReachable(database, databaseUrl);
  try {
    await migrateToLatest(database.db);
  } finally {
    await database.close();
  }
}
