import pino, { type Logger } from 'pino';
import { apiKeyCommands } from './commands/api-key/api-key-commands.js';
import { businessCommands } from './commands/business/business-commands.js';
import { commandDeps } from './commands/command-bus.js';
import { ConflictRetries } from './commands/conflict-retries.js';
import { customerCommands } from './commands/customer/customer-commands.js';
import { cachedWeight } from './commands/customer/customer-state.js';
import { eventCommands } from './commands/customer/event-commands.js';
import { lifecycleCommands } from './commands/customer/lifecycle-commands.js';
import { redemptionCommands } from './commands/customer/redemption-commands.js';
import { programCommands } from './commands/program/program-commands.js';
import { rewardCommands } from './commands/reward/reward-commands.js';
import { KeyedLock } from './commands/keyed-lock.js';
import { snapshotStore } from './commands/snapshot-store.js';
import { StateCache } from './commands/state-cache.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { type IdGenerator, newId } from './ids.js';
import { assertReachable, type DatabaseHandle, openDatabase } from './db/database.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { migrateToLatest } from './db/migrations.js';
import { type Listener, listen } from './db/listen.js';
import { PrincipalCache } from './projections/access/principal-cache.js';
import { ProcessMark } from './db/process-mark.js';
import { accessQueries } from './projections/access/access-queries.js';
import { catalogQueries } from './projections/catalog/catalog-queries.js';
import { customerQueries } from './projections/customers/customers-queries.js';
import { Projections } from './projections/projections.js';
import { PROJECTED_CHANNEL } from './projections/runner.js';
import { PROJECTORS } from './projectors.js';
import { statsQueries } from './projections/stats/stats-queries.js';
import { openEventStore } from './store/open-event-store.js';
import type { Checkpoint } from './store/event-store.js';
import { webhookCommands } from './commands/webhook/webhook-commands.js';
import { type DispatcherOptions, WebhookDispatcher } from './webhooks/dispatcher.js';
import { webhookSecrets } from './webhooks/secrets.js';
import { assertDeliverableUrl } from './webhooks/url-guard.js';
import { webhookQueries } from './webhooks/webhook-queries.js';
import { auditStore } from './audit/audit-store.js';
import { customerAsWritten } from './projections/customers/customer-as-written.js';
import { customerEvents } from './projections/customers/customer-events.js';
import { referenceOriginals } from './projections/reference-originals.js';
import { LifecycleScheduler, type SchedulerOptions } from './lifecycle/scheduler.js';
import { applyDueThroughCommands } from './lifecycle/apply-due.js';

export interface ServicesOptions {
  config: Config;
  /** An already open database (tests); otherwise opened from the config. */
  database?: DatabaseHandle;
  logger?: Logger;
  /** Run projection loops in this process (the server); the CLI catches up on demand instead. */
  runProjections?: boolean;
  /** With runProjections: also deliver webhooks (default true). Tests drive the dispatcher by hand. */
  runDispatcher?: boolean;
  /** With runProjections: also run the lifecycle scheduler (default true). Tests move the clock and drive it by hand. */
  runScheduler?: boolean;
  /**
   * Other processes run the projection loops (`serve --role api`): read-your-writes waits for their
   * checkpoints in PostgreSQL instead of applying events itself.
   */
  projectionsElsewhere?: boolean;
  /** Overrides for the webhook dispatcher. */
  dispatcher?: Partial<DispatcherOptions>;
  /** Overrides for the lifecycle scheduler (batch size). */
  scheduler?: Partial<SchedulerOptions>;
  /** Where time comes from, everywhere (default: the system clock). */
  clock?: Clock;
  /** Where ids come from, everywhere (default: `newId`). */
  ids?: IdGenerator;
  /**
   * Tells the other processes of this instance that a key was revoked, resolving once each has
   * cleared its principal cache (a child of `loyalty serve` asks its primary).
   */
  forgetPrincipals?: () => Promise<void>;
}

/**
 * The composition root: opens the stores, migrates, and wires commands, queries and projections.
 *
 * @example
 * const services = await createServices({ config: loadConfig(), runProjections: true });
 * const app = createApp(services);
 */
