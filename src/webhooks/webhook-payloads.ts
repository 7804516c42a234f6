import { streams } from '../events/streams.js';
import type { EventData } from '../events/catalogue.js';
import type { WebhookEventType } from '../events/webhook-events.js';
import type { StoredEvent } from '../store/event-store.js';

/** The Standard Webhooks body: `{type, timestamp, data}`. */
export interface WebhookPayload {
  type: WebhookEventType | 'webhook.test';
  timestamp: string;
  data: Record<string, unknown>;
}

/** The webhook a stored event announces, or null when it announces none. */
export function webhookPayloadOf(event: StoredEvent): WebhookPayload | null {
  const at = event.recordedAt.toISOString();
  const customer_id = streams.customerIdOf(event.streamId);
  const payload = (type: WebhookEventType, data: Record<string, unknown>): WebhookPayload => ({ type, timestamp: at, data });
  switch (event.type) {
    case 'CustomerRegistered': {
      const { business_id: _b, ...data } = event.data as EventData<'CustomerRegistered'>;
      return payload('customer.created', { ...data, created_at: at });
    }
    case 'PointsEarned':
    case 'PointsDeducted':
    case 'PointsAdjusted': {
      const type = ({ PointsEarned: 'points.earned', PointsDeducted: 'points.deducted', PointsAdjusted: 'points.adjusted' } as const)[event.type];
      return payload(type, { customer_id, ...(event.data as EventData<'PointsEarned'>), created_at: at });
    }
    case 'EventRecorded':
      return payload('event.recorded', { customer_id, ...(event.data as EventData<'EventRecorded'>), created_at: at });
    case 'RewardRedeemed':
      return payload('reward.redeemed', { customer_id, ...(event.data as EventData<'RewardRedeemed'>), created_at: at });
    case 'RedemptionCancelled':
      return payload('redemption.cancelled', { customer_id, ...(event.data as EventData<'RedemptionCancelled'>), cancelled_at: at });
    case 'TierUpgraded': {
      const data = event.data as EventData<'TierUpgraded'>;
      return payload('tier.upgraded', {
        customer_id,
        previous_tier: data.previous_tier,
        new_tier: data.new_tier,
        lifetime_earned: data.lifetime_earned,
        upgraded_at: at,
      });
    }
    default:
      return null;
  }
}
