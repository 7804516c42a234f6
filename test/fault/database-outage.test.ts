import { expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CONNECT_TIMEOUT_MS } from '../../src/db/database.js';
import { api } from '../e2e/process-helpers.js';
import { describeWithOwnCluster } from '../support/own-postgres.js';
import { earn } from './earn-request.js';
import { type Attempt, describeAttempt, EarnLoad, useEarningService } from './earning-service.js';
import { expectReadModelsToMatchLog, laggingProjections, loggedMovements, withClient } from './log-checks.js';

const CUSTOMERS = 3;
const WRITERS = 6;
/** Stop the database once this many earns are acknowledged: the writers are in full swing. */
const STOP_AFTER_ACKS = 30;
/** Answers each writer must get while the database is down, and acknowledgements after it is back. */
const ANSWERS_PER_PHASE = 3;
/**
 * A request while the database is down must be answered within the pool's connection timeout
 * plus a margin: a bound that says "no hang", not a speed target.
 */
const DOWN_ANSWER_BOUND_MS = CONNECT_TIMEOUT_MS + 2_000;
/** A request in flight when the database went down may first wait for read-your-writes (its write committed). */
const IN_FLIGHT_ANSWER_BOUND_MS = loadConfig({}).readYourWritesTimeoutMs + DOWN_ANSWER_BOUND_MS;
/**
 * The lease of an idempotency key and of a webhook message's claim (`LOYALTY_CLAIM_LEASE_MS`; 60 s
 * by default). Those held when the database died stay held until it runs out: the retries and the
 * deliveries below wait for it, and what they check is the same with a shorter one. It still
 * outlasts any request (each is answered within IN_FLIGHT_ANSWER_BOUND_MS), and no retry is sent
 * before every first attempt has been answered.
 */
const CLAIM_LEASE_MS = 15_000;
/** How long a retry keeps trying: a key claimed when the database died stays held for its lease. */
const RETRY_DEADLINE_MS = CLAIM_LEASE_MS + 30_000;

/** A message the dispatcher had claimed when the database died is delivered once its claim expires. */
const WEBHOOK_DEADLINE_MS = CLAIM_LEASE_MS + 15_000;

type Phase = 'up' | 'stopping' | 'down' | 'starting' | 'recovered';

