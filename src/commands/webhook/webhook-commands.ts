import { errors } from '../../errors.js';
import type { AnsweredEvent, CommandContext } from '../../events/metadata.js';
import type { EventOf } from '../../events/catalogue.js';
import { decidedWrite } from '../aggregate.js';
import { type CommandDeps, firstOn, startStream } from '../command-bus.js';
import { streams } from '../../events/streams.js';
import { type WebhookCommand, webhookDecider } from './webhook-decider.js';

type Subscription = EventOf<'WebhookCreated'>['data']['events'];

export interface WebhookInput {
  url: string;
  events: Subscription;
  description: string | null;
}

/** Where signing secrets live (never in the log): `src/webhooks/secrets.ts`. */
export interface WebhookSecretStore {
  create(webhookId: string, now: Date): Promise<string>;
  rotate(webhookId: string, now: Date): Promise<{ secret: string; previousExpiresAt: Date }>;
  /** When the secrets in use stop signing after a rotation at `now` (what `rotate` sets). */
  previousExpiresAt(now: Date): Date;
}

export interface WebhookCommandOptions {
  secrets: WebhookSecretStore;
  /**
   * Refuses (throws a validation `ApiError`) a URL deliveries must not go to. It resolves the host
   * (I/O), so it is injected: `src/webhooks/url-guard.ts` `assertDeliverableUrl` in production.
   */
  checkUrl(url: string): Promise<unknown>;
  /** Queues a `webhook.test` message for delivery and wakes the dispatcher (`src/webhooks`). */
  queueTest(businessId: string, webhookId: string, messageId: string, now: Date): Promise<void>;
}

export function webhookCommands({ bus, ids }: CommandDeps, options: WebhookCommandOptions) {
  /** Decides on an existing webhook of the caller's business and appends. */
  async function change(ctx: CommandContext, webhookId: string, command: (state: ReturnType<typeof webhookDecider.initialState>) => WebhookCommand) {
    const stream = streams.webhook(webhookId);
    await bus.handle(ctx, { lock: [stream] }, async (load) => {
      const webhook = await load(stream, webhookDecider);
      const { state } = webhook;
      if (!state.webhook || state.deleted || state.webhook.business_id !== ctx.businessId) throw errors.webhookNotFound(webhookId);
      return [decidedWrite(stream, webhook, webhookDecider, webhookDecider.decide(command(state), state))];
    });
  }

  return {
    /** Creates an endpoint; returns its `WebhookCreated` and signing secret (shown once). */
    async create(ctx: CommandContext, input: WebhookInput): Promise<{ created: AnsweredEvent; secret: string }> {
      await options.checkUrl(input.url);
      const webhookId = ids('webhook');
      // The secret is stored first: an endpoint never exists without one.
      const secret = await options.secrets.create(webhookId, ctx.now);
      const webhook = { webhook_id: webhookId, business_id: ctx.businessId, ...input };
      const stream = streams.webhook(webhookId);
      const created = await bus.handle(ctx, { lock: [stream], answer: firstOn(stream) }, startStream(stream, webhookDecider, (state) => webhookDecider.decide({ type: 'CreateWebhook', webhook }, state)));
      return { created, secret };
    },

    async update(ctx: CommandContext, webhookId: string, changes: Partial<WebhookInput> & { active?: boolean }): Promise<void> {
      if (changes.url !== undefined) await options.checkUrl(changes.url);
      await change(ctx, webhookId, () => ({ type: 'UpdateWebhook', changes }));
    },

    delete: (ctx: CommandContext, webhookId: string) => change(ctx, webhookId, () => ({ type: 'DeleteWebhook' })),

    /** A new secret; the previous one keeps signing for 24 hours. Returns the new secret. */
    async rotateSecret(ctx: CommandContext, webhookId: string): Promise<string> {
      const { state } = await bus.load(streams.webhook(webhookId), webhookDecider);
      if (!state.webhook || state.deleted || state.webhook.business_id !== ctx.businessId) throw errors.webhookNotFound(webhookId);
      // The event first: a failed append changes no secret. The secret store derives the same expiry from `now`.
      const previousSecretExpiresAt = options.secrets.previousExpiresAt(ctx.now).toISOString();
      await change(ctx, webhookId, () => ({ type: 'RotateSecret', previousSecretExpiresAt }));
      const { secret } = await options.secrets.rotate(webhookId, ctx.now);
      return secret;
    },

    /** Queues a `webhook.test` message to an endpoint the caller checked is there and active; returns the message id. */
    async sendTest(ctx: CommandContext, webhookId: string): Promise<string> {
      const messageId = ids('message');
      await options.queueTest(ctx.businessId, webhookId, messageId, ctx.now);
      return messageId;
    },

    /** The receiver said 410 Gone: the service itself disables the endpoint. */
    async disableGone(webhookId: string, now: Date): Promise<void> {
      const { state } = await bus.load(streams.webhook(webhookId), webhookDecider);
      if (!state.webhook) return;
      const ctx = { businessId: state.webhook.business_id, actor: 'system', requestId: null, idempotencyKey: null, now };
      await change(ctx, webhookId, () => ({ type: 'UpdateWebhook', changes: { active: false, reason: 'the receiver answered 410 Gone' } }));
    },
  };
}

export type WebhookCommands = ReturnType<typeof webhookCommands>;
