import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import pino from 'pino';
import { provisionBusiness, type ProvisionedBusiness } from '../../src/cli/provision.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services, type ServicesOptions } from '../../src/services.js';
import { openTestDatabase } from './test-database.js';
import type { Clock } from '../../src/clock.js';

export interface TestApp {
  services: Services;
  app: ReturnType<typeof createApp>;
  /** A new business with its default private and public keys. */
  business(plan?: 'free' | 'unlimited'): Promise<ProvisionedBusiness>;
  /** One HTTP request through the real app (no network); JSON body in, parsed JSON out. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Every item of a list, following its `Link: rel="next"` pages (each must answer 200). */
  walk(key: string, path: string): Promise<any[]>;
  /** Creates a customer through the API (201 or it throws) and returns its id; by default with an e-mail of its own. */
  newCustomer(key: string, body?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  /** A raw body, sent as is (for malformed-input tests). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface TestAppOptions {
  config?: Partial<Config>;
  /** Run the webhook dispatcher loop (default true); tests of retries drive it by hand instead. */
  runDispatcher?: boolean;
  /** Run the lifecycle scheduler loop (default false): tests move the clock and call `services.scheduler.runOnce()`. */
  runScheduler?: boolean;
  scheduler?: ServicesOptions['scheduler'];
  dispatcher?: ServicesOptions['dispatcher'];
  /** The app's and the services' clock (command times, the rate limiter, the scheduler); rate limiting is off unless `config.rateLimitRps` is set. */
  clock?: Clock;
  /** Where the service logs (default: nowhere); tests of logging pass a pino logger on a stream. */
  logger?: ServicesOptions['logger'];
  /** The database to run on (default: a fresh one, see `openTestDatabase`); closed with the app. */
  database?: ServicesOptions['database'];
}

/** The real service (stores, projections, HTTP app) on a fresh database. Close it in `afterAll`. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await openTestDatabase());
  // Rate limiting off by default: other files send far more than a burst with one key.
  const config = { ...loadConfig({}), logLevel: 'silent', rateLimitRps: 0, publicRateLimitRps: 0, ...options.config };
  const services = await createServices({
    config,
    database,
    runProjections: true,
    runDispatcher: options.runDispatcher ?? true,
    runScheduler: options.runScheduler ?? false,
    scheduler: options.scheduler,
    dispatcher: options.dispatcher,
    ...(options.clock ? { clock: options.clock } : {}),
    logger: options.logger ?? pino({ level: 'silent' }),
  });
  const app = createApp(services, options.clock ? { clock: options.clock } : {});

  return {
    services,
    app,
    business: (plan = 'unlimited') => provisionBusiness(services, `Business ${Math.random().toString(36).slice(2, 8)}`, plan),
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key !== undefined) headers['x-api-key'] = options.key;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await app.request(path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    async walk(this: TestApp, key: string, path: string) {
      const items: any[] = [];
      let next: string | null = path;
      while (next) {
        const page: TestResponse = await this.request('GET', next, { key });
        expect(page.status, page.text).toBe(200);
        items.push(...page.body);
        next = /<([^>]+)>;\s*rel="next"/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
      }
      return items;
    },
    async newCustomer(this: TestApp, key: string, body: Record<string, unknown> = { email: `customer-${randomUUID()}@example.com` }) {
      const created = await this.request('POST', '/api/v1/customers', { key, body });
      expect(created.status, created.text).toBe(201);
      return created.body.id as string;
    },
    close: () => services.close(),
  };
}
