import type { EventData, EventType } from './catalogue.js';
import type { EventMetadata } from './metadata.js';

export interface EventDescription<T extends EventType> {
  /** The stream the event is written to, as a pattern (see src/events/streams.ts). */
  stream: string;
  /** What happened, for readers of the log. */
  description: string;
  /** Fields whose meaning the name and type do not say; nested fields by dotted path. */
  fields?: { [K in keyof EventData<T>]?: string } & Record<string, string>;
}

/**
 * What each event in the catalogue means: the source of docs/events.md (`npm run docs:events`).
 * Typed over the catalogue, so a new event type does not compile until it is described here.
 */
export const EventDescriptions: { [T in EventType]: EventDescription<T> } = {
  BusinessCreated: {
    stream: 'business-{business_id}',
    description: 'A business (tenant) was set up, with its plan.',
  },
  BusinessCustomerCounted: {
    stream: 'business-{business_id}',
    description:
      'A new customer was counted against a limited plan (`free`: at most 1,000). Written only for businesses on such a plan, atomically with the customer\'s registration.',
    fields: { customer_count: 'Customers of the business after this one.' },
  },
  BusinessPlanChanged: {
    stream: 'business-{business_id}',
    description:
      'An operator moved the business to another plan (`loyalty businesses set-plan`): a free business at its limit can add customers again once unlimited, and one moved to free is held to the limit from its current number of customers.',
    fields: {
      customer_count:
        'Customers of the business at the change (the read model\'s count, or the count on the stream if higher); a free plan counts on from it.',
    },
  },
  ApiKeyCreated: {
    stream: 'apikey-{key_id}',
    description: 'An API key was issued. The key itself is never stored: only its SHA-256 and a hint.',
    fields: {
      permissions: 'Permissions such as `customers:read`, `points:write`.',
      key_hash: 'Hex SHA-256 of the key; requests are authenticated by looking this up.',
      key_hint: 'The key\'s prefix and last 4 characters (`sk_live_…abcd`), to recognise it in lists.',
    },
  },
  ApiKeyRevoked: {
    stream: 'apikey-{key_id}',
    description: 'An API key was revoked; requests with it fail from the next one on.',
  },
  ReservationClaimed: {
    stream: 'unique-{kind}-{scope}-{hash of value}',
    description:
      'A value that must be unique was claimed: a customer e-mail or external reference (unique per business), or a points reference (unique per customer). Appended atomically with the event that uses the value.',
    fields: {
      owner_id: 'The customer that holds the value.',
      record: 'For references: the record created under it (`transaction`, `event`, `redemption`) and its id; null otherwise.',
    },
  },
  ReservationReleased: {
    stream: 'unique-{kind}-{scope}-{hash of value}',
    description: 'A unique value was freed (a customer changed or cleared its e-mail or external reference).',
  },
  CustomerRegistered: {
    stream: 'customer-{customer_id}',
    description: 'A customer was created, with its profile. Balance and lifetime totals start at 0, with no tier.',
  },
  CustomerUpdated: {
    stream: 'customer-{customer_id}',
    description: 'Profile fields changed; carries only the changed fields, each with its new value (null clears it).',
  },
  PointsEarned: {
    stream: 'customer-{customer_id}',
    description: 'Points were awarded (`earn` transaction). Makes a lot; raises lifetime_earned, and the balance unless the lot is pending.',
    fields: {
      transaction_id: 'The ledger line (`txn_…`), also the lot it makes.',
      amount: 'Points credited, after the multiplier.',
      balance: 'The balance right after this event.',
      available_at: 'When the lot becomes spendable (ISO); null: at once. Until then its points are pending.',
      expires_at: 'When the lot\'s remaining points expire (ISO); null: never.',
      base_amount: 'Points requested, before the multiplier.',
      multiplier: 'The multiplier of the tier held before this event (1 when none applied).',
    },
  },
  PointsDeducted: {
    stream: 'customer-{customer_id}',
    description: 'Points were taken away (`deduct` transaction). Lowers the balance; never below 0.',
    fields: {
      transaction_id: 'The ledger line (`txn_…`).',
      amount: 'Points deducted (positive).',
      balance: 'The balance right after this event.',
      lots: 'The lots the debit took its points from, in consumption order (`{transaction_id, amount}`); absent in events written before lots, which replay plans the same way.',
    },
  },
  PointsAdjusted: {
    stream: 'customer-{customer_id}',
    description:
      'A manual correction (`adjust` transaction), positive or negative; lifetime_earned moves by its amount. A positive one is a credit (it makes a lot), a negative one a debit (it consumes lots).',
    fields: {
      transaction_id: 'The ledger line (`txn_…`), also the lot a positive one makes.',
      amount: 'Signed change of the balance.',
      balance: 'The balance right after this event.',
      available_at: 'A positive one: when the lot becomes spendable (ISO); null: at once. Until then its points are pending.',
      expires_at: 'A positive one: when the lot\'s remaining points expire (ISO); null: never.',
      lots: 'The lots the debit took its points from, in consumption order (`{transaction_id, amount}`); absent in events written before lots, which replay plans the same way.',
    },
  },
  TierUpgraded: {
    stream: 'customer-{customer_id}',
    description:
      'The customer reached a higher tier. Written right after the credit that raised the qualifying points (lifetime_earned, or in `rolling` mode the credits of the window) past the threshold; several thresholds passed at once make one upgrade to the highest. Only TierDowngraded (rolling mode) demotes.',
    fields: {
      previous_tier: 'The tier held before, as it was defined then; null on the first evaluation.',
      new_tier: 'The tier reached, as it was defined then.',
      lifetime_earned: 'lifetime_earned when the tier was reached.',
    },
  },
  EventRecorded: {
    stream: 'customer-{customer_id}',
    description:
      "An occurrence of a business's event type (`POST /events`), and the points its rules gave. Recorded even when worth 0 points (then it makes no ledger line).",
    fields: {
      event_id: 'The recorded event (`evt_…`), also the ledger line when points were awarded.',
      properties: 'The properties sent with the event, which the rules read.',
      base_points: 'Points from default_points and the applying rules, before the multiplier.',
      multiplier: 'The multiplier of the tier held before this event.',
      points_awarded: 'floor(base_points × multiplier).',
      balance: 'The balance right after this event.',
      available_at: 'When points were awarded: when the lot becomes spendable (ISO); null: at once. Until then its points are pending.',
      expires_at: 'When points were awarded: when the lot\'s remaining points expire (ISO); null: never.',
    },
  },
  RewardRedeemed: {
    stream: 'customer-{customer_id}',
    description:
      "A customer spent points on a reward. Appended atomically with the reward stream's RewardStockTaken when the stock is limited.",
    fields: {
      redemption_id: 'The redemption (`red_…`), also its ledger line.',
      reward_title: 'The title when redeemed.',
      points_cost: 'Points spent (positive).',
      balance: 'The balance right after this event.',
      lots: 'The lots the debit took its points from, in consumption order (`{transaction_id, amount}`); absent in events written before lots, which replay plans the same way.',
    },
  },
  RedemptionCancelled: {
    stream: 'customer-{customer_id}',
    description: 'A redemption was cancelled and its points given back (a stock unit goes back to the reward too).',
    fields: {
      transaction_id: 'The ledger line that gives the points back.',
      points_cost: 'Points given back.',
      balance: 'The balance right after this event.',
      lots: 'The shares given back, to the lots the redemption took them from (a share whose lot has expired meanwhile expires again at once).',
    },
  },
  PointsReleased: {
    stream: 'customer-{customer_id}',
    description: 'Due work: a pending lot became spendable (ledger type `release`); its remaining points move from pending into the balance.',
    fields: {
      transaction_id: 'The ledger line: `txn_` + UUIDv5 of lot, kind and due instant, the same on every worker.',
      lot_transaction_id: 'The lot released (the id of the credit that made it).',
      amount: 'Points released.',
      balance: 'The balance right after this event.',
      released_at: 'The lot\'s available_at (the due instant, not when the work was done).',
    },
  },
  PointsExpiringNotified: {
    stream: 'customer-{customer_id}',
    description: 'Due work: `expiring_notice_days` before a lot with points left expires (or at once when it is made inside that window), once per lot; backs the `points.expiring` webhook. No ledger line.',
    fields: {
      lot_transaction_id: 'The lot about to expire.',
      amount: 'Its remaining points when noticed.',
      expires_at: 'When they expire.',
    },
  },
  PointsExpired: {
    stream: 'customer-{customer_id}',
    description:
      'Due work: the remaining points of the customer\'s lots that expire at one instant expired (one ledger line, type `expire`): they leave the balance (pending lots\' leave `pending`) and count in lifetime_expired. Version 1 named one lot (`lot_transaction_id`); it reads as version 2 with that lot alone in `lots`.',
    fields: {
      transaction_id: 'The ledger line: `txn_` + UUIDv5 of the first lot, kind and due instant (and a count when that lot expires again after a cancelled redemption gave points back).',
      lots: 'Each lot with the points it lost, in consumption order.',
      'lots[].transaction_id': 'The lot: the id of the credit that made it.',
      'lots[].amount': 'Its remaining points, which expired (0 only in a version 1 event of a lot with none left).',
      amount: 'Points expired: the lots\' together.',
      pending: 'The part of `amount` that was still pending: it leaves points_pending, not the balance (0 but for a lot whose release had not come). Null in version 1 events, which said nothing of it: the lot\'s status then tells.',
      balance: 'The balance right after this event.',
      expired_at: 'The lots\' expires_at.',
    },
  },
  PointsReversed: {
    stream: 'customer-{customer_id}',
    description:
      'All or part of a credit was reversed (ledger type `reversal`), e.g. its order was refunded: taken from the credit\'s lot first, then from its expired part (out of lifetime_expired), the rest from the balance. lifetime_earned drops by the amount.',
    fields: {
      transaction_id: 'The ledger line (`txn_…`).',
      reversed_transaction_id: 'The credit reversed (`txn_…` or `evt_…`).',
      amount: 'Points reversed (positive).',
      from_lot: 'Taken from the credit\'s own lot (pending or available).',
      from_expired: 'Taken from the part of the credit that had expired: lowers lifetime_expired, not the balance.',
      lots: 'The rest, taken from the other available lots in consumption order.',
      balance: 'The balance right after this event.',
    },
  },
  TierDowngraded: {
    stream: 'customer-{customer_id}',
    description:
      'Rolling tier qualification: the points credited in the last window_days fell below the held tier\'s threshold (the window slid, or a reversal or negative adjust took them below), so the customer moves down to the tier they qualify for.',
    fields: {
      previous_tier: 'The tier held before.',
      new_tier: 'The tier qualified for now; null below every threshold.',
      qualifying_points: 'Points credited in the window at downgraded_at.',
      downgraded_at: 'When the qualifying points fell below the threshold (not when the work was done); never sooner than window_days after a change of mode or window.',
    },
  },
  TierCreated: {
    stream: 'program-{business_id}',
    description: 'A tier was defined: reached when lifetime_earned ≥ points_threshold; its multiplier speeds up earning.',
  },
  TierUpdated: {
    stream: 'program-{business_id}',
    description:
      'A tier changed; carries the tier id and only the changed fields. A new threshold counts from each customer\'s next rise of lifetime_earned.',
  },
  EventTypeCreated: {
    stream: 'program-{business_id}',
    description: 'An event type was defined, with the rules that turn its occurrences into points.',
    fields: { default_points: 'Points every occurrence is worth before the rules.' },
  },
  EventTypeUpdated: {
    stream: 'program-{business_id}',
    description: 'An event type changed; carries its name and only the changed fields.',
  },
  ProgramSettingsChanged: {
    stream: 'program-{business_id}',
    description: 'The points lifecycle policy changed (`PATCH /api/v1/program`); carries the whole policy. It applies to credits made from changed_at on, never retroactively.',
    fields: {
      points_expiry_days: 'Days (of 24 h) a credit\'s points live once available; null: no expiry.',
      pending_days: 'Days a credit\'s points stay pending before they can be spent.',
      expiring_notice_days: 'Days before an expiry that the `points.expiring` notice is due.',
      'tier_qualification.mode': '`lifetime` (lifetime_earned, never demotes) or `rolling` (points credited in the last window_days).',
      'tier_qualification.window_days': 'The rolling window; null in lifetime mode.',
      changed_at: 'When the change was made.',
    },
  },
  RewardCreated: {
    stream: 'reward-{reward_id}',
    description: 'A reward was added to the catalogue.',
  },
  RewardUpdated: {
    stream: 'reward-{reward_id}',
    description: 'A reward changed; carries only the changed fields (a stock_quantity replaces the units left).',
  },
  RewardStockTaken: {
    stream: 'reward-{reward_id}',
    description: 'A redemption took one unit of a limited stock (appended atomically with the RewardRedeemed).',
    fields: { stock_quantity: 'Units left after this one was taken.' },
  },
  RewardStockReturned: {
    stream: 'reward-{reward_id}',
    description: 'A cancelled redemption gave its unit back.',
    fields: { stock_quantity: 'Units left after the return.' },
  },
  WebhookCreated: {
    stream: 'webhook-{webhook_id}',
    description: 'A webhook endpoint was registered. Its signing secret is never in the log.',
    fields: { events: 'Subscribed webhook event types, or `*` for all.' },
  },
  WebhookUpdated: {
    stream: 'webhook-{webhook_id}',
    description: 'A webhook endpoint changed (by its owner, or by the service, e.g. disabled after 410 Gone).',
  },
  WebhookSecretRotated: {
    stream: 'webhook-{webhook_id}',
    description: 'The signing secret was replaced; the previous one stays valid until the time given.',
  },
  WebhookDeleted: {
    stream: 'webhook-{webhook_id}',
    description: 'A webhook endpoint was deleted; nothing more is delivered to it.',
  },
};

/** What each metadata field means (every event carries all of them). */
export const MetadataDescriptions: Record<keyof EventMetadata, string> = {
  event_id: 'Unique id of the stored event (UUID).',
  event_version: 'Version of the event type\'s data schema it was written at (each type\'s current version is under it below).',
  business_id: 'The business (tenant) the event belongs to.',
  recorded_at: 'When the event was written (ISO 8601, UTC).',
  actor: 'Who caused it: the API key id, `cli`, or `system`.',
  request_id: 'The HTTP request that caused it (`X-Request-Id`); null outside a request.',
  correlation_id: 'Groups the events of one operation across streams; today the request id.',
  causation_id: 'The event that caused this one, when another event did; null today (every event comes from a request or command).',
  idempotency_key: 'The `Idempotency-Key` header of the request, if any.',
  prev_hash: 'SHA-256 (hex) of the previous event of the stream; 64 zeros for the first (see docs/auditing.md).',
  hash: 'SHA-256 (hex) over this event\'s canonical serialization and prev_hash.',
};