describeWithOwnCluster('database stopped mid-load', () => {
  const service = useEarningService(CUSTOMERS, 'outage', { LOYALTY_CLAIM_LEASE_MS: String(CLAIM_LEASE_MS) });
  const load = new EarnLoad<Phase>(service, WRITERS, 'outage', 'up');
  const { attempts } = load;

  it('answers 503 `unavailable` without hanging while the database is down, stays alive, and recovers by itself', async () => {
    const { cluster, server } = service;
    load.start();
    try {
      await load.untilAcknowledged(STOP_AFTER_ACKS);

      load.phase = 'stopping';
      await cluster.stop('immediate');
      load.phase = 'down';
      await load.untilEachWriterAnswered('down', ANSWERS_PER_PHASE);
      // The process is up and says so; it is not ready (its store is unreachable).
      expect(server.child.exitCode, server.stderr).toBeNull();
      expect((await api(server.baseUrl, 'GET', '/healthz')).status).toBe(200);
      const readiness = await api(server.baseUrl, 'GET', '/readyz');
      expect(readiness.status).toBe(503);
      expect(readiness.body.status).toBe('unavailable');

      load.phase = 'starting';
      await cluster.start();
      load.phase = 'recovered';
      // Same process, no restart: every writer gets acknowledgements again.
      await load.untilEachWriterAcknowledged('recovered', ANSWERS_PER_PHASE);
    } finally {
      await load.stop();
    }

    // Only acknowledgements and 503 `unavailable`; while down, with Retry-After, each within the bound.
    load.expectAcknowledgedOrUnavailable('down', WRITERS * ANSWERS_PER_PHASE, DOWN_ANSWER_BOUND_MS, IN_FLIGHT_ANSWER_BOUND_MS);
    expect(server.child.exitCode, server.stderr).toBeNull();
  }, 120_000);

  it('keeps every acknowledged write exactly once; the read models catch up from their checkpoints and match the log', async () => {
    await load.expectAcknowledgedOnceInLog();
  });

  it('applies a write whose outcome the client did not learn once, when it is retried with its Idempotency-Key', async () => {
    const { cluster, server, key } = service;
    const acknowledged = new Map(attempts.filter((a) => a.status === 201).map((a) => [a.idempotencyKey, a.transactionId]));
    const unknown = [...new Map(attempts.filter((a) => !acknowledged.has(a.idempotencyKey)).map((a) => [a.idempotencyKey, a])).values()];
    expect(unknown.length).toBeGreaterThanOrEqual(WRITERS * ANSWERS_PER_PHASE);
    const deadline = Date.now() + RETRY_DEADLINE_MS;
    const retryUntilAcknowledged = async (first: Attempt<Phase>) => {
      for (;;) {
        const answer = await earn(server.baseUrl, key, first.customerId, first.idempotencyKey);
        if (answer.status === 201) return acknowledged.set(first.idempotencyKey, answer.transactionId);
        // 409: the key is still held by the request that was running when the database died.
        const retryable = (answer.status === 409 && answer.code === 'idempotency_key_in_progress') || answer.status === 503;
        if (!retryable || Date.now() > deadline) {
          throw new Error(`retry of ${first.idempotencyKey} answered ${answer.status} ${answer.code ?? answer.error}`);
        }
        await new Promise((r) => setTimeout(r, (answer.retryAfterSeconds ?? 1) * 1000));
      }
    };
    await Promise.all(unknown.map(retryUntilAcknowledged));

    await withClient(cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 30_000, interval: 100 });
      const movements = await loggedMovements(client);
      // Each Idempotency-Key was applied exactly once: the transaction its (last) 201 names.
      const appliedTwice = [...acknowledged].flatMap(([idempotencyKey, transactionId]) => {
        const applied = movements.filter((m) => m.idempotencyKey === idempotencyKey).map((m) => m.transactionId);
        if (applied.length === 1 && applied[0] === transactionId) return [];
        const first = attempts.filter((a) => a.idempotencyKey === idempotencyKey).map(describeAttempt);
        return [`${idempotencyKey}: applied as ${applied.join(', ')}; the retry's 201 named ${transactionId}; first tries: ${first.join('; ')}`];
      });
      expect(appliedTwice).toEqual([]);
      expect(movements).toHaveLength(acknowledged.size);
      await expectReadModelsToMatchLog(client);
    });
  }, RETRY_DEADLINE_MS + 30_000);

  it('delivers every stored event of the subscribed type once the database is back (webhooks resume from their checkpoint)', async () => {
    const { cluster, receiver } = service;
    const transactionIds = await withClient(cluster.url, async (client) => {
      const ids = (await loggedMovements(client)).map((m) => m.transactionId);
      await vi.waitFor(
        async () => {
          const delivered = new Set(receiver.received.map((r) => r.payload?.data?.transaction_id as string));
          const missing = ids.filter((id) => !delivered.has(id));
          const { rows } = await client.query(
            `select status, attempts, locked_until, next_attempt_at from webhook_messages where payload::jsonb->'data'->>'transaction_id' = any($1)`,
            [missing],
          );
          expect(missing, JSON.stringify(rows)).toEqual([]);
        },
        { timeout: WEBHOOK_DEADLINE_MS, interval: 200 },
      );
      return ids;
    });
    // One message per event: a redelivery repeats its webhook-id, so distinct ids count messages.
    const messageIds = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    expect(messageIds.size).toBe(transactionIds.length);
    const receivedTypes = new Set(receiver.types());
    expect([...receivedTypes]).toEqual(['points.earned']);
  }, WEBHOOK_DEADLINE_MS + 15_000);
});
