import type { Context } from 'hono';
import type { Clock } from '../clock.js';
import type { Services } from '../services.js';
import { registerDashboard } from './routes/dashboard-routes.js';
import { registerDocs } from './routes/docs-routes.js';
import type { AppEnv } from './env.js';
import { errorResponse, toApiError } from './errors/error-response.js';
import { type Metrics, registerOps } from './routes/ops-routes.js';
import { authenticate } from './middleware/auth.js';
import { preflight, publicKeyCors } from './middleware/cors.js';
import { rateLimit } from './middleware/rate-limit.js';
import { rateLimitStore } from './middleware/rate-limit-store.js';
import { jsonBody } from './middleware/json-body.js';
import { idempotencyStore as createIdempotencyStore } from './middleware/idempotency-store.js';
import { bodySize } from './middleware/body-size.js';
import { storableUrl } from './middleware/storable-url.js';
import { requestLog } from './middleware/request-log.js';
import { answerHeaders } from './middleware/security-headers.js';
import { notFoundHandler } from './errors/not-found.js';
import { createRouter } from './routes/router.js';
import { customerRoutes } from './routes/customer-routes.js';
import { keyRoutes } from './routes/key-routes.js';
import { eventRoutes } from './routes/event-routes.js';
import { eventTypeRoutes } from './routes/event-type-routes.js';
import { pointsRoutes } from './routes/points-routes.js';
import { redemptionRoutes } from './routes/redemption-routes.js';
import { rewardRoutes } from './routes/reward-routes.js';
import { tierRoutes } from './routes/tier-routes.js';
import { programRoutes } from './routes/program-routes.js';
import { webhookRoutes } from './routes/webhook-routes.js';
import { customerAuditRoutes } from './routes/customer-audit-routes.js';
import { meRoutes } from './routes/me-routes.js';
import { rulePreviewRoutes } from './routes/rule-preview-routes.js';
import { statsRoutes } from './routes/stats-routes.js';

/**
 * The HTTP API. Middleware order matters: request id first (every answer carries one), then
 * authentication (401 before anything else), then the per-key rate limit, then body checks; each route then runs its `guard`
 * (permissions, then Idempotency-Key) and its schema validation.
 */
export interface AppOptions {
  /** The app's clock (default: the services' one); tests of rate limits move it by hand. */
  clock?: Clock;
  /** True once the server drains (SIGTERM): every answer then says `Connection: close`. */
  draining?: () => boolean;
  /** True from SIGTERM on (before the drain, during `LOYALTY_SHUTDOWN_DELAY_MS`): `/readyz` answers 503 `stopping`. */
  stopping?: () => boolean;
  /** This process's metrics, when the caller needs them too (a cluster child answers the primary from them). */
  metrics?: Metrics;
  /** What `/metrics` answers, when not this process's metrics alone (a cluster child: the whole instance's). */
  metricsText?: () => Promise<string>;
  /** `serve --role workers`: only `/healthz`, `/readyz` and `/metrics`, for its container's health check and scraping. */
  opsOnly?: boolean;
}

/**
 * Whether the answer goes out before the request's body was read (a 401, 413, 415…): the rest of
 * that body is still on the connection, so it must close rather than carry the next request.
 */
function bodyLeftUnread(c: Context<AppEnv>): boolean {
  const length = c.req.header('content-length');
  const hasBody = (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
  return hasBody && c.req.bodyCache.text === undefined && c.req.bodyCache.arrayBuffer === undefined;
}

export function createApp(services: Services, options: AppOptions = {}) {
  const app = createRouter();

  const clock = options.clock ?? services.clock;
  app.use('*', answerHeaders(() => services.ids('request')));
  app.use('*', async (c, next) => {
    await next();
    if (options.draining?.() || bodyLeftUnread(c)) c.res.headers.set('Connection', 'close');
  });
  const idempotencyStore = createIdempotencyStore(services.db, { holder: services.processMark.id, leaseMs: services.config.claimLeaseMs });
  app.use('*', async (c, next) => {
    c.set('commands', services.commands);
    c.set('queries', services.queries);
    c.set('clock', clock);
    c.set('ids', services.ids);
    c.set('logger', services.logger);
    c.set('idempotencyStore', idempotencyStore);
    await next();
  });
  app.use('*', requestLog);
  const ops = registerOps(app, services, options.metrics, options.metricsText, options.stopping);
  app.use('*', ops.measure);
  if (!options.opsOnly) registerApi(app, services, clock);

  app.notFound(notFoundHandler(() => app.routes));
  app.onError((error, c) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500) {
      services.logger.error({ err: error, request_id: c.get('requestId') }, 'request failed');
    }
    return errorResponse(c, apiError);
  });
  return app;
}

/** Docs, the dashboard and `/api/v1` with its middleware (see `createApp`). */
function registerApi(app: ReturnType<typeof createRouter>, services: Services, clock: Clock) {
  registerDocs(app);
  registerDashboard(app);
  app.use('/api/*', preflight);
  app.use('/api/v1/*', publicKeyCors);
  app.use('/api/v1/*', authenticate((hash) => services.principals.lookup(hash, (h) => services.queries.access.principalByKeyHash(h))));
  const { config, database } = services;
  const privatePolicy = { rps: config.rateLimitRps, burst: config.rateLimitBurst };
  const publicPolicy = { rps: config.publicRateLimitRps, burst: config.publicRateLimitBurst };
  const limits = {
    private: { name: 'api-key', policy: privatePolicy, store: rateLimitStore(database, privatePolicy) },
    public: { name: 'public-key', policy: publicPolicy, store: rateLimitStore(database, publicPolicy) },
  };
  app.use('/api/v1/*', rateLimit(limits, clock));
  app.use('/api/v1/*', bodySize);
  app.use('/api/v1/*', storableUrl);
  app.use('/api/v1/*', jsonBody);

  app.route('/api/v1', customerRoutes);
  app.route('/api/v1', pointsRoutes);
  app.route('/api/v1', keyRoutes);
  app.route('/api/v1', tierRoutes);
  app.route('/api/v1', programRoutes);
  app.route('/api/v1', eventTypeRoutes);
  app.route('/api/v1', rewardRoutes);
  app.route('/api/v1', redemptionRoutes);
  app.route('/api/v1', eventRoutes);
  app.route('/api/v1', webhookRoutes);
  app.route('/api/v1', meRoutes);
  app.route('/api/v1', statsRoutes);
  app.route('/api/v1', rulePreviewRoutes);
  app.route('/api/v1', customerAuditRoutes);
}

export type App = ReturnType<typeof createApp>;
