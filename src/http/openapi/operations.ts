import type { ErrorCode } from '../../error-codes.js';

/**
 * What the OpenAPI document says of each operation beyond its route definition: the error codes
 * it can answer besides those every route shares (see `route-contract.ts`), and a description
 * where the route has none. Keyed by operationId. An operation missing here still gets every code
 * of the statuses its route declares; test/http/openapi-contract.test.ts checks the codes the
 * suite meets against this list.
 */
export interface OperationNotes {
  errors: ErrorCode[];
  description?: string;
}

const listing = 'Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.';
const window = 'A window of creation times: `created_after` and `created_before` (RFC 3339, both exclusive; 400 when the end is not after the start).';

export const OPERATIONS: Record<string, OperationNotes> = {
  listCustomers: {
    errors: ['public_key_not_allowed'],
    description: `${listing} Filters: \`email\` (exact, case-insensitive), \`phone\`, \`external_reference\`, \`tier\` (tier id). ${window} A public key must give an exact email, phone or external_reference: it looks customers up, it does not list them.`,
  },
  createCustomer: {
    errors: ['customer_exists', 'plan_limit_reached'],
    description: 'Email or phone is required. Email and external_reference are unique in the business: a taken one answers 409 `customer_exists` with the holder in `customer_id`. A new customer has balance 0 and tier null. On the free plan the 1,001st customer is refused (403 `plan_limit_reached`).',
  },
  getCustomer: { errors: ['customer_not_found'], description: 'The customer with its balance, lifetime totals and tier. Another business’s id answers 404 like an unknown one.' },
  updateCustomer: {
    errors: ['customer_not_found', 'customer_exists'],
    description: 'Any of the create fields; `null` clears an optional one and `metadata` is replaced as a whole. The answer is the customer as it now stands.',
  },
  getCustomerSummary: {
    errors: ['customer_not_found'],
    description: 'The balance and lifetime totals, the current tier and the next one with the points still needed, and the 10 newest balance changes, newest first. Needs customers:read and points:read.',
  },
  listTransactions: { errors: ['customer_not_found'], description: `Every ledger line of the customer, each with the balance right after it. ${window} ${listing}` },
  listLots: {
    errors: ['customer_not_found'],
    description: `The customer's point lots (CONTRACT.md §13): one per credit, with what remains of it, its status and when it becomes available and expires. Debits take from available lots soonest-expiring first (never-expiring last), then oldest first. Only lots with points left unless \`all=true\`. The cursor is a lot's \`transaction_id\`. ${listing}`,
  },
  getCustomerStream: {
    errors: ['customer_not_found', 'public_key_not_allowed'],
    description: 'The customer’s raw events as stored in the log, for auditors: type, data, metadata (actor, request id, idempotency key…) and the log position. Private keys only; `starting_after` is a stream position.',
  },
  createPointsTransaction: {
    errors: ['customer_not_found', 'duplicate_transaction', 'insufficient_points', 'points_out_of_range'],
    description:
      'A credit (earn, positive adjust) makes a lot: `available_at` (default: now + the program’s pending_days) keeps its points pending until then; `expires_at` (default: points_expiry_days after they become available; null: never) is when what is left of them expires. Both must lie in the future, expires_at after available_at (else 400 `validation_error` naming the field); the answer shows both (null when none). Debits take points from available lots, soonest-expiring first, then oldest. Work already due on the customer (releases, expiries, downgrades) is done first, so a debit never spends expired points.',
  },
  reverseTransaction: {
    errors: ['customer_not_found', 'transaction_not_found', 'transaction_not_reversible', 'reversal_exceeds_credit', 'insufficient_points', 'duplicate_transaction'],
    description:
      'Reverses `amount` (default: all not reversed yet) of an earn, positive adjust or event credit, e.g. when its order is refunded: taken from the credit’s own lot first (pending or available), then from the part of it that already expired (out of lifetime_expired, not the balance), the rest from the balance. lifetime_earned drops by the amount; in rolling tier qualification the credit counts for that much less. 404 `transaction_not_found` for an id the customer does not have; 422 `transaction_not_reversible` for a debit; 422 `reversal_exceeds_credit` beyond what is left to reverse (`reversible_amount`); 422 `insufficient_points` when the balance cannot cover the rest. Nothing is recorded on any refusal. `reference` follows the rules of points transactions.',
  },
  getProgramSettings: {
    errors: [],
    description: 'The business’s points lifecycle policy: `points_expiry_days` (null: points never expire), `pending_days`, `expiring_notice_days`, and `tier_qualification` (`lifetime`, or `rolling` over `window_days`). Until changed, the defaults: no expiry, no pending, notices 7 days ahead, lifetime tiers.',
  },
  updateProgramSettings: {
    errors: [],
    description:
      'Changes any field of the policy (`tier_qualification` merges field by field); the answer is the whole policy as it now stands. The policy applies to credits made from now on, never to earlier ones. `rolling` needs `window_days` (≥ 1); a change of mode or window lets earlier credits inside the window count, and nobody is downgraded sooner than window_days after it. Out of range: 400 `validation_error` naming the field.',
  },
  createKey: {
    errors: [],
    description: 'A private key gets the listed permissions (all eight when omitted), never one the calling key lacks; a public key always holds customers:read, points:read and rewards:read. The full key is in `key` of this answer only.',
  },
  listKeys: { errors: [], description: `Active and revoked keys, with their permissions and a hint of each key; never the keys themselves. ${listing}` },
  revokeKey: { errors: ['key_not_found', 'last_private_key'] },
  createTier: { errors: [] },
  listTiers: { errors: [], description: 'Every tier of the business, lowest threshold first, keyset-paginated like every list.' },
  getTier: { errors: ['tier_not_found'], description: 'One tier with its threshold, multiplier and benefits.' },
  updateTier: { errors: ['tier_not_found'] },
  createEventType: {
    errors: [],
    description: 'An event type and its rules: `default_points` plus every rule whose conditions hold on the event’s properties (`points`, or `points_per_unit` per `unit_size` of `unit_property`, capped at `max_points`). Names are unique in the business (409 `conflict`).',
  },
  listEventTypes: { errors: [], description: `The business’s event types with their rules. ${listing}` },
  getEventType: { errors: ['event_type_not_found'], description: 'One event type by its name.' },
  updateEventType: { errors: ['event_type_not_found'], description: 'Any field but the name; the new rules apply to events recorded afterwards, never to earlier ones.' },
  createReward: {
    errors: [],
    description: 'A reward customers can redeem for `points_cost` points. `stock_quantity` null means unlimited; an `achievement` is granted at most once per customer. New rewards are active.',
  },
  listRewards: { errors: [], description: `Filters: \`active\` (true or false) and \`reward_type\`. ${listing}` },
  getReward: { errors: ['reward_not_found'], description: 'One reward with its stock left and how often it was redeemed.' },
  updateReward: { errors: ['reward_not_found'], description: 'Any create field, plus `active`. Setting `stock_quantity` sets the stock left.' },
  createRedemption: {
    errors: ['customer_not_found', 'reward_not_found', 'duplicate_transaction', 'insufficient_points', 'out_of_stock', 'reward_inactive', 'achievement_already_granted'],
  },
  cancelRedemption: { errors: ['customer_not_found', 'redemption_not_found', 'redemption_already_cancelled', 'points_out_of_range'] },
  listRedemptions: { errors: ['customer_not_found'], description: `The customer’s redemptions, completed and cancelled. ${window} ${listing}` },
  recordEvent: { errors: ['customer_not_found', 'unknown_event_type', 'duplicate_transaction', 'points_out_of_range'] },
  listEvents: { errors: [], description: `Recorded events of the business. Filters: \`customer_id\`, \`event_type\`. ${window} ${listing}` },
  createWebhook: { errors: [] },
  listWebhooks: { errors: [], description: `The business’s webhook endpoints (never their secrets). ${listing}` },
  getWebhook: { errors: ['webhook_not_found'], description: 'One endpoint, without its secret.' },
  updateWebhook: { errors: ['webhook_not_found'] },
  deleteWebhook: { errors: ['webhook_not_found'] },
  rotateWebhookSecret: {
    errors: ['webhook_not_found'],
    description: 'A new signing secret, shown in this answer only. Messages are signed with both secrets for 24 hours, so receivers can switch without losing any.',
  },
  listWebhookDeliveries: {
    errors: ['webhook_not_found'],
    description: `Every delivery attempt to the endpoint, with the answer's status, an excerpt of its body, the error and the next attempt's time. ${listing}`,
  },
  sendTestWebhook: { errors: ['webhook_not_found'] },
  getMe: { errors: [], description: 'The key that sends the request: its id, type, name, hint and permissions, and its business. Any key; the dashboard signs in with it.' },
  getStats: { errors: ['public_key_not_allowed'] },
  previewEventType: { errors: ['event_type_not_found', 'points_out_of_range'] },
  auditCustomer: {
    errors: ['customer_not_found', 'public_key_not_allowed'],
    description: 'The customer’s hash chain checked event by event, and the read models compared with what the stream folds to: what `loyalty audit verify --customer` says. Private keys only.',
  },
};
