/**
 * What the database fault tests share: `loyalty serve` on a PostgreSQL cluster of their own, with a
 * webhook receiver subscribed to points.earned and a few customers; writers that earn in a loop
 * while a test takes the database through its phases; and the checks on what they were answered.
 */
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { api, killAllProcesses, printedKeys, type ServerProcess, startServer } from '../e2e/process-helpers.js';
import { type OwnPostgres, startOwnPostgres } from '../support/own-postgres.js';
import { type Receiver, startReceiver } from '../support/webhook-receiver.js';
import { earn, type EarnAnswer } from './earn-request.js';
import { expectReadModelsToMatchLog, laggingProjections, loggedMovements, withClient } from './log-checks.js';

/** Set once the suite's beforeAll has run. */
export interface EarningService {
  cluster: OwnPostgres;
  server: ServerProcess;
  receiver: Receiver;
  key: string;
  customerIds: string[];
}

/**
 * Registers the suite's beforeAll and afterAll (call it inside `describeWithOwnCluster`): the
 * customers are `${emailPrefix}-<n>@example.com`. The afterAll thaws the cluster first, in case a
 * test left it frozen. `settings`: more environment for the server.
 */
export function useEarningService(customers: number, emailPrefix: string, settings: Record<string, string> = {}): EarningService {
  const service = { customerIds: [] as string[] } as EarningService;
  beforeAll(async () => {
    service.cluster = await startOwnPostgres();
    service.receiver = await startReceiver();
    const env = { DATABASE_URL: service.cluster.url, LOYALTY_WEBHOOK_ALLOW_PRIVATE: '1', LOYALTY_RATE_LIMIT_RPS: '0', ...settings };
    const server = (service.server = await startServer({ env, dispose: async () => {} }));
    const key = (service.key = printedKeys(server.stdout).privateKey!);
    const hook = await api(server.baseUrl, 'POST', '/api/v1/webhooks', { key, body: { url: service.receiver.url, events: ['points.earned'] } });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    for (let c = 0; c < customers; c++) {
      const created = await api(server.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: `${emailPrefix}-${c}@example.com` } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      service.customerIds.push(created.body.id);
    }
  });
  afterAll(async () => {
    service.cluster?.thaw();
    await killAllProcesses();
    await service.receiver?.close();
    await service.cluster?.destroy();
  });
  return service;
}

export interface Attempt<Phase extends string> extends EarnAnswer {
  writer: number;
  idempotencyKey: string;
  customerId: string;
  /** The database's phase when the request was sent and when it was answered. */
  sentIn: Phase;
  answeredIn: Phase;
  /** When it was answered (performance.now()). */
  at: number;
}

export const describeAttempt = (a: Attempt<string>) =>
  `${a.idempotencyKey} ${a.sentIn}→${a.answeredIn}: ${a.status ?? a.error} ${a.code ?? ''} in ${Math.round(a.ms)} ms`;

/**
 * `writers` loops earning on the customers in turn, under Idempotency-Keys `${keyPrefix}-w<writer>-n<n>`,
 * each answer recorded with the phase the test has set when it was sent and when it was answered.
 */
