import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { api, killAllProcesses, printedKeys, type ServerProcess, startServer } from '../e2e/process-helpers.js';
import { describeWithOwnCluster, type OwnPostgres, startOwnPostgres } from '../support/own-postgres.js';
import { type Receiver, startReceiver } from '../support/webhook-receiver.js';
import { earn, type EarnAnswer } from './earn-request.js';
import { expectReadModelsToMatchLog, laggingProjections, loggedMovements, withClient } from './log-checks.js';

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

interface Attempt extends EarnAnswer {
  writer: number;
  idempotencyKey: string;
  sentIn: Phase;
  answeredIn: Phase;
  /** When it was answered (performance.now()). */
  at: number;
}

const describeAttempt = (a: Attempt) => `${a.idempotencyKey} ${a.sentIn}→${a.answeredIn}: ${a.status ?? a.error} ${a.code ?? ''} in ${Math.round(a.ms)} ms`;

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
  let cluster: OwnPostgres;
  let server: ServerProcess;
  let receiver: Receiver;
  let key: string;
  const customerIds: string[] = [];
  const attempts: Attempt[] = [];
  let phase: Phase = 'up';

  beforeAll(async () => {
    cluster = await startOwnPostgres();
    receiver = await startReceiver();
    server = await startServer({ env: { DATABASE_URL: cluster.url, LOYALTY_WEBHOOK_ALLOW_PRIVATE: '1', LOYALTY_RATE_LIMIT_RPS: '0' }, dispose: async () => {} });
    key = printedKeys(server.stdout).privateKey!;
    const hook = await api(server.baseUrl, 'POST', '/api/v1/webhooks', { key, body: { url: receiver.url, events: ['points.earned'] } });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    for (let c = 0; c < CUSTOMERS; c++) {
      const created = await api(server.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: `frozen-${c}@example.com` } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      customerIds.push(created.body.id);
    }
  });

  afterAll(async () => {
    cluster?.thaw();
    await killAllProcesses();
    await receiver?.close();
    await cluster?.destroy();
  });

  const answered = (writer: number, sentIn: Phase) => attempts.filter((a) => a.writer === writer && a.sentIn === sentIn && a.answeredIn === sentIn);

  it('answers 503 `unavailable` within 6 s while the database is frozen, stays up, and writes again once it is thawed', async () => {
    let stopWriting = false;
    const writer = async (w: number) => {
      for (let n = 0; !stopWriting; n++) {
        const idempotencyKey = `frozen-w${w}-n${n}`;
        const sentIn = phase;
        const answer = await earn(server.baseUrl, key, customerIds[(w + n) % CUSTOMERS]!, idempotencyKey);
        attempts.push({ ...answer, writer: w, idempotencyKey, sentIn, answeredIn: phase, at: performance.now() });
        if (answer.status !== 201) await new Promise((r) => setTimeout(r, 50));
      }
    };
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    const probes: Probe[] = [];
    let thawedAt = 0;
    const thaw = () => {
      if (phase !== 'freezing' && phase !== 'frozen') return;
      phase = 'thawing';
      cluster.thaw();
      thawedAt = performance.now();
      phase = 'thawed';
    };
    try {
      await vi.waitFor(() => expect(attempts.filter((a) => a.status === 201).length).toBeGreaterThanOrEqual(FREEZE_AFTER_ACKS), {
        timeout: 30_000,
        interval: 20,
      });

      phase = 'freezing';
      await cluster.freeze();
      phase = 'frozen';
      // Reads and writes of other kinds, sent while it is frozen (besides the writers' earns).
      probes.push(
        ...(await Promise.all([
          timed(server.baseUrl, 'GET', `/api/v1/customers/${customerIds[0]}`, key),
          timed(server.baseUrl, 'GET', '/api/v1/customers?limit=5', key),
          timed(server.baseUrl, 'GET', '/api/v1/tiers', key),
          timed(server.baseUrl, 'POST', '/api/v1/customers', key, { email: 'during-freeze@example.com' }),
        ])),
      );
      await vi.waitFor(
        () => {
          for (let w = 0; w < WRITERS; w++) expect(answered(w, 'frozen').length, `writer ${w}`).toBeGreaterThanOrEqual(ANSWERS_PER_PHASE);
        },
        { timeout: 30_000, interval: 20 },
      );
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
      await vi.waitFor(
        () => {
          for (let w = 0; w < WRITERS; w++) {
            expect(answered(w, 'thawed').filter((a) => a.status === 201).length, `writer ${w}`).toBeGreaterThanOrEqual(ANSWERS_PER_PHASE);
          }
        },
        { timeout: 30_000, interval: 50 },
      );
    } finally {
      // Never leave a frozen cluster behind, whatever failed above.
      thaw();
      stopWriting = true;
      await writers;
    }

    // The other requests sent while frozen: 503 `unavailable` with Retry-After, within the bound.
    const badProbes = probes.filter((p) => p.status !== 503 || p.code !== 'unavailable' || !(p.retryAfterSeconds! > 0) || p.ms > FROZEN_ANSWER_BOUND_MS);
    expect(badProbes.map(describeProbe)).toEqual([]);
    // Every answer was an acknowledgement or a 503 `unavailable`; never a 500, never a dropped connection.
    const odd = attempts.filter((a) => a.status !== 201 && !(a.status === 503 && a.code === 'unavailable'));
    expect(odd.map(describeAttempt)).toEqual([]);
    // While it was frozen: 503 `unavailable` with Retry-After, each within the bound.
    const whileFrozen = attempts.filter((a) => a.sentIn === 'frozen' && a.answeredIn === 'frozen');
    expect(whileFrozen.length).toBeGreaterThanOrEqual(WRITERS * ANSWERS_PER_PHASE);
    for (const a of whileFrozen) {
      expect(a.status, describeAttempt(a)).toBe(503);
      expect(a.retryAfterSeconds, describeAttempt(a)).toBeGreaterThan(0);
    }
    expect(whileFrozen.filter((a) => a.ms > FROZEN_ANSWER_BOUND_MS).map(describeAttempt)).toEqual([]);
    // Requests in flight when it froze (or thawed) are answered within a bound too.
    const straddling = attempts.filter((a) => a.sentIn !== a.answeredIn);
    expect(straddling.filter((a) => a.ms > IN_FLIGHT_ANSWER_BOUND_MS).map(describeAttempt)).toEqual([]);
    // Back within seconds of the thaw.
    const firstAck = Math.min(...attempts.filter((a) => a.sentIn === 'thawed' && a.status === 201).map((a) => a.at));
    expect(firstAck - thawedAt).toBeLessThan(RECOVERY_BOUND_MS);
    expect(server.child.exitCode, server.stderr).toBeNull();
  }, 120_000);

  it('keeps every acknowledged write exactly once, and nothing half-written: the read models catch up and match the log', async () => {
    const acknowledged = attempts.filter((a) => a.status === 201);
    await withClient(cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 30_000, interval: 100 });
      const movements = await loggedMovements(client);
      for (const ack of acknowledged) {
        const applied = movements.filter((m) => m.idempotencyKey === ack.idempotencyKey);
        expect(applied.map((m) => m.transactionId), ack.idempotencyKey).toEqual([ack.transactionId]);
      }
      await expectReadModelsToMatchLog(client);
    });
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
