import type { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LoopHealth } from '../../background-loop.js';
import { coalesced } from '../../coalesced.js';
import type { Services } from '../../services.js';
import type { AppEnv } from '../env.js';

/** Lag (events) past which /readyz answers 503: the read models are too far behind to serve. */
const READY_MAX_LAG = 10_000;

/**
 * What the ops endpoints and metrics read: the log and the projections' checkpoints (lag), the
 * loops this process runs, the webhook queue, conflicts retried; nothing else of the services.
 */
export type OpsServices = Pick<Services, 'projections' | 'dispatcher' | 'conflicts' | 'database' | 'queries' | 'stateCache'>;

/**
 * Each projector's checkpoint and how far the log's head is past it, asked of the event store (the
 * log may be KurrentDB). Where the store has to count the events to tell (KurrentDB), it stops
 * just past READY_MAX_LAG: enough to decide readiness (a projector further behind shows 10,001 there).
 */
const lagOf = (services: OpsServices) => services.projections.lag(READY_MAX_LAG + 1);

/**
 * The background work this process runs: the projection loop and the webhook delivery loop, each
 * only when it runs here; null when neither does (`serve --role api`, an HTTP process of a cluster:
 * the workers are another process). Unhealthy when a loop's round has hung (`stalled`).
 */
export function workersHealth(services: Pick<OpsServices, 'projections' | 'dispatcher'>): { healthy: boolean; projections?: LoopHealth; webhooks?: LoopHealth } | null {
  const loops = Object.entries({ projections: services.projections.runner.health(), webhooks: services.dispatcher.health() }).filter(
    ([, loop]) => loop.state !== 'stopped',
  );
  if (loops.length === 0) return null;
  return { healthy: loops.every(([, loop]) => loop.state !== 'stalled'), ...Object.fromEntries(loops) };
}

/** One process's metrics: its registry, and the middleware that times each request into it. */
export interface Metrics {
  registry: Registry;
  measure: MiddlewareHandler<AppEnv>;
}

/**
 * The metrics of this process: request latency by route and status (and requests per process),
 * projection lag and events, webhook queue depth, webhook attempts by outcome, 429s, idempotent
 * replays, write conflicts retried, where state loads found their state and what the state cache
 * holds, and prom-client's process and Node defaults. In a cluster the primary sums every child's
 * (prom-client's `AggregatorRegistry.aggregate`): counters and histograms add up, while the gauges
 * read from the database, the same in every process, take the largest value instead of a sum.
 */