export async function createServices(options: ServicesOptions) {
  const { config } = options;
  const logger = options.logger ?? pino({ level: config.logLevel });
  const unlock = options.database || config.databaseUrl ? () => {} : lockDataDir(config.dataDir);
  let database: DatabaseHandle;
  try {
    database = options.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, timeoutMs: config.databaseTimeoutMs, poolSize: config.databasePoolSize, prepareThreshold: config.databasePrepareThreshold, logger }));
    if (!options.database && config.databaseUrl) await assertReachable(database, config.databaseUrl);
    await migrateToLatest(database.db);
  } catch (error) {
    unlock();
    throw error;
  }
  const processMark = await ProcessMark.take(database, logger);
  /** What `close` ends last, and what a start that fails past this point must end too. */
  const releaseStores = async () => {
    await processMark.close();
    await database.close();
    unlock();
  };
  const server = database.kind === 'postgres';
  let eventLog: Awaited<ReturnType<typeof openEventStore>>;
  try {
    eventLog = await openEventStore(config.eventStoreUrl, database.db, { server, signalAppends: server && (options.projectionsElsewhere ?? false) });
  } catch (error) {
    await releaseStores();
    throw error;
  }
  const store = eventLog.store;
  const clock = options.clock ?? systemClock;
  const projections = new Projections(database.db, store, PROJECTORS, {
    logger,
    now: () => clock.now(),
    settleTimeoutMs: config.readYourWritesTimeoutMs,
    settleByCheckpoints: options.projectionsElsewhere ?? false,
    // On a server, every projection batch announces its checkpoints, and API processes listen.
    announce: server,
    ...(options.projectionsElsewhere && config.databaseUrl
      ? { listenForCheckpoints: (listener: Listener) => listen(config.databaseUrl!, PROJECTED_CHANNEL, listener, logger) }
      : {}),
  });
  const access = accessQueries(database.db);
  const principals = new PrincipalCache();
  /** A key was revoked: every process of this instance forgets its principals before this resolves (CONTRACT.md §2, §12). */
  async function keysRevoked(): Promise<void> {
    principals.clear();
    await options.forgetPrincipals?.();
  }
  const ids = options.ids ?? newId;
  const conflicts = new ConflictRetries();
  // At most 50,000 states, and at most LOYALTY_STATE_CACHE_LOTS lots among them (200,000 by default, about 55 MB: 273
  // bytes a lot, measured; a customer's other ledger lines and redemptions weigh as lots, though each holds about half
  // as much): a customer's state grows with its history. One customer heavier than that alone stays beside them while
  // in use (`StateCache.evict`). The count bound is above what one pass of the lifecycle scheduler touches (the row due
  // at once: 10,000 customers) plus the requests' customers. The default keeps a server under load within the soak
  // row's 300 MB when its customers hold a few hundred lots each (220,000 took it to 270 MB; docs/performance.md,
  // session of 2026-11-29).
  const stateCache = new StateCache(50_000, snapshotStore(database.db), { weigh: cachedWeight, max: config.stateCacheLots });
  const busParts = {
    store,
    ids,
    clock,
    locks: new KeyedLock(),
    cache: stateCache,
    settle: (p: Checkpoint) => projections.settle(p),
    conflicts,
  };
  const deps = commandDeps(busParts);
  const secrets = webhookSecrets(database.db);
  const customerReads = customerQueries(database.db);
  const catalog = catalogQueries(database.db);
  const webhookReads = webhookQueries(database.db);
  const webhooks = webhookCommands(deps, {
    secrets,
    checkUrl: (url) => assertDeliverableUrl(url, config.webhookAllowPrivate),
    async queueTest(businessId, webhookId, messageId, now) {
      await webhookReads.enqueueTest(businessId, webhookId, messageId, now);
      dispatcher.wake();
    },
  });
  const dispatcher = new WebhookDispatcher(database.db, {
    secrets,
    allowPrivate: config.webhookAllowPrivate,
    logger,
    now: () => clock.now(),
    ids,
    onGone: (webhookId) => webhooks.disableGone(webhookId, clock.now()),
    holder: processMark.id,
    claimMs: config.claimLeaseMs,
    ...options.dispatcher,
  });
  const customers = customerCommands(deps);
  const lifecycle = lifecycleCommands(deps);
  // The scheduler answers nobody: its appends need not wait for the read models (read-your-writes).
  const scheduler = new LifecycleScheduler(database.db, {
    applyDue: applyDueThroughCommands(lifecycleCommands(commandDeps({ ...busParts, settle: async () => {} }))),
    // …but the next round waits for the read models to include this one (see `SchedulerOptions.settle`).
    settle: (p: Checkpoint) => projections.settle(p),
    logHead: () => store.headPosition(),
    now: () => clock.now(),
    holder: processMark.id,
    claimMs: config.claimLeaseMs,
    logger,
    keep: config.lifecycleKeepPercent / 100,
    ...options.scheduler,
  });
  if (options.runProjections) {
    projections.start();
    if (options.runDispatcher ?? true) dispatcher.start();
    if (options.runScheduler ?? true) scheduler.start();
  }

  return {
    config,
    clock,
    ids,
    logger,
    database,
    db: database.db,
    processMark,
    store,
    projections,
    commands: {
      businesses: businessCommands(deps),
      apiKeys: apiKeyCommands(deps, { keyManagers: (businessId) => access.keyManagerIds(businessId), revoked: keysRevoked }),
      customers,
      program: programCommands(deps),
      rewards: rewardCommands(deps),
      events: eventCommands(deps),
      redemptions: redemptionCommands(deps),
      lifecycle,
      webhooks,
    },
    queries: {
      access,
      customers: customerReads,
      catalog,
      webhooks: webhookReads,
      stats: statsQueries(database.db),
      /** A customer as a write of its profile just left it, even while the read models lag. */
      customerAsWritten: customerAsWritten(customerReads, store),
      /** A customer's raw events, a page at a time. */
      customerEvents: customerEvents(store),
      /** What a reused reference was first used for, once the read models include it. */
      original: referenceOriginals({ customers: customerReads, catalog }, (p) => projections.settle(p)),
      /** One customer's hash-chain check and read-model diff (`loyalty audit verify --customer`). */
      audit: (customerId: string) => auditStore(database.db, store, { customerId }),
    },
    dispatcher,
    /** The lifecycle scheduler (CONTRACT.md §13): due work by the `customer_due` index. */
    scheduler,
    /** Changes decided again because another writer moved a stream first (`/metrics`). */
    conflicts,
    /** Folded states in memory, and where each load found its state (`/metrics`). */
    stateCache,
    principals,
    async close() {
      await scheduler.stop();
      await dispatcher.stop();
      await projections.stop();
      await eventLog.close();
      await releaseStores();
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
/** The command handlers, as the edges (HTTP, CLI) call them. */
export type Commands = Services['commands'];
/** The read side, as the edges call it. */
export type Queries = Services['queries'];
