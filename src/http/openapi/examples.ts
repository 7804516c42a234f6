/**
 * One realistic example per schema of the API, by component name: what the reference page shows
 * and what Redocly checks against each schema (`npm run lint:openapi`). They tell one story: Ada
 * joins, buys, earns, reaches Silver and redeems a coffee.
 */
const at = '2026-11-22T14:03:07.123Z';
const later = '2026-11-22T14:05:41.870Z';
const customer_id = 'cust_4fTz9QbLr2XcVw7NkP1a';
const silverTier = { id: 'tier_9XkQ2mP4vR7tY1wB3nL5', name: 'Silver', points_threshold: 500, multiplier: 1.25, benefits: ['Free delivery'] };
const purchaseRule = {
  conditions: [{ property: 'amount', op: 'gte', value: 100 }],
  points_per_unit: 2,
  unit_property: 'amount',
  unit_size: 1,
  max_points: 1000,
  description: 'Double points on orders of 100 or more',
};

const customer = {
  id: customer_id,
  email: 'ada@example.com',
  phone: '+44 20 7946 0958',
  first_name: 'Ada',
  last_name: 'Lovelace',
  external_reference: 'user-1042',
  metadata: { source: 'signup-form' },
  points_balance: 620,
  lifetime_earned: 720,
  lifetime_redeemed: 100,
  tier: { ...silverTier, achieved_at: at },
  created_at: '2026-11-20T09:12:44.501Z',
  updated_at: at,
};
const transaction = {
  id: 'txn_8ZkqP2mXv4RtY6wQ1bN3',
  customer_id,
  type: 'earn',
  amount: 150,
  balance: 620,
  base_amount: 120,
  multiplier: 1.25,
  description: 'Order #7731',
  reference: 'order-7731',
  metadata: { store: 'berlin-1' },
  created_at: at,
};
const key = {
  id: 'key_Q2w3E4r5T6y7U8i9O0pA',
  type: 'private',
  name: 'checkout server',
  permissions: ['customers:read', 'customers:write', 'points:read', 'points:write'],
  key_hint: 'sk_live_…x9Qa',
  created_at: at,
  revoked_at: null,
};
const tier = { ...silverTier, metadata: {}, created_at: '2026-11-01T08:00:00.000Z', updated_at: '2026-11-01T08:00:00.000Z' };
const eventType = {
  id: 'evtp_6gH8jK0lZ2xC4vB6nM8q',
  name: 'purchase',
  display_name: 'Purchase',
  default_points: 10,
  rules: [purchaseRule],
  metadata: {},
  created_at: '2026-11-01T08:00:00.000Z',
  updated_at: '2026-11-01T08:00:00.000Z',
};
const reward = {
  id: 'rew_3mN8bV1cX6zL4kJ2hG9f',
  title: 'Free coffee',
  points_cost: 100,
  reward_type: 'physical',
  description: 'Any size, any shop',
  stock_quantity: 250,
  active: true,
  redeemed_count: 31,
  metadata: {},
  created_at: '2026-11-01T08:00:00.000Z',
  updated_at: at,
};
const redemption = {
  id: 'red_5tR2yU8iO1pA4sD7fG0h',
  customer_id,
  reward_id: reward.id,
  points_cost: 100,
  balance: 520,
  status: 'completed',
  reference: 'pos-7733',
  metadata: {},
  created_at: later,
  cancelled_at: null,
};
const event = {
  id: 'evt_7uI9oP2aS5dF8gH1jK4l',
  customer_id,
  event_type: 'purchase',
  properties: { amount: 120, currency: 'EUR' },
  reference: 'order-7732',
  points_awarded: 312,
  base_points: 250,
  multiplier: 1.25,
  balance: 932,
  created_at: later,
};
const webhook = {
  id: 'whk_2wE4rT6yU8iO0pA1sD3f',
  url: 'https://example.com/hooks/loyalty',
  events: ['tier.upgraded', 'points.earned'],
  description: 'CRM sync',
  active: true,
  disabled_reason: null,
  created_at: at,
  updated_at: at,
  deleted_at: null,
};

