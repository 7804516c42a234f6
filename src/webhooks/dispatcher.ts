import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Database } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { BackgroundLoop, type LoopHealth } from '../background-loop.js';
import { type IdGenerator, newId } from '../ids.js';
import { nextAttemptAt } from './retry-schedule.js';
import { holderGone } from '../db/process-mark.js';
import type { webhookSecrets } from './secrets.js';
import { FORBIDDEN_ADDRESS, webhookFetch } from './pinned-fetch.js';
import { assertDeliverableUrl } from './url-guard.js';

export interface DispatcherOptions {
  secrets: ReturnType<typeof webhookSecrets>;
  /** Called when a receiver answers 410 Gone: the endpoint is disabled. */
  onGone: (webhookId: string) => Promise<void>;
  allowPrivate: boolean;
  now?: () => Date;
  /** Where attempt ids come from (default: `newId`). */
  ids?: IdGenerator;
  fetch?: typeof fetch;
  timeoutMs?: number;
  batchSize?: number;
  pollMs?: number;
  logger?: Logger | undefined;
  /** This process's `ProcessMark`: a message claimed by a process that is gone is taken over at once. */
  holder?: string;
  /** How long a claimed message is ours while we are alive, before another dispatcher may take it. */
  claimMs?: number;
}

const CLAIM_MS = 60_000;
const EXCERPT_CHARS = 500;

interface Claimed {
  id: string;
  webhook_id: string;
  business_id: string;
  url: string;
  payload: string;
  attempts: number;
}

/**
 * Delivers queued webhook messages: claims due ones (`FOR UPDATE SKIP LOCKED`, so several
 * processes share the work), signs each attempt afresh (Standard Webhooks: stable `webhook-id`,
 * new timestamp and signature), sends with a timeout and without following redirects, records the
 * attempt and schedules the next one. A crash between sending and recording means one more
 * delivery with the same `webhook-id`, never a lost message.
 */
export type AttemptOutcome = 'delivered' | 'retry_scheduled' | 'failed';