export class EarnLoad<Phase extends string> {
  readonly attempts: Attempt<Phase>[] = [];
  private stopping = false;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly service: EarningService,
    private readonly writers: number,
    private readonly keyPrefix: string,
    public phase: Phase,
  ) {}

  start(): void {
    this.writing = Promise.all(Array.from({ length: this.writers }, (_, w) => this.write(w)));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.writing;
  }

  private async write(w: number): Promise<void> {
    const { server, key, customerIds } = this.service;
    for (let n = 0; !this.stopping; n++) {
      const customerId = customerIds[(w + n) % customerIds.length]!;
      const idempotencyKey = `${this.keyPrefix}-w${w}-n${n}`;
      const sentIn = this.phase;
      const answer = await earn(server.baseUrl, key, customerId, idempotencyKey);
      this.attempts.push({ ...answer, writer: w, idempotencyKey, customerId, sentIn, answeredIn: this.phase, at: performance.now() });
      // Pace the writers while the database is out: the fault is about answers, not volume.
      if (answer.status !== 201) await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Attempts of `writer` sent and answered in `phase`. */
  private answered(writer: number, phase: Phase): Attempt<Phase>[] {
    return this.attempts.filter((a) => a.writer === writer && a.sentIn === phase && a.answeredIn === phase);
  }

  async untilAcknowledged(count: number): Promise<void> {
    await vi.waitFor(() => expect(this.attempts.filter((a) => a.status === 201).length).toBeGreaterThanOrEqual(count), {
      timeout: 30_000,
      interval: 20,
    });
  }

  /** Until every writer has `count` answers (of any kind) sent and answered in `phase`. */
  async untilEachWriterAnswered(phase: Phase, count: number): Promise<void> {
    await vi.waitFor(
      () => {
        for (let w = 0; w < this.writers; w++) expect(this.answered(w, phase).length, `writer ${w}`).toBeGreaterThanOrEqual(count);
      },
      { timeout: 30_000, interval: 20 },
    );
  }

  /** Until every writer has `count` acknowledgements sent and answered in `phase`. */
  async untilEachWriterAcknowledged(phase: Phase, count: number): Promise<void> {
    await vi.waitFor(
      () => {
        for (let w = 0; w < this.writers; w++) {
          expect(this.answered(w, phase).filter((a) => a.status === 201).length, `writer ${w}`).toBeGreaterThanOrEqual(count);
        }
      },
      { timeout: 30_000, interval: 50 },
    );
  }

  /**
   * Every answer was an acknowledgement or a 503 `unavailable`; at least `minimum` were sent and
   * answered while the database was `out`, each a 503 with Retry-After within `outBoundMs`; those
   * answered in another phase than they were sent in, within `inFlightBoundMs`.
   */
  expectAcknowledgedOrUnavailable(out: Phase, minimum: number, outBoundMs: number, inFlightBoundMs: number): void {
    // Never a 500, never a dropped connection.
    const odd = this.attempts.filter((a) => a.status !== 201 && !(a.status === 503 && a.code === 'unavailable'));
    expect(odd.map(describeAttempt)).toEqual([]);
    const whileOut = this.attempts.filter((a) => a.sentIn === out && a.answeredIn === out);
    expect(whileOut.length).toBeGreaterThanOrEqual(minimum);
    for (const a of whileOut) {
      expect(a.status, describeAttempt(a)).toBe(503);
      expect(a.retryAfterSeconds, describeAttempt(a)).toBeGreaterThan(0);
    }
    expect(whileOut.filter((a) => a.ms > outBoundMs).map(describeAttempt)).toEqual([]);
    const straddling = this.attempts.filter((a) => a.sentIn !== a.answeredIn);
    expect(straddling.filter((a) => a.ms > inFlightBoundMs).map(describeAttempt)).toEqual([]);
  }

  /**
   * Every acknowledged earn is in the log exactly once, as the transaction its 201 named, and the
   * read models caught up from their checkpoints and match the log. Returns the acknowledged attempts.
   */
  async expectAcknowledgedOnceInLog(): Promise<Attempt<Phase>[]> {
    const acknowledged = this.attempts.filter((a) => a.status === 201);
    await withClient(this.service.cluster.url, async (client) => {
      await vi.waitFor(async () => expect(await laggingProjections(client)).toEqual([]), { timeout: 30_000, interval: 100 });
      const movements = await loggedMovements(client);
      for (const ack of acknowledged) {
        const applied = movements.filter((m) => m.idempotencyKey === ack.idempotencyKey);
        expect(applied.map((m) => m.transactionId), ack.idempotencyKey).toEqual([ack.transactionId]);
      }
      await expectReadModelsToMatchLog(client);
    });
    return acknowledged;
  }
}
