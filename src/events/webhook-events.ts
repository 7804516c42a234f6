import { z } from 'zod';

/** What a business can subscribe to (CONTRACT.md §10). */
export const WEBHOOK_EVENT_TYPES = [
  'tier.upgraded',
  'customer.created',
  'points.earned',
  'points.deducted',
  'points.adjusted',
  'event.recorded',
  'reward.redeemed',
  'redemption.cancelled',
  'points.released',
  'points.expiring',
  'points.expired',
  'points.reversed',
  'tier.downgraded',
] as const;
export const WebhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES);
export type WebhookEventType = z.infer<typeof WebhookEventTypeSchema>;

const Subscription = z.array(z.union([WebhookEventTypeSchema, z.literal('*')]));

/** The `webhook-{id}` stream: an endpoint's configuration. Secrets are never in the log (see src/webhooks/secrets.ts). */
export const WebhookEvents = {
  WebhookCreated: z.object({
    webhook_id: z.string(),
    business_id: z.string(),
    url: z.string(),
    events: Subscription,
    description: z.string().nullable(),
  }),
  WebhookUpdated: z.object({
    url: z.string().optional(),
    events: Subscription.optional(),
    description: z.string().nullable().optional(),
    active: z.boolean().optional(),
    /** Why the service itself changed it (e.g. the receiver answered 410 Gone). */
    reason: z.string().optional(),
  }),
  WebhookSecretRotated: z.object({ previous_secret_expires_at: z.string() }),
  WebhookDeleted: z.object({}),
};
