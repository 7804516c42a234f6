import { expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { api } from '../e2e/process-helpers.js';
import { describeWithOwnCluster } from '../support/own-postgres.js';
import { EarnLoad, useEarningService } from './earning-service.js';

const CUSTOMERS = 2;
const WRITERS = 4;
/** Freeze the database once this many earns are acknowledged: the writers are in full swing. */
const FREEZE_AFTER_ACKS = 20;
/** Answers each writer must get while the database is frozen, and acknowledgements once it is thawed. */
const ANSWERS_PER_PHASE = 2;
const defaults = loadConfig({});
/**
 * A request sent while the database is frozen is answered within 6 s (issue 12): the database
 * deadline (`LOYALTY_DB_TIMEOUT_MS`, 5 s by default) plus a margin. A bound that says "no hang".
 */
const FROZEN_ANSWER_BOUND_MS = 6_000;
/**
 * A request in flight when the database froze may first wait for read-your-writes (its write
 * committed), then for the deadline of the query storing its idempotency record.
 */
const IN_FLIGHT_ANSWER_BOUND_MS = defaults.readYourWritesTimeoutMs + defaults.databaseTimeoutMs + 2_000;
/** Once thawed, the same process acknowledges writes again within this. */
const RECOVERY_BOUND_MS = 10_000;
/** Webhook messages of writes made after the thaw are delivered within this (the dispatcher's loop is back). */
const WEBHOOK_BOUND_MS = 20_000;

type Phase = 'up' | 'freezing' | 'frozen' | 'thawing' | 'thawed';

interface Probe {
  what: string;
  status: number | null;
  code: string | undefined;
  retryAfterSeconds: number | undefined;
  ms: number;
  error?: string;
}

const describeProbe = (p: Probe) => `${p.what}: ${p.status ?? p.error} ${p.code ?? ''} in ${Math.round(p.ms)} ms`;

/** One request, timed; aborted (and reported as such) after `abortMs` rather than hanging the test. */
async function timed(baseUrl: string, method: string, path: string, key?: string, body?: unknown, abortMs = 30_000): Promise<Probe> {
  const what = `${method} ${path}`;
  const started = performance.now();
  try {
    const response = await fetch(baseUrl + path, {
      method,
      headers: { ...(key ? { 'x-api-key': key } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(abortMs),
    });
    const text = await response.text();
    const retryAfter = response.headers.get('retry-after');
    return {
      what,
      status: response.status,
      code: text ? (JSON.parse(text) as { code?: string }).code : undefined,
      retryAfterSeconds: retryAfter === null ? undefined : Number(retryAfter),
      ms: performance.now() - started,
    };
  } catch (error) {
    return { what, status: null, code: undefined, retryAfterSeconds: undefined, ms: performance.now() - started, error: String(error) };
  }
}

/**
 * A PostgreSQL server that stops answering without refusing anything (every process of the cluster
 * SIGSTOPped: a hung host, a network partition that drops packets). `statement_timeout` cannot fire
 * in a stopped server and TCP keepalive is answered by its kernel, so only a deadline on the
 * service's side keeps requests from hanging.
 */
describeWithOwnCluster('database frozen mid-load (SIGSTOP)', () => {
  const service = useEarningService(CUSTOMERS, 'frozen');
  const load = new EarnLoad<Phase>(service, WRITERS, 'frozen', 'up');

  it('answers 503 `unavailable` within 6 s while the database is frozen, stays up, and writes again once it is thawed', async () => {
    const { cluster, server, key, customerIds } = service;
    load.start();
    const probes: Probe[] = [];
    let thawedAt = 0;
    const thaw = () => {
      if (load.phase !== 'freezing' && load.phase !== 'frozen') return;
      load.phase = 'thawing';
      cluster.thaw();
      thawedAt = performance.now();
      load.phase = 'thawed';
    };
    try {
      await load.untilAcknowledged(FREEZE_AFTER_ACKS);

      load.phase = 'freezing';
      await cluster.freeze();
      load.phase = 'frozen';
      // Reads and writes of other kinds, sent while it is frozen (besides the writers' earns).
      probes.push(
        ...(await Promise.all([
          timed(server.baseUrl, 'GET', `/api/v1/customers/${customerIds[0]}`, key),
          timed(server.baseUrl, 'GET', '/api/v1/customers?limit=5', key),
          timed(server.baseUrl, 'GET', '/api/v1/tiers', key),
          timed(server.baseUrl, 'POST', '/api/v1/customers', key, { email: 'during-freeze@example.com' }),
        ])),
      );
      await load.untilEachWriterAnswered('frozen', ANSWERS_PER_PHASE);
      // Later requests too (after whatever the service learnt from the first ones).
      probes.push(await timed(server.baseUrl, 'GET', `/api/v1/customers/${customerIds[1]}/transactions`, key));
      probes.push(
        await timed(server.baseUrl, 'POST', `/api/v1/customers/${customerIds[1]}/points/transaction`, key, { type: 'earn', amount: 5, reference: 'frozen-ref' }),
      );
      // The process is up and says so, at once; it is not ready.
      expect(server.child.exitCode, server.stderr).toBeNull();
      const health = await timed(server.baseUrl, 'GET', '/healthz');
      expect(health.status).toBe(200);
      expect(health.ms).toBeLessThan(1_000);
      const readiness = await timed(server.baseUrl, 'GET', '/readyz');
      expect(readiness.status).toBe(503);
      expect(readiness.ms).toBeLessThan(FROZEN_ANSWER_BOUND_MS);

      thaw();
      // Same process, no restart: every writer gets acknowledgements again.
      await load.untilEachWriterAcknowledged('thawed', ANSWERS_PER_PHASE);
    } finally {
      // Never leave a frozen cluster behind, whatever failed above.
      thaw();
      await load.stop();
    }

    // The other requests sent while frozen: 503 `unavailable` with Retry-After, within the bound.
    const badProbes = probes.filter((p) => p.status !== 503 || p.code !== 'unavailable' || !(p.retryAfterSeconds! > 0) || p.ms > FROZEN_ANSWER_BOUND_MS);
    expect(badProbes.map(describeProbe)).toEqual([]);
    // Only acknowledgements and 503 `unavailable`; while frozen, with Retry-After, each within the bound.
    load.expectAcknowledgedOrUnavailable('frozen', WRITERS * ANSWERS_PER_PHASE, FROZEN_ANSWER_BOUND_MS, IN_FLIGHT_ANSWER_BOUND_MS);
    // Back within seconds of the thaw.
    const firstAck = Math.min(...load.attempts.filter((a) => a.sentIn === 'thawed' && a.status === 201).map((a) => a.at));
    expect(firstAck - thawedAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(server.child.exitCode, server.stderr).toBeNull();
  }, 120_000);

  it('keeps every acknowledged write exactly once, and nothing half-written: the read models catch up and match the log', async () => {
    const { server, receiver, key, customerIds } = service;
    const acknowledged = await load.expectAcknowledgedOnceInLog();
    // The webhook dispatcher's loop is back: what was written after the thaw is delivered. (A
    // message it had claimed when the database froze waits for its claim to expire, 60 s.)
    const afterThaw = acknowledged.filter((a) => a.sentIn === 'thawed').map((a) => a.transactionId);
    await vi.waitFor(
      () => {
        const delivered = new Set(receiver.received.map((r) => r.payload?.data?.transaction_id as string));
        expect(afterThaw.filter((id) => !delivered.has(id!))).toEqual([]);
      },
      { timeout: WEBHOOK_BOUND_MS, interval: 100 },
    );
    // The service reads and writes as before.
    const balance = await api(server.baseUrl, 'GET', `/api/v1/customers/${customerIds[0]}`, { key });
    expect(balance.status).toBe(200);
    const created = await api(server.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: 'after-thaw@example.com' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });
});
