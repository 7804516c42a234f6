import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Database } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { BackgroundLoop } from '../background-loop.js';
import { nextAttemptAt } from './retry-schedule.js';
import type { webhookSecrets } from './secrets.js';
import { FORBIDDEN_ADDRESS, webhookFetch } from './pinned-fetch.js';
import { assertDeliverableUrl } from './url-guard.js';

export interface DispatcherOptions {
  secrets: ReturnType<typeof webhookSecrets>;
  /** Called when a receiver answers 410 Gone: the endpoint is disabled. */
  onGone: (webhookId: string) => Promise<void>;
  allowPrivate: boolean;
  now?: () => Date;
  fetch?: typeof fetch;
  timeoutMs?: number;
  batchSize?: number;
  pollMs?: number;
  logger?: Logger | undefined;
}

/** How long a claimed message is ours before another dispatcher may take it (a crashed process). */
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
export class WebhookDispatcher {
  private readonly now: () => Date;
  private readonly fetch: typeof fetch;
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: DispatcherOptions,
  ) {
    this.now = options.now ?? (() => new Date());
    this.fetch = options.fetch ?? webhookFetch(options.allowPrivate);
    this.loop = new BackgroundLoop(async () => (await this.runOnce()) > 0, {
      pollMs: options.pollMs ?? 250,
      onError: (error) => options.logger?.error({ err: error }, 'webhook dispatch failed; will retry'),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Looks for due messages now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** Delivers every message due now (one batch); returns how many were attempted. */
  async runOnce(): Promise<number> {
    const claimed = await this.claim();
    await Promise.all(claimed.map((message) => this.deliver(message)));
    return claimed.length;
  }

  private async claim(): Promise<Claimed[]> {
    const now = this.now();
    const result = await sql<Claimed>`
      update webhook_messages m
         set locked_until = ${new Date(now.getTime() + CLAIM_MS)}
        from webhook_endpoints e
       where m.id in (
               select m2.id from webhook_messages m2
                 join webhook_endpoints e2 on e2.id = m2.webhook_id and e2.active
                where m2.status = 'pending'
                  and m2.next_attempt_at <= ${now}
                  and (m2.locked_until is null or m2.locked_until < ${now})
                order by m2.next_attempt_at
                limit ${this.options.batchSize ?? 20}
                  for update of m2 skip locked)
         and e.id = m.webhook_id
      returning m.id, m.webhook_id, m.business_id, e.url, m.payload, m.attempts`.execute(this.db);
    return result.rows;
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
    const retryAt = delivered || statusCode === 410 ? null : nextAttemptAt(attempts, now);
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_attempts')
        .values({
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
          status: delivered ? 'delivered' : retryAt ? 'pending' : 'failed',
          ...(delivered ? { delivered_at: now } : {}),
          ...(retryAt ? { next_attempt_at: retryAt } : {}),
        })
        .where('id', '=', message.id)
        .execute();
    });
    if (statusCode === 410) await this.options.onGone(message.webhook_id);
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
