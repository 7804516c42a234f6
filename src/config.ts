import path from 'node:path';
import { DEFAULT_PREPARE_THRESHOLD } from './db/prepared-statements.js';
import { DEFAULT_KEEP } from './lifecycle/pacing.js';

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
  /** How long a PostgreSQL server may take to answer a query or a connection before the request answers 503. */
  databaseTimeoutMs: number;
  /** LOYALTY_DB_PREPARE_THRESHOLD: runs of one statement text after which it is sent prepared; 0: never. */
  databasePrepareThreshold: number;
  /** Connections each process may open to a PostgreSQL server (its pool's size). */
  databasePoolSize: number;
  /** LOYALTY_STATE_CACHE_LOTS: lots (and other ledger lines) the customer states held in memory may hold between them, per process. */
  stateCacheLots: number;
  /** LOYALTY_WEBHOOK_ALLOW_PRIVATE=1: webhooks may target private addresses and plain http (development, tests). */
  webhookAllowPrivate: boolean;
  /** Token bucket per API key: sustained requests per second (0 turns rate limiting off)… */
  rateLimitRps: number;
  /** …and how many may come at once after a quiet spell (the bucket's size). */
  rateLimitBurst: number;
  /** The same for each public key, whose bucket every browser visitor using it shares. */
  publicRateLimitRps: number;
  publicRateLimitBurst: number;
  /**
   * How long a claim (an Idempotency-Key being answered, a webhook message being delivered) holds
   * while the process holding it is alive but silent; the claims of a process that died are taken
   * over at once (`LOYALTY_CLAIM_LEASE_MS`).
   */
  claimLeaseMs: number;
  /**
   * LOYALTY_LIFECYCLE_KEEP: the share (percent) of their undisturbed rate that requests and other
   * writers keep while the lifecycle scheduler works through due work (`Pacer`); 0: it runs flat out.
   */
  lifecycleKeepPercent: number;
  /**
   * After SIGTERM/SIGINT, how long the API keeps serving as usual (keep-alive included) with
   * `/readyz` answering 503 `stopping`, before it stops accepting and drains: the time a load
   * balancer needs to stop sending it new connections.
   */
  shutdownDelayMs: number;
  /** LOYALTY_PROCESSES: HTTP processes of `loyalty serve` on a PostgreSQL server; unset: one per core (see `--processes`). */
  processes: number | undefined;
}

/** More HTTP processes than any machine has cores is a typo, not a plan. */
const MAX_PROCESSES = 1024;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const rateLimitRps = intSetting(env, 'LOYALTY_RATE_LIMIT_RPS', 100);
  const rateLimitBurst = intSetting(env, 'LOYALTY_RATE_LIMIT_BURST', 200, { min: 1 });
  return {
    port: intSetting(env, 'PORT', 3000, { max: 65_535 }),
    host: env.HOST || '0.0.0.0',
    databaseUrl: databaseUrlSetting(env),
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    dataDir: path.resolve(env.LOYALTY_DATA_DIR || './data'),
    logLevel: logLevelSetting(env),
    // setTimeout holds at most 2^31 - 1 ms; past that Node would wait 1 ms instead.
    readYourWritesTimeoutMs: intSetting(env, 'LOYALTY_RYW_TIMEOUT_MS', 5000, { max: 2_147_483_647 }),
    databaseTimeoutMs: intSetting(env, 'LOYALTY_DB_TIMEOUT_MS', 5000, { min: 1, max: 2_147_483_647 }),
    databasePrepareThreshold: intSetting(env, 'LOYALTY_DB_PREPARE_THRESHOLD', DEFAULT_PREPARE_THRESHOLD, { min: 0, max: 1_000_000 }),
    databasePoolSize: intSetting(env, 'LOYALTY_DB_POOL_SIZE', 20, { min: 1, max: 1000 }),
    stateCacheLots: intSetting(env, 'LOYALTY_STATE_CACHE_LOTS', 200_000, { min: 1_000, max: 100_000_000 }),
    claimLeaseMs: intSetting(env, 'LOYALTY_CLAIM_LEASE_MS', 60_000, { min: 1_000, max: 2_147_483_647 }),
    lifecycleKeepPercent: intSetting(env, 'LOYALTY_LIFECYCLE_KEEP', Math.round(DEFAULT_KEEP * 100), { max: 95 }),
    shutdownDelayMs: intSetting(env, 'LOYALTY_SHUTDOWN_DELAY_MS', 0, { max: 60_000 }),
    webhookAllowPrivate: env.LOYALTY_WEBHOOK_ALLOW_PRIVATE === '1',
    rateLimitRps,
    rateLimitBurst,
    publicRateLimitRps: intSetting(env, 'LOYALTY_PUBLIC_RATE_LIMIT_RPS', rateLimitRps),
    publicRateLimitBurst: intSetting(env, 'LOYALTY_PUBLIC_RATE_LIMIT_BURST', rateLimitBurst, { min: 1 }),
    processes: env.LOYALTY_PROCESSES?.trim() ? intSetting(env, 'LOYALTY_PROCESSES', 1, { min: 1, max: MAX_PROCESSES }) : undefined,
  };
}

