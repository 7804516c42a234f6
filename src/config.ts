import path from 'node:path';

/** Everything the service reads from the environment, in one place (see README "Configuration"). */
export interface Config {
  port: number;
  host: string;
  /** PostgreSQL server; when absent the embedded PGlite store under `dataDir` is used. */
  databaseUrl: string | undefined;
  /** KurrentDB for the event log (`kurrentdb://…`); PostgreSQL then holds only read models and checkpoints. */
  eventStoreUrl: string | undefined;
  dataDir: string;
  logLevel: string;
  /** Max time a write waits for the read models to catch up before answering (read-your-writes). */
  readYourWritesTimeoutMs: number;
  /** LOYALTY_WEBHOOK_ALLOW_PRIVATE=1: webhooks may target private addresses and plain http (development, tests). */
  webhookAllowPrivate: boolean;
  /** Token bucket per API key: sustained requests per second (0 turns rate limiting off)… */
  rateLimitRps: number;
  /** …and how many may come at once after a quiet spell (the bucket's size). */
  rateLimitBurst: number;
  /** The same for each public key, whose bucket every browser visitor using it shares. */
  publicRateLimitRps: number;
  publicRateLimitBurst: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: intOr(env.PORT, 3000),
    host: env.HOST || '0.0.0.0',
    databaseUrl: env.DATABASE_URL || undefined,
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    dataDir: path.resolve(env.LOYALTY_DATA_DIR || './data'),
    logLevel: env.LOG_LEVEL || 'info',
    readYourWritesTimeoutMs: intOr(env.LOYALTY_RYW_TIMEOUT_MS, 5000),
    webhookAllowPrivate: env.LOYALTY_WEBHOOK_ALLOW_PRIVATE === '1',
    rateLimitRps: intOr(env.LOYALTY_RATE_LIMIT_RPS, 100),
    rateLimitBurst: Math.max(1, intOr(env.LOYALTY_RATE_LIMIT_BURST, 200)),
    publicRateLimitRps: intOr(env.LOYALTY_PUBLIC_RATE_LIMIT_RPS, intOr(env.LOYALTY_RATE_LIMIT_RPS, 100)),
    publicRateLimitBurst: Math.max(1, intOr(env.LOYALTY_PUBLIC_RATE_LIMIT_BURST, intOr(env.LOYALTY_RATE_LIMIT_BURST, 200))),
  };
}

function intOr(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value && Number.isInteger(n) && n >= 0 ? n : fallback;
}