export const SCHEMA_EXAMPLES: Record<string, unknown> = {
  CustomerCreate: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', external_reference: 'user-1042', metadata: { source: 'signup-form' } },
  CustomerUpdate: { phone: '+44 20 7946 0958', metadata: { newsletter: true } },
  Customer: customer,
  CustomerTier: customer.tier,
  CustomerSummary: {
    customer: { id: customer_id, email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    points: { balance: 620, lifetime_earned: 720, lifetime_redeemed: 100 },
    tier: {
      current: customer.tier,
      next: { id: 'tier_1aS3dF5gH7jK9lZ2xC4v', name: 'Gold', points_threshold: 1000, points_needed: 280 },
    },
    recent_activity: [
      { type: 'earn', amount: 150, description: 'Order #7731', created_at: at },
      { type: 'redemption', amount: 100, description: 'Free coffee', created_at: '2026-11-21T17:40:02.004Z' },
    ],
  },
  PointsTransactionCreate: { type: 'earn', amount: 120, reference: 'order-7731', description: 'Order #7731', apply_multiplier: true, metadata: { store: 'berlin-1' } },
  PointsTransaction: transaction,
  StreamEvent: {
    position: 3,
    type: 'PointsEarned',
    data: { transaction_id: transaction.id, amount: 150, balance: 620, base_amount: 120, multiplier: 1.25, description: 'Order #7731', reference: 'order-7731', metadata: {} },
    metadata: { business_id: 'biz_0pL9kM8nJ7bH6vG5cF4x', actor: 'key_Q2w3E4r5T6y7U8i9O0pA', request_id: 'req_V1StGXR8Z5jdHi6BmyT', idempotency_key: 'order-7731-earn' },
    recorded_at: at,
  },
  ApiKeyCreate: { type: 'private', name: 'checkout server', permissions: ['customers:read', 'customers:write', 'points:read', 'points:write'] },
  ApiKey: key,
  CreatedApiKey: { ...key, key: 'sk_live_4eC39HqLyjWDarjtT1zdp7dcX9Qa8bN2mK5pR7tV' },
  TierCreate: { name: 'Silver', points_threshold: 500, multiplier: 1.25, benefits: ['Free delivery'] },
  TierUpdate: { benefits: ['Free delivery', 'Birthday gift'] },
  Tier: tier,
  EventTypeCreate: { name: 'purchase', display_name: 'Purchase', default_points: 10, rules: [purchaseRule] },
  EventTypeUpdate: { default_points: 5 },
  EventType: eventType,
  RewardCreate: { title: 'Free coffee', points_cost: 100, reward_type: 'physical', description: 'Any size, any shop', stock_quantity: 250 },
  RewardUpdate: { stock_quantity: 500, active: true },
  Reward: reward,
  RedemptionCreate: { reward_id: reward.id, reference: 'pos-7733' },
  Redemption: redemption,
  EventCreate: { customer_id, event_type: 'purchase', properties: { amount: 120, currency: 'EUR' }, reference: 'order-7732' },
  Event: event,
  WebhookCreate: { url: 'https://example.com/hooks/loyalty', events: ['tier.upgraded', 'points.earned'], description: 'CRM sync' },
  WebhookUpdate: { events: ['*'] },
  Webhook: webhook,
  WebhookWithSecret: { ...webhook, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  WebhookDelivery: {
    id: 'att_7hJ2kL9mN4pQ6rS8tV1w',
    message_id: 'msg_2ZkqP2mXv4RtY6wQ1bN3',
    event_type: 'points.earned',
    attempt: 2,
    attempted_at: '2026-11-22T14:03:12.410Z',
    status_code: 200,
    duration_ms: 84,
    response_excerpt: 'ok',
    error: null,
    message_status: 'delivered',
    next_attempt_at: null,
  },
  WebhookTestMessage: { id: 'msg_1qA2wS3eD4rF5tG6yH7u', event_type: 'webhook.test', status: 'pending' },
  Me: {
    id: key.id,
    type: 'private',
    name: key.name,
    key_hint: 'sk_live_…9Qa8',
    permissions: key.permissions,
    created_at: at,
    business: { id: 'biz_8Hj2Kd9Lm3Np5Qr7St1V', name: 'Corner Coffee', plan: 'unlimited', created_at: at },
  },
  StatsDay: { date: '2026-11-22', issued: 1340, redeemed: 400, expired: 0 },
  Stats: {
    from: '2026-11-21',
    to: '2026-11-22',
    days: [
      { date: '2026-11-21', issued: 980, redeemed: 200, expired: 0 },
      { date: '2026-11-22', issued: 1340, redeemed: 400, expired: 0 },
    ],
    customers: 42,
    outstanding: 18_250,
    tiers: [
      { tier_id: null, name: null, points_threshold: null, customers: 31 },
      { tier_id: silverTier.id, name: silverTier.name, points_threshold: silverTier.points_threshold, customers: 11 },
    ],
  },
  RulePreviewRequest: { properties: { amount: 120, currency: 'EUR' } },
  RulePreview: {
    event_type: 'purchase',
    default_points: 10,
    rules: [{ index: 0, description: purchaseRule.description, applies: true, points: 240 }],
    points: 240,
  },
  CustomerAudit: { customer_id, events: 7, chain_intact: true, breaks: [], read_model_matches: true, drifts: [] },
};

/** What each path or query parameter is, by name, where its schema does not say. */
export const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  customer_id: 'A customer’s id (`cust_…`).',
  key_id: 'An API key’s id (`key_…`).',
  tier_id: 'A tier’s id (`tier_…`).',
  reward_id: 'A reward’s id (`rew_…`).',
  redemption_id: 'A redemption’s id (`red_…`).',
  webhook_id: 'A webhook endpoint’s id (`whk_…`).',
  name: 'The event type’s name.',
  phone: 'Exact phone number, as stored.',
  external_reference: 'Exact external reference (the caller’s own user id).',
  active: '`true` for active rewards only, `false` for inactive ones.',
  reward_type: 'Only rewards of this type.',
  event_type: 'Only events of this event type (its name).',
};