/**
 * A setting the service cannot start with. The message names the variable and says what it must
 * be; it never repeats a `DATABASE_URL` (which may hold a password). The CLI prints it as one line
 * and exits 2.
 *
 * @example
 * loadConfig({ PORT: 'abc' }); // ConfigError: PORT must be an integer from 0 to 65535 (0: any free port); it is "abc".
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * How many HTTP processes `loyalty serve` runs: `--processes` (`flag`), else LOYALTY_PROCESSES,
 * else one per core (`cores`) on a PostgreSQL server elsewhere, and one per core but one when the
 * server runs on this machine (it needs a core of its own: on 2 cores shared with it, 2 HTTP
 * processes did about half the earns of 1, docs/performance.md). The embedded store has a single
 * owner (PGlite), so there more than one is refused.
 *
 * @example
 * servingProcesses(loadConfig({ DATABASE_URL: url }), '4', 2); // 4
 * servingProcesses(loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/loyalty' }), undefined, 2); // 1
 * servingProcesses(loadConfig({}), '4', 2); // ConfigError: --processes 4 needs a PostgreSQL server…
 */
export function servingProcesses(config: Config, flag: string | undefined, cores: number): number {
  const requested = flag === undefined ? config.processes : intSetting({ '--processes': flag }, '--processes', 1, { min: 1, max: MAX_PROCESSES });
  if (config.databaseUrl) return requested ?? (databaseIsLocal(config.databaseUrl) ? Math.max(1, cores - 1) : cores);
  if (requested !== undefined && requested > 1) {
    const name = flag === undefined ? 'LOYALTY_PROCESSES' : '--processes';
    throw new ConfigError(
      name,
      `${name} ${requested} needs a PostgreSQL server (DATABASE_URL): one process owns the embedded store (PGlite), so it serves with one; use 1, or set DATABASE_URL.`,
    );
  }
  return 1;
}

/**
 * Whether `loyalty serve` (role `all`, on a PostgreSQL server) runs its workers (projections,
 * webhook delivery, the lifecycle scheduler) in a process of their own beside its HTTP processes:
 * always beside several; beside one too when nobody chose the count (no `--processes`, no
 * LOYALTY_PROCESSES) and the machine has more than one core. An explicit one means one process
 * (a container that runs `serve --role workers` elsewhere, tests that kill "the" process). On 2
 * cores beside PostgreSQL, one HTTP process with the workers apart did about 1.1× the earns of
 * everything in one process, and due work no longer takes the thread that answers
 * (docs/performance.md).
 */
export function workersApart(config: Config, flag: string | undefined, cores: number): boolean {
  const processes = servingProcesses(config, flag, cores);
  if (processes > 1) return true;
  return config.databaseUrl !== undefined && flag === undefined && config.processes === undefined && cores > 1;
}

/** Whether the PostgreSQL server of `url` runs on this machine: a loopback host, or a Unix socket (no host, or a path). */
export function databaseIsLocal(url: string): boolean {
  let host: string;
  try {
    const parsed = new URL(url);
    host = decodeURIComponent(parsed.hostname || parsed.searchParams.get('host') || '');
  } catch {
    return false;
  }
  return host === '' || host.startsWith('/') || host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** An unset or empty variable takes `fallback`; anything but a whole number in [min, max] is refused. */
function intSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const value = env[name]?.trim();
  if (!value) return fallback;
  // Decimal digits only: Number() would also take '0x10', '1e3' and ' '.
  const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n;
  const range = max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `an integer from ${min} to ${max}`;
  throw new ConfigError(name, `${name} must be ${range}${name === 'PORT' ? ' (0: any free port)' : ''}; it is ${JSON.stringify(value)}.`);
}

const LOG_LEVELS = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'];

function logLevelSetting(env: NodeJS.ProcessEnv): string {
  const level = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError('LOG_LEVEL', `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; it is ${JSON.stringify(level)}.`);
  return level;
}

/** `postgres://` or `postgresql://` URLs only: what is not one would fail deep in the driver, with a stack trace. */
function databaseUrlSetting(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.DATABASE_URL || undefined;
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
    // The driver decodes user name and password; a stray % would throw there.
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new ConfigError('DATABASE_URL', 'DATABASE_URL is not a PostgreSQL URL (postgres://user:password@host:5432/database); unset it to use the embedded store.');
  }
  return value;
}