export function createMetrics(services: OpsServices): Metrics {
  const registry = new Registry();
  const requestDuration = new Histogram({
    name: 'loyalty_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // Shows how an instance's processes share the load (and which pids serve), summed or not.
  const requestsByProcess = new Counter({
    name: 'loyalty_http_requests_by_process_total',
    help: 'HTTP requests answered by each process of this instance (by pid)',
    labelNames: ['pid'],
    registers: [registry],
  });
  const pid = String(process.pid);
  const eventsProjected = new Counter({
    name: 'loyalty_projection_events_total',
    help: 'Events applied by each projector in this process',
    labelNames: ['projection'],
    registers: [registry],
  });
  new Gauge({
    name: 'loyalty_projection_lag_events',
    help: 'Events in the log not yet applied by each projector',
    labelNames: ['projection'],
    registers: [registry],
    aggregator: 'max',
    async collect() {
      for (const p of await lagOf(services)) this.set({ projection: p.name }, p.lag);
    },
  });
  new Gauge({
    name: 'loyalty_webhook_queue_depth',
    help: 'Webhook messages waiting for delivery',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      this.set(await services.queries.webhooks.queueDepth());
    },
  });
  for (const runner of services.projections.runners) {
    runner.onApplied((count) => eventsProjected.inc({ projection: runner.name }, count));
  }
  const deliveries = new Counter({
    name: 'loyalty_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry_scheduled, failed (retries exhausted or 410)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  services.dispatcher.onAttempt((outcome) => deliveries.inc({ outcome }));
  const rateLimited = new Counter({ name: 'loyalty_rate_limited_requests_total', help: 'Requests answered 429 rate_limited', registers: [registry] });
  const replays = new Counter({
    name: 'loyalty_idempotent_replays_total',
    help: 'Requests answered with the stored answer of an earlier one with the same Idempotency-Key',
    registers: [registry],
  });
  const conflicts = new Counter({
    name: 'loyalty_write_conflicts_retried_total',
    help: 'Changes decided again because another writer moved a stream first: how=reload (loaded again and retried), in_batch (decided again inside the append batch)',
    labelNames: ['how'],
    registers: [registry],
  });
  services.conflicts.onRetried((how) => conflicts.inc({ how }));
  // Whether the customers in use fit in memory: loads from snapshots and the log read the database and fold.
  new Counter({
    name: 'loyalty_state_loads_total',
    help: 'Loads of a stream\'s state for a decision, by where the state was found: memory, snapshot (and the events after it), log (the whole stream)',
    labelNames: ['from'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [from, count] of Object.entries(services.stateCache.loads)) this.inc({ from }, count);
    },
  });
  new Gauge({
    name: 'loyalty_state_cache_lots',
    help: 'Lots and other ledger lines the states held in memory hold between them (bounded by LOYALTY_STATE_CACHE_LOTS per process)',
    registers: [registry],
    collect() {
      this.set(services.stateCache.weightHeld);
    },
  });
  new Gauge({
    name: 'loyalty_state_cache_states',
    help: 'Folded states held in memory',
    registers: [registry],
    collect() {
      this.set(services.stateCache.size);
    },
  });
  // Set only in a process that runs the loops, so a cluster's sum (max) shows its workers process.
  new Gauge({
    name: 'loyalty_worker_loop_state',
    help: 'Background loops this process runs (loop=projections|webhooks): 1 for the state each is in (running, failing, stalled)',
    labelNames: ['loop', 'state'],
    registers: [registry],
    aggregator: 'max',
    collect() {
      const health = workersHealth(services);
      if (!health) return;
      for (const loop of ['projections', 'webhooks'] as const) {
        const now = health[loop]?.state;
        if (now) for (const state of ['running', 'failing', 'stalled']) this.set({ loop, state }, now === state ? 1 : 0);
      }
    },
  });
  // Process and Node figures (CPU, memory, event-loop lag, GC, handles), prefixed like ours.
  collectDefaultMetrics({ register: registry, prefix: 'loyalty_' });

  const measure = createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now();
    await next();
    const route = c.req.routePath && c.req.routePath !== '/*' ? c.req.routePath : 'unmatched';
    requestDuration.observe({ method: c.req.method, route, status: String(c.res.status) }, (performance.now() - started) / 1000);
    requestsByProcess.inc({ pid });
    if (c.res.status === 429) rateLimited.inc();
    if (c.get('replayed')) replays.inc();
  });
  return { registry, measure };
}

/**
 * `/healthz` (the process is up; where it runs the workers, their loops too: 503 when one has
 * stalled), `/readyz` (the store answers and the read models are close to the log; the webhook
 * queue's pending and overdue messages, reported only) and `/metrics` (Prometheus text, see `createMetrics`). None needs a key: they carry no
 * business data. `metricsText` is what `/metrics` answers: by default this process's registry; in
 * a cluster child, the whole instance's.
 */
export function registerOps(
  app: OpenAPIHono<AppEnv>,
  services: OpsServices,
  metrics: Metrics = createMetrics(services),
  metricsText: () => Promise<string> = () => metrics.registry.metrics(),
  stopping: () => boolean = () => false,
) {
  app.get('/healthz', (c) => {
    const workers = workersHealth(services);
    if (!workers) return c.json({ status: 'ok' });
    const { healthy, ...loops } = workers;
    return c.json({ status: healthy ? 'ok' : 'stalled', workers: loops }, healthy ? 200 : 503);
  });
  // Public and each a few statements: requests that arrive while one is being answered share it.
  const readiness = coalesced((now: Date) => Promise.all([lagOf(services), services.queries.webhooks.backlog(now)]));
  const instanceMetrics = coalesced(metricsText);
  app.get('/readyz', async (c) => {
    if (stopping()) return c.json({ status: 'stopping', store: services.database.kind }, 503);
    try {
      const [projections, webhooks] = await readiness(c.get('clock').now());
      // Webhooks are reported, not judged: a stuck delivery does not stop this process serving.
      const ready = projections.every((p) => p.lag <= READY_MAX_LAG);
      return c.json({ status: ready ? 'ready' : 'lagging', store: services.database.kind, projections, webhooks }, ready ? 200 : 503);
    } catch {
      return c.json({ status: 'unavailable', store: services.database.kind }, 503);
    }
  });
  app.get('/metrics', async (c) => {
    const text = await instanceMetrics();
    c.header('Content-Type', metrics.registry.contentType);
    return c.body(text);
  });
  return { measure: metrics.measure };
}
