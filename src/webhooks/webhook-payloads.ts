import { streams } from '../events/streams.js';
import type { WebhookEventType } from '../events/webhook-events.js';
import type { ProjectedEventOf } from '../projections/projector.js';

/** The Standard Webhooks body: `{type, timestamp, data}`. */
export interface WebhookPayload {
  type: WebhookEventType | 'webhook.test';
  timestamp: string;
  data: Record<string, unknown>;
}

/** The events a webhook announces, and the webhook event type of each. */
export const ANNOUNCED = {
  CustomerRegistered: 'customer.created',
  PointsEarned: 'points.earned',
  PointsDeducted: 'points.deducted',
  PointsAdjusted: 'points.adjusted',
  EventRecorded: 'event.recorded',
  RewardRedeemed: 'reward.redeemed',
  RedemptionCancelled: 'redemption.cancelled',
  TierUpgraded: 'tier.upgraded',
  PointsReleased: 'points.released',
  PointsExpiringNotified: 'points.expiring',
  PointsExpired: 'points.expired',
  PointsReversed: 'points.reversed',
  TierDowngraded: 'tier.downgraded',
} as const satisfies Record<string, WebhookEventType>;

export type AnnouncedEvent = ProjectedEventOf<keyof typeof ANNOUNCED>;

/** The webhook an event announces. */
export function webhookPayloadOf(event: AnnouncedEvent): WebhookPayload {
  const at = event.recordedAt.toISOString();
  const customer_id = streams.customerIdOf(event.streamId);
  const payload = (data: Record<string, unknown>): WebhookPayload => ({ type: ANNOUNCED[event.type], timestamp: at, data });
  switch (event.type) {
    case 'CustomerRegistered': {
      const { business_id: _b, ...data } = event.data;
      return payload({ ...data, created_at: at });
    }
    case 'PointsEarned':
    case 'PointsDeducted':
    case 'PointsAdjusted':
    case 'EventRecorded':
    case 'RewardRedeemed':
      return payload({ customer_id, ...event.data, created_at: at });
    case 'RedemptionCancelled':
      return payload({ customer_id, ...event.data, cancelled_at: at });
    case 'PointsReversed':
      return payload({ customer_id, ...event.data, created_at: at });
    case 'PointsReleased':
    case 'PointsExpired':
      return payload({ customer_id, ...event.data });
    case 'PointsExpiringNotified': {
      const { lot_transaction_id, amount, expires_at } = event.data;
      return payload({ customer_id, transaction_id: lot_transaction_id, amount, expires_at });
    }
    case 'TierDowngraded':
      return payload({ customer_id, ...event.data });
    case 'TierUpgraded': {
      const { data } = event;
      return payload({ customer_id, previous_tier: data.previous_tier, new_tier: data.new_tier, lifetime_earned: data.lifetime_earned, upgraded_at: at });
    }
    default: {
      const unhandled: never = event;
      throw new Error(`no webhook payload for ${String(unhandled)}`);
    }
  }
}
