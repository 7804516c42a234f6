import { hash } from 'node:crypto';

/** Stream names (ARCHITECTURE.md "Streams and aggregates"). */
export const streams = {
  business: (businessId: string) => `business-${businessId}`,
  apiKey: (keyId: string) => `apikey-${keyId}`,
  /** Tiers and event types of one business. */
  program: (businessId: string) => `program-${businessId}`,
  reward: (rewardId: string) => `reward-${rewardId}`,
  webhook: (webhookId: string) => `webhook-${webhookId}`,
  webhookIdOf: (stream: string) => stream.slice('webhook-'.length),
  rewardIdOf: (stream: string) => stream.slice('reward-'.length),
  customer: (customerId: string) => `customer-${customerId}`,
  /** The customer id of a `customer-…` stream. */
  customerIdOf: (stream: string) => stream.slice('customer-'.length),
  /**
   * A reservation stream claims a value that must be unique within a scope (a business for email
   * and external_reference, a customer for references). The value is hashed so stream names stay
   * short and carry no personal data; the claim event holds the value itself.
   */
  reservation: (kind: 'email' | 'external_reference' | 'reference', scope: string, value: string) =>
    `unique-${kind}-${scope}-${hash('sha256', value, 'hex').slice(0, 32)}`,
};