export class WebhookDispatcher {
  private readonly attemptListeners: Array<(outcome: AttemptOutcome) => void> = [];
  private readonly now: () => Date;
  private readonly fetch: typeof fetch;
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: DispatcherOptions,
  ) {
    this.now = options.now ?? (() => new Date());
    this.fetch = options.fetch ?? webhookFetch(options.allowPrivate);
    this.loop = new BackgroundLoop(async () => {
      const { attempted, cancelled } = await this.pass();
      return attempted + cancelled > 0;
    }, {
      pollMs: options.pollMs ?? 250,
      onError: (error) => options.logger?.error({ err: error }, 'webhook dispatch failed; will retry'),
      now: () => this.now().getTime(),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Whether this process's delivery loop turns (see `LoopHealth`). */
  health(): LoopHealth {
    return this.loop.health();
  }

  /** Looks for due messages now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** Delivers every message due now (one batch); returns how many were attempted. */
  async runOnce(): Promise<number> {
    return (await this.pass()).attempted;
  }

  /** One batch: what it attempted, and how many due messages it cancelled instead. */
  private async pass(): Promise<{ attempted: number; cancelled: number }> {
    const { claimed, cancelled } = await this.claim();
    await Promise.all(claimed.map((message) => this.deliver(message)));
    return { attempted: claimed.length, cancelled };
  }

  /**
   * Takes the due messages of one batch. A due message whose endpoint is deleted or disabled is
   * not attempted but cancelled here: the projector cancels an endpoint's messages when it stops,
   * but a message queued in a race with that (a test send) would otherwise wait for ever.
   */
  private async claim(): Promise<{ claimed: Claimed[]; cancelled: number }> {
    const now = this.now();
    const result = await sql<Claimed & { claimed: boolean }>`
      with due as (
             select m.id, coalesce(e.active, false) as active
               from webhook_messages m
               left join webhook_endpoints e on e.id = m.webhook_id
              where m.status = 'pending'
                and m.next_attempt_at <= ${now}
                and (m.locked_until is null or m.locked_until < ${now} or ${holderGone(sql.ref('m.holder'))})
              order by m.next_attempt_at
              limit ${this.options.batchSize ?? 20}
                for update of m skip locked),
           cancelled as (
             update webhook_messages m
                set status = 'cancelled', locked_until = null
               from due
              where m.id = due.id and not due.active
             returning m.id),
           claimed as (
             update webhook_messages m
                set locked_until = ${new Date(now.getTime() + (this.options.claimMs ?? CLAIM_MS))}, holder = ${this.options.holder ?? null}::bigint
               from due, webhook_endpoints e
              where m.id = due.id and due.active and e.id = m.webhook_id
             returning m.id, m.webhook_id, m.business_id, e.url, m.payload, m.attempts)
      select true as claimed, id, webhook_id, business_id, url, payload, attempts from claimed
      union all
      select false, id, null, null, null, null, null from cancelled`.execute(this.db);
    const claimed = result.rows.filter((row) => row.claimed).map(({ claimed: _, ...message }) => message);
    return { claimed, cancelled: result.rows.length - claimed.length };
  }

  private async deliver(message: Claimed): Promise<void> {
    const now = this.now();
    const started = performance.now();
    let statusCode: number | null = null;
    let excerpt: string | null = null;
    let error: string | null = null;
    try {
      await assertDeliverableUrl(message.url, this.options.allowPrivate);
      const secrets = await this.options.secrets.signing(message.webhook_id, now);
      const signature = secrets.map((secret) => new Webhook(secret).sign(message.id, now, message.payload)).join(' ');
      const response = await this.fetch(message.url, {
        method: 'POST',
        body: message.payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 15_000),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'loyalty-webhooks/1',
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signature,
        },
      });
      statusCode = response.status;
      excerpt = (await response.text().catch(() => '')).slice(0, EXCERPT_CHARS);
    } catch (caught) {
      error = describeFailure(caught);
    }
    const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
    const attempts = message.attempts + 1;
    // The schedule counts from the attempt's end: after a 15 s timeout, "5 s later" is 20 s after its start.
    const retryAt = delivered || statusCode === 410 ? null : nextAttemptAt(attempts, this.now());
    const outcome = delivered ? 'delivered' : retryAt ? 'pending' : 'failed';
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: (this.options.ids ?? newId)('attempt'),
          message_id: message.id,
          webhook_id: message.webhook_id,
          business_id: message.business_id,
          attempt: attempts,
          attempted_at: now,
          status_code: statusCode,
          duration_ms: Math.round(performance.now() - started),
          response_excerpt: excerpt,
          error,
        })
        .execute();
      await trx
        .updateTable('webhook_messages')
        .set({
          attempts,
          locked_until: null,
          // Cancelled while this attempt was in flight (its endpoint was deleted or disabled): it
          // stays cancelled, no retry; unless this very attempt was delivered.
          status: delivered ? outcome : sql<typeof outcome | 'cancelled'>`case when status = 'cancelled' then 'cancelled' else ${outcome} end`,
          ...(delivered ? { delivered_at: now } : {}),
          ...(retryAt ? { next_attempt_at: retryAt } : {}),
        })
        .where('id', '=', message.id)
        .execute();
    });
    for (const listener of this.attemptListeners) listener(outcome === 'pending' ? 'retry_scheduled' : outcome);
    if (statusCode === 410) await this.options.onGone(message.webhook_id);
  }

  /** Calls `listener` after each recorded attempt with its outcome (metrics count them). */
  onAttempt(listener: (outcome: AttemptOutcome) => void): void {
    this.attemptListeners.push(listener);
  }
}

/** What an attempt's `error` says: the guard's reason for a refused URL, "timed out", or the network error. */
function describeFailure(caught: unknown): string {
  if (caught instanceof ApiError) {
    const details = caught.extras.details as Array<{ message: string }> | undefined;
    return `url refused: ${details?.map((d) => d.message).join('; ') ?? caught.message}`;
  }
  if (caught instanceof Error) {
    if (caught.name === 'TimeoutError') return 'timed out';
    const cause = (caught as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === FORBIDDEN_ADDRESS) return `url refused: ${cause.message}`;
    return cause?.code ? `${caught.message}: ${cause.code}` : caught.message;
  }
  return String(caught);
}
