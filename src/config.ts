import path from 'node:path';

/** Everything the service reads from the environment, in one place (see README "Configuration"). */
export interface Config {
  port: number;
  host: string;
  /** PostgreSQL server; when absent the embedded PGlite store under `dataDir` is used. */
  databaseUrl: string | undefined;
  dataDir: string;
  logLevel: string;
  /** Max time a write waits for the read models to catch up before answering (read-your-writes). */
  readYourWritesTimeoutMs: number;
  /** LOYALTY_WEBHOOK_ALLOW_PRIVATE=1: webhooks may target private addresses and plain http (development, tests). */
  webhookAllowPrivate: boolean;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: intOr(env.PORT, 3000),
    host: env.HOST || '0.0.0.0',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.LOYALTY_DATA_DIR || './data'),
    logLevel: env.LOG_LEVEL || 'info',
    readYourWritesTimeoutMs: intOr(env.LOYALTY_RYW_TIMEOUT_MS, 5000),
    webhookAllowPrivate: env.LOYALTY_WEBHOOK_ALLOW_PRIVATE === '1',
  };
}

function intOr(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value && Number.isInteger(n) && n >= 0 ? n : fallback;
}
