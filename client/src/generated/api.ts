/**
 * Generated from the service's OpenAPI document by `npm run client:generate`
 * (openapi-typescript); do not edit. test/client/generated-fresh.test.ts fails when it is stale.
 */
export type paths = {
    "/api/v1/customers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List customers
         * @description Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain. Filters: `email` (exact, case-insensitive), `phone`, `external_reference`, `tier` (tier id). A window of creation times: `created_after` and `created_before` (RFC 3339, both exclusive; 400 when the end is not after the start). A public key must give an exact email, phone or external_reference: it looks customers up, it does not list them.
         */
        get: operations["listCustomers"];
        put?: never;
        /**
         * Create a customer
         * @description Email or phone is required. Email and external_reference are unique in the business: a taken one answers 409 `customer_exists` with the holder in `customer_id`. A new customer has balance 0 and tier null. On the free plan the 1,001st customer is refused (403 `plan_limit_reached`).
         */
        post: operations["createCustomer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a customer
         * @description The customer with its balance, lifetime totals and tier. Another business’s id answers 404 like an unknown one.
         */
        get: operations["getCustomer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update a customer
         * @description Any of the create fields; `null` clears an optional one and `metadata` is replaced as a whole. The answer is the customer as it now stands.
         */
        patch: operations["updateCustomer"];
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/summary": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's points, tier and recent activity
         * @description The balance and lifetime totals, the current tier and the next one with the points still needed, and the 10 newest balance changes, newest first. Needs customers:read and points:read.
         */
        get: operations["getCustomerSummary"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/transactions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's points ledger
         * @description Every ledger line of the customer, each with the balance right after it. A window of creation times: `created_after` and `created_before` (RFC 3339, both exclusive; 400 when the end is not after the start). Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listTransactions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/lots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's point lots
         * @description The customer's point lots (CONTRACT.md §13): one per credit, with what remains of it, its status and when it becomes available and expires. Debits take from available lots soonest-expiring first (never-expiring last), then oldest first. Only lots with points left unless `all=true`. The cursor is a lot's `transaction_id`. Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listLots"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's raw event stream (auditors; private key)
         * @description The customer’s raw events as stored in the log, for auditors: type, data, metadata (actor, request id, idempotency key…) and the log position. Private keys only; `starting_after` is a stream position.
         */
        get: operations["getCustomerStream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/points/transaction": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Earn, deduct or adjust points
         * @description A reused `reference` answers 409 `duplicate_transaction` with the original under `transaction`; a retry with the same `Idempotency-Key` replays the first response. 422 `insufficient_points` for a debit beyond the balance; 422 `points_out_of_range` for a credit that would take the balance or lifetime_earned past 2^53 − 1, or an earn whose tier multiplier would credit more than 1,000,000,000 points.
         */
        post: operations["createPointsTransaction"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/transactions/{transaction_id}/reverse": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reverse all or part of a credit (a refund)
         * @description Reverses `amount` (default: all not reversed yet) of an earn, positive adjust or event credit, e.g. when its order is refunded: taken from the credit’s own lot first (pending or available), then from the part of it that already expired (out of lifetime_expired, not the balance), the rest from the balance. lifetime_earned drops by the amount; in rolling tier qualification the credit counts for that much less. 404 `transaction_not_found` for an id the customer does not have; 422 `transaction_not_reversible` for a debit; 422 `reversal_exceeds_credit` beyond what is left to reverse (`reversible_amount`); 422 `insufficient_points` when the balance cannot cover the rest. Nothing is recorded on any refusal. `reference` follows the rules of points transactions.
         */
        post: operations["reverseTransaction"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys (never the keys themselves)
         * @description Active and revoked keys, with their permissions and a hint of each key; never the keys themselves. Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listKeys"];
        put?: never;
        /**
         * Create an API key (the full key is shown once)
         * @description A private key gets the listed permissions (all eight when omitted), never one the calling key lacks; a public key always holds customers:read, points:read and rewards:read. The full key is in `key` of this answer only.
         */
        post: operations["createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key (effective on the next request)
         * @description A key revokes only keys whose permissions it holds itself (403 `insufficient_permissions`). The business's last active private key with `keys:write` cannot be revoked over the API: 409 `last_private_key` (`loyalty keys revoke --force` can). Revoking a revoked key answers 200 with the key as it stands.
         */
        delete: operations["revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tiers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List tiers, lowest threshold first
         * @description Every tier of the business, lowest threshold first, keyset-paginated like every list.
         */
        get: operations["listTiers"];
        put?: never;
        /**
         * Create a tier
         * @description Names and thresholds are unique per business (409 `conflict`).
         */
        post: operations["createTier"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tiers/{tier_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a tier
         * @description One tier with its threshold, multiplier and benefits.
         */
        get: operations["getTier"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update a tier
         * @description Customers keep the tier they hold; a changed threshold applies from their next earn.
         */
        patch: operations["updateTier"];
        trace?: never;
    };
    "/api/v1/program": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The points lifecycle policy
         * @description The business’s points lifecycle policy: `points_expiry_days` (null: points never expire), `pending_days`, `expiring_notice_days`, and `tier_qualification` (`lifetime`, or `rolling` over `window_days`). Until changed, the defaults: no expiry, no pending, notices 7 days ahead, lifetime tiers.
         */
        get: operations["getProgramSettings"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change the points lifecycle policy
         * @description Changes any field of the policy (`tier_qualification` merges field by field); the answer is the whole policy as it now stands. The policy applies to credits made from now on, never to earlier ones. `rolling` needs `window_days` (≥ 1); a change of mode or window lets earlier credits inside the window count, and nobody is downgraded sooner than window_days after it. Out of range: 400 `validation_error` naming the field.
         */
        patch: operations["updateProgramSettings"];
        trace?: never;
    };
    "/api/v1/event-types": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List event types
         * @description The business’s event types with their rules. Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listEventTypes"];
        put?: never;
        /**
         * Create an event type with its points rules
         * @description An event type and its rules: `default_points` plus every rule whose conditions hold on the event’s properties (`points`, or `points_per_unit` per `unit_size` of `unit_property`, capped at `max_points`). Names are unique in the business (409 `conflict`).
         */
        post: operations["createEventType"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/event-types/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an event type
         * @description One event type by its name.
         */
        get: operations["getEventType"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update an event type (its rules apply to events recorded afterwards)
         * @description Any field but the name; the new rules apply to events recorded afterwards, never to earlier ones.
         */
        patch: operations["updateEventType"];
        trace?: never;
    };
    "/api/v1/rewards": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List rewards
         * @description Filters: `active` (true or false) and `reward_type`. Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listRewards"];
        put?: never;
        /**
         * Create a reward
         * @description A reward customers can redeem for `points_cost` points. `stock_quantity` null means unlimited; an `achievement` is granted at most once per customer. New rewards are active.
         */
        post: operations["createReward"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/rewards/{reward_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a reward
         * @description One reward with its stock left and how often it was redeemed.
         */
        get: operations["getReward"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Update a reward (also `active`, and the stock left)
         * @description Any create field, plus `active`. Setting `stock_quantity` sets the stock left.
         */
        patch: operations["updateReward"];
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/redemptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's redemptions
         * @description The customer’s redemptions, completed and cancelled. A window of creation times: `created_after` and `created_before` (RFC 3339, both exclusive; 400 when the end is not after the start). Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listRedemptions"];
        put?: never;
        /**
         * Redeem a reward
         * @description Takes the reward's points_cost from the balance (lifetime_redeemed grows) and one unit of its stock, atomically. Errors: 422 `insufficient_points`, 422 `reward_inactive`, 409 `out_of_stock`, 409 `achievement_already_granted`, 409 `duplicate_transaction`.
         */
        post: operations["createRedemption"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/redemptions/{redemption_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a redemption: the points and the stock unit go back
         * @description Answers the redemption, now `cancelled`, with `balance` the customer’s balance right after the cancellation. Errors: 409 `redemption_already_cancelled`; 422 `points_out_of_range` when the points returned would take the balance past 2^53 − 1.
         */
        post: operations["cancelRedemption"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List recorded events
         * @description Recorded events of the business. Filters: `customer_id`, `event_type`. A window of creation times: `created_after` and `created_before` (RFC 3339, both exclusive; 400 when the end is not after the start). Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listEvents"];
        put?: never;
        /**
         * Record an event; the event type’s rules decide its points
         * @description points_awarded = floor((default_points + points of every applying rule) × the multiplier of the tier held before the event). An event worth 0 points is recorded too. 422 `unknown_event_type`; 422 `points_out_of_range` when the event would award more than 1,000,000,000 points, or take the balance or lifetime_earned past 2^53 − 1 (nothing is recorded); a reused reference: 409 `duplicate_transaction` with the original under `event`.
         */
        post: operations["recordEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook endpoints
         * @description The business’s webhook endpoints (never their secrets). Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Create a webhook endpoint (the signing secret is shown once)
         * @description Deliveries follow Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). URLs must be https and resolve to public addresses (LOYALTY_WEBHOOK_ALLOW_PRIVATE=1 lifts this for development).
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{webhook_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a webhook endpoint
         * @description One endpoint, without its secret.
         */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /**
         * Delete a webhook endpoint (no further deliveries)
         * @description Messages still waiting for delivery end `cancelled`. A deleted endpoint is gone: a second DELETE answers 404 `webhook_not_found`, as a GET would; to retry a DELETE whose answer was lost, send the same Idempotency-Key and get the first answer again.
         */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        /**
         * Update a webhook endpoint (url, events, description, active)
         * @description `active: false` stops deliveries: messages still waiting end `cancelled` and are not revived by `active: true`.
         */
        patch: operations["updateWebhook"];
        trace?: never;
    };
    "/api/v1/webhooks/{webhook_id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate the signing secret (the old one keeps signing alongside for 24 hours)
         * @description A new signing secret, shown in this answer only. Messages are signed with both secrets for 24 hours, so receivers can switch without losing any.
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{webhook_id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every delivery attempt to this endpoint
         * @description Every delivery attempt to the endpoint, with the answer's status, an excerpt of its body, the error and the next attempt's time. Oldest first, keyset-paginated: `limit` (1–200, default 50) and `starting_after`; a `Link: <…>; rel="next"` header names the next page while more remain.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{webhook_id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Queue a webhook.test message to this endpoint
         * @description A disabled endpoint (`active: false`) receives nothing: 409 `conflict` until it is enabled again.
         */
        post: operations["sendTestWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The key this request is signed with: its type, permissions and business (any key)
         * @description The key that sends the request: its id, type, name, hint and permissions, and its business. Any key; the dashboard signs in with it.
         */
        get: operations["getMe"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Points issued, redeemed and expired per day, points outstanding and customers per tier (private key)
         * @description Days are UTC and inclusive; by default the last 30 days up to today, at most 366. Computed from the read models: the days from one row per day with movement, what stands now from the customers.
         */
        get: operations["getStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/event-types/{name}/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * What an event of this type would award, rule by rule (records nothing)
         * @description The points each rule gives for these properties and the total, for a customer with no tier (multiplier 1). Nothing is recorded, so public keys may call it and no Idempotency-Key is needed. A total over 1,000,000,000 answers 422 `points_out_of_range`, as recording the event would.
         */
        post: operations["previewEventType"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/customers/{customer_id}/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A customer's hash-chain check and read-model diff (private key), as `loyalty audit verify --customer` does
         * @description The customer’s hash chain checked event by event, and the read models compared with what the stream folds to: what `loyalty audit verify --customer` says. Private keys only.
         */
        get: operations["auditCustomer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
};
export type webhooks = {
    "tier.upgraded": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * tier.upgraded message
         * @description A customer reached a higher tier; sent after the credit that caused it was recorded. Sent to endpoints subscribed to `tier.upgraded` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["tierUpgradedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "customer.created": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * customer.created message
         * @description A customer was created. Sent to endpoints subscribed to `customer.created` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["customerCreatedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.earned": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.earned message
         * @description Points were earned (POST points/transaction with `type: earn`); `amount` is after the tier multiplier, `base_amount` before it. Sent to endpoints subscribed to `points.earned` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsEarnedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.deducted": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.deducted message
         * @description Points were deducted outside the reward catalogue (`type: deduct`). Sent to endpoints subscribed to `points.deducted` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsDeductedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.adjusted": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.adjusted message
         * @description Points were adjusted (`type: adjust`); `amount` may be negative. Sent to endpoints subscribed to `points.adjusted` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsAdjustedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "event.recorded": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * event.recorded message
         * @description An event was recorded; `points_awarded` may be 0. Sent to endpoints subscribed to `event.recorded` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["eventRecordedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "reward.redeemed": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * reward.redeemed message
         * @description A customer redeemed a reward. Sent to endpoints subscribed to `reward.redeemed` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["rewardRedeemedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "redemption.cancelled": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * redemption.cancelled message
         * @description A redemption was cancelled: the points and the stock unit went back. Sent to endpoints subscribed to `redemption.cancelled` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["redemptionCancelledWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.released": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.released message
         * @description Pending points became spendable (ledger type `release`); `lot_transaction_id` is the credit, `released_at` its `available_at`. Sent to endpoints subscribed to `points.released` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsReleasedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.expiring": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.expiring message
         * @description Points of a lot expire in `expiring_notice_days` or less unless spent first; sent once per lot, `transaction_id` names the lot (its credit). Sent to endpoints subscribed to `points.expiring` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsExpiringWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.expired": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.expired message
         * @description The remaining points of a customer's lots that expire at one instant expired (ledger type `expire`): one notification per customer and instant; `transaction_id` is the expiry's ledger line, `amount` the points together (`pending` of them were not spendable yet), `lots` each lot (its credit's id) with its points, `expired_at` the lots' `expires_at`. Sent to endpoints subscribed to `points.expired` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsExpiredWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "points.reversed": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * points.reversed message
         * @description All or part of a credit was reversed (ledger type `reversal`): `from_lot` came out of its lot, `from_expired` out of lifetime_expired, `lots` from the balance. Sent to endpoints subscribed to `points.reversed` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["pointsReversedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "tier.downgraded": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * tier.downgraded message
         * @description Rolling tier qualification: the points credited in the window fell below the held tier's threshold; `new_tier` is null below every threshold. Sent to endpoints subscribed to `tier.downgraded` or `*`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.
         */
        post: operations["tierDowngradedWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
};
export type components = {
    schemas: {
        TierUpgradedWebhook: {
            /** @enum {string} */
            type: "tier.upgraded";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                previous_tier: {
                    id: string;
                    name: string;
                    points_threshold: number;
                    multiplier: number;
                    benefits: string[];
                } | null;
                new_tier: {
                    id: string;
                    name: string;
                    points_threshold: number;
                    multiplier: number;
                    benefits: string[];
                };
                lifetime_earned: number;
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                upgraded_at: string;
            };
        };
        CustomerCreatedWebhook: {
            /** @enum {string} */
            type: "customer.created";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                email: string | null;
                phone: string | null;
                first_name: string | null;
                last_name: string | null;
                external_reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        PointsEarnedWebhook: {
            /** @enum {string} */
            type: "points.earned";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                amount: number;
                balance: number;
                description: string | null;
                reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                base_amount: number;
                multiplier: number;
                /** @default null */
                available_at: string | null;
                /** @default null */
                expires_at: string | null;
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        PointsDeductedWebhook: {
            /** @enum {string} */
            type: "points.deducted";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                amount: number;
                balance: number;
                description: string | null;
                reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                lots?: {
                    transaction_id: string;
                    amount: number;
                }[];
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        PointsAdjustedWebhook: {
            /** @enum {string} */
            type: "points.adjusted";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                amount: number;
                balance: number;
                description: string | null;
                reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                /** @default null */
                available_at: string | null;
                /** @default null */
                expires_at: string | null;
                lots?: {
                    transaction_id: string;
                    amount: number;
                }[];
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        EventRecordedWebhook: {
            /** @enum {string} */
            type: "event.recorded";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                event_id: string;
                event_type: string;
                properties: {
                    [key: string]: unknown;
                };
                reference: string | null;
                base_points: number;
                multiplier: number;
                points_awarded: number;
                balance: number;
                /** @default null */
                available_at: string | null;
                /** @default null */
                expires_at: string | null;
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        RewardRedeemedWebhook: {
            /** @enum {string} */
            type: "reward.redeemed";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                redemption_id: string;
                reward_id: string;
                reward_title: string;
                reward_type: string;
                points_cost: number;
                reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                balance: number;
                lots?: {
                    transaction_id: string;
                    amount: number;
                }[];
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        RedemptionCancelledWebhook: {
            /** @enum {string} */
            type: "redemption.cancelled";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                redemption_id: string;
                reward_id: string;
                points_cost: number;
                balance: number;
                lots?: {
                    transaction_id: string;
                    amount: number;
                }[];
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                cancelled_at: string;
            };
        };
        PointsReleasedWebhook: {
            /** @enum {string} */
            type: "points.released";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                lot_transaction_id: string;
                amount: number;
                balance: number;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                released_at: string;
                customer_id: string;
            };
        };
        PointsExpiringWebhook: {
            /** @enum {string} */
            type: "points.expiring";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                customer_id: string;
                /** @description The lot: the id of the credit that made it. */
                transaction_id: string;
                /** @description The points of the lot that will expire unless spent first. */
                amount: number;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                expires_at: string;
            };
        };
        PointsExpiredWebhook: {
            /** @enum {string} */
            type: "points.expired";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                lots: {
                    transaction_id: string;
                    amount: number;
                }[];
                amount: number;
                pending: number | null;
                balance: number;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                expired_at: string;
                customer_id: string;
            };
        };
        PointsReversedWebhook: {
            /** @enum {string} */
            type: "points.reversed";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                transaction_id: string;
                reversed_transaction_id: string;
                amount: number;
                from_lot: number;
                from_expired: number;
                lots: {
                    transaction_id: string;
                    amount: number;
                }[];
                balance: number;
                description: string | null;
                reference: string | null;
                metadata: {
                    [key: string]: unknown;
                };
                customer_id: string;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        TierDowngradedWebhook: {
            /** @enum {string} */
            type: "tier.downgraded";
            /**
             * Format: date-time
             * @description When the event was recorded.
             * @example 2026-11-22T14:03:07.123Z
             */
            timestamp: string;
            data: {
                previous_tier: {
                    id: string;
                    name: string;
                    points_threshold: number;
                    multiplier: number;
                    benefits: string[];
                };
                new_tier: {
                    id: string;
                    name: string;
                    points_threshold: number;
                    multiplier: number;
                    benefits: string[];
                } | null;
                qualifying_points: number;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                downgraded_at: string;
                customer_id: string;
            };
        };
        /**
         * @example {
         *       "id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "email": "ada@example.com",
         *       "phone": "+44 20 7946 0958",
         *       "first_name": "Ada",
         *       "last_name": "Lovelace",
         *       "external_reference": "user-1042",
         *       "metadata": {
         *         "source": "signup-form"
         *       },
         *       "points_balance": 620,
         *       "lifetime_earned": 720,
         *       "lifetime_redeemed": 100,
         *       "points_pending": 0,
         *       "lifetime_expired": 0,
         *       "next_expiring": {
         *         "amount": 150,
         *         "expires_at": "2027-11-22T14:03:07.123Z"
         *       },
         *       "tier": {
         *         "id": "tier_9XkQ2mP4vR7tY1wB3nL5",
         *         "name": "Silver",
         *         "points_threshold": 500,
         *         "multiplier": 1.25,
         *         "benefits": [
         *           "Free delivery"
         *         ],
         *         "achieved_at": "2026-11-22T14:03:07.123Z"
         *       },
         *       "created_at": "2026-11-20T09:12:44.501Z",
         *       "updated_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        Customer: {
            /** @example cust_4fTz9QbLr2XcVw7NkP1a */
            id: string;
            email: string | null;
            phone: string | null;
            first_name: string | null;
            last_name: string | null;
            external_reference: string | null;
            metadata: {
                [key: string]: unknown;
            };
            points_balance: number;
            lifetime_earned: number;
            lifetime_redeemed: number;
            /** @description Points credited but not spendable yet (until their `available_at`). */
            points_pending: number;
            lifetime_expired: number;
            next_expiring: components["schemas"]["NextExpiring"];
            tier: components["schemas"]["CustomerTier"];
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string;
        };
        /**
         * @description The points that expire soonest unless spent first, and when; null when no points expire.
         * @example {
         *       "amount": 150,
         *       "expires_at": "2027-11-22T14:03:07.123Z"
         *     }
         */
        NextExpiring: {
            amount: number;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            expires_at: string;
        } | null;
        /**
         * @example {
         *       "id": "tier_9XkQ2mP4vR7tY1wB3nL5",
         *       "name": "Silver",
         *       "points_threshold": 500,
         *       "multiplier": 1.25,
         *       "benefits": [
         *         "Free delivery"
         *       ],
         *       "achieved_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        CustomerTier: {
            id: string;
            name: string;
            points_threshold: number;
            multiplier: number;
            benefits: string[];
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            achieved_at: string;
        } | null;
        /** @description `validation_error` (400): A field is missing, mistyped, out of range or unknown (body, query, path or a header such as Idempotency-Key), or holds a NUL byte or an unpaired surrogate. */
        ValidationErrorError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "validation_error";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A field is missing, mistyped, out of range or unknown (body, query, path or a header such as Idempotency-Key), or holds a NUL byte or an unpaired surrogate.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
            /**
             * @description Every problem found, as `{path, message}`.
             * @example [
             *       {
             *         "path": "amount",
             *         "message": "must be greater than 0"
             *       }
             *     ]
             */
            details: {
                path: string;
                message: string;
            }[];
        };
        /** @description `missing_api_key` (401): No key in `X-API-Key` or `Authorization: Bearer`. */
        MissingApiKeyError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "missing_api_key";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No key in `X-API-Key` or `Authorization: Bearer`.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `invalid_api_key` (401): The key is unknown, malformed or revoked. */
        InvalidApiKeyError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "invalid_api_key";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The key is unknown, malformed or revoked.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `ambiguous_api_key` (401): `X-API-Key` and `Authorization` carry different keys. */
        AmbiguousApiKeyError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "ambiguous_api_key";
            /**
             * @description For people; may change. Branch on `code`.
             * @example `X-API-Key` and `Authorization` carry different keys.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `insufficient_permissions` (403): The key lacks the permission the route needs (the message names it), or would grant or revoke one it does not hold. */
        InsufficientPermissionsError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "insufficient_permissions";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The key lacks the permission the route needs (the message names it), or would grant or revoke one it does not hold.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `public_key_not_allowed` (403): A public key on a write, on a private-only route, or listing customers without an exact email, phone or external_reference filter. */
        PublicKeyNotAllowedError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "public_key_not_allowed";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A public key on a write, on a private-only route, or listing customers without an exact email, phone or external_reference filter.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `payload_too_large` (413): The body is over 64 KiB. */
        PayloadTooLargeError: {
            /** @enum {string} */
            code: "payload_too_large";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The body is over 64 KiB.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `rate_limited` (429): The key used up its request budget; `RateLimit` and `RateLimit-Policy` describe it. */
        RateLimitedError: {
            /** @enum {string} */
            code: "rate_limited";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The key used up its request budget; `RateLimit` and `RateLimit-Policy` describe it.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `internal_error` (500): A fault on the service’s side; it is logged with the request id. */
        InternalErrorError: {
            /** @enum {string} */
            code: "internal_error";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A fault on the service’s side; it is logged with the request id.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `unavailable` (503): A store is unreachable, out of connections or does not answer in time; nothing was half-written. */
        UnavailableError: {
            /** @enum {string} */
            code: "unavailable";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A store is unreachable, out of connections or does not answer in time; nothing was half-written.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `invalid_json` (400): The body is not valid JSON, has duplicate keys in one object, or is nested deeper than 32 levels. */
        InvalidJsonError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "invalid_json";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The body is not valid JSON, has duplicate keys in one object, or is nested deeper than 32 levels.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `plan_limit_reached` (403): A free business already has 1,000 customers. */
        PlanLimitReachedError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "plan_limit_reached";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A free business already has 1,000 customers.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `customer_exists` (409): The email or external_reference is already taken in this business. */
        CustomerExistsError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "customer_exists";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The email or external_reference is already taken in this business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
            /**
             * @description The customer that holds the email or external_reference.
             * @example cust_4fTz9QbLr2XcVw7NkP1a
             */
            customer_id: string;
        };
        /** @description `conflict` (409): A tier or event type name or threshold is already taken, or a write met so much concurrency on one resource that its retries ran out (then with `Retry-After`). */
        ConflictError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "conflict";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A tier or event type name or threshold is already taken, or a write met so much concurrency on one resource that its retries ran out (then with `Retry-After`).
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `idempotency_key_in_progress` (409): A request with the same Idempotency-Key is still running. */
        IdempotencyKeyInProgressError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "idempotency_key_in_progress";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A request with the same Idempotency-Key is still running.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `unsupported_media_type` (415): A body sent without `Content-Type: application/json` (optionally `; charset=utf-8`). */
        UnsupportedMediaTypeError: {
            /** @enum {string} */
            code: "unsupported_media_type";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A body sent without `Content-Type: application/json` (optionally `; charset=utf-8`).
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `idempotency_key_reused` (422): The Idempotency-Key was used for a different request (method, path or body) in the last 24 hours. */
        IdempotencyKeyReusedError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "idempotency_key_reused";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The Idempotency-Key was used for a different request (method, path or body) in the last 24 hours.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "email": "ada@example.com",
         *       "first_name": "Ada",
         *       "last_name": "Lovelace",
         *       "external_reference": "user-1042",
         *       "metadata": {
         *         "source": "signup-form"
         *       }
         *     }
         */
        CustomerCreate: {
            /**
             * Format: email
             * @example ada@example.com
             */
            email?: string;
            /** @example +44 20 7946 0958 */
            phone?: string;
            first_name?: string;
            last_name?: string;
            /** @description The caller's own user id. */
            external_reference?: string;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `customer_not_found` (404): No customer with this id in the key’s business. */
        CustomerNotFoundError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "customer_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No customer with this id in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "phone": "+44 20 7946 0958",
         *       "metadata": {
         *         "newsletter": true
         *       }
         *     }
         */
        CustomerUpdate: {
            /**
             * Format: email
             * @example ada@example.com
             */
            email?: string | null;
            /** @example +44 20 7946 0958 */
            phone?: string | null;
            first_name?: string | null;
            last_name?: string | null;
            /** @description The caller's own user id. */
            external_reference?: string | null;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /**
         * @example {
         *       "customer": {
         *         "id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *         "email": "ada@example.com",
         *         "first_name": "Ada",
         *         "last_name": "Lovelace"
         *       },
         *       "points": {
         *         "balance": 620,
         *         "lifetime_earned": 720,
         *         "lifetime_redeemed": 100,
         *         "pending": 0,
         *         "lifetime_expired": 0,
         *         "next_expiring": {
         *           "amount": 150,
         *           "expires_at": "2027-11-22T14:03:07.123Z"
         *         }
         *       },
         *       "tier": {
         *         "current": {
         *           "id": "tier_9XkQ2mP4vR7tY1wB3nL5",
         *           "name": "Silver",
         *           "points_threshold": 500,
         *           "multiplier": 1.25,
         *           "benefits": [
         *             "Free delivery"
         *           ],
         *           "achieved_at": "2026-11-22T14:03:07.123Z"
         *         },
         *         "next": {
         *           "id": "tier_1aS3dF5gH7jK9lZ2xC4v",
         *           "name": "Gold",
         *           "points_threshold": 1000,
         *           "points_needed": 280
         *         }
         *       },
         *       "recent_activity": [
         *         {
         *           "type": "earn",
         *           "amount": 150,
         *           "description": "Order #7731",
         *           "created_at": "2026-11-22T14:03:07.123Z"
         *         },
         *         {
         *           "type": "redemption",
         *           "amount": 100,
         *           "description": "Free coffee",
         *           "created_at": "2026-11-21T17:40:02.004Z"
         *         }
         *       ]
         *     }
         */
        CustomerSummary: {
            customer: {
                id: string;
                email: string | null;
                first_name: string | null;
                last_name: string | null;
            };
            points: {
                balance: number;
                lifetime_earned: number;
                lifetime_redeemed: number;
                /** @description Points credited but not spendable yet. */
                pending: number;
                lifetime_expired: number;
                next_expiring: components["schemas"]["NextExpiring"];
            };
            tier: {
                current: components["schemas"]["CustomerTier"];
                next: {
                    id: string;
                    name: string;
                    points_threshold: number;
                    points_needed: number;
                } | null;
            };
            recent_activity: {
                /** @enum {string} */
                type: "earn" | "deduct" | "adjust" | "event" | "redemption" | "redemption_cancelled" | "release" | "expire" | "reversal";
                amount: number;
                description: string | null;
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            }[];
        };
        /**
         * @example {
         *       "id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
         *       "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "type": "earn",
         *       "amount": 150,
         *       "balance": 620,
         *       "base_amount": 120,
         *       "multiplier": 1.25,
         *       "description": "Order #7731",
         *       "reference": "order-7731",
         *       "metadata": {
         *         "store": "berlin-1"
         *       },
         *       "available_at": null,
         *       "expires_at": "2027-11-22T14:03:07.123Z",
         *       "created_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        PointsTransaction: {
            /** @example txn_8ZkqP2mXv4RtY6wQ1bN3 */
            id: string;
            customer_id: string;
            /**
             * @description A ledger line; POST answers earn, deduct or adjust.
             * @enum {string}
             */
            type: "earn" | "deduct" | "adjust" | "event" | "redemption" | "redemption_cancelled" | "release" | "expire" | "reversal";
            /** @description Points moved; type says the direction (deduct and redemption take points away). */
            amount: number;
            /** @description The balance right after this transaction. */
            balance: number;
            /** @description earn: the amount before the multiplier. */
            base_amount?: number;
            /** @description earn: the multiplier applied. */
            multiplier?: number;
            description: string | null;
            reference: string | null;
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @description When the points became or become spendable; null: at once (and for debits).
             * @example 2026-11-22T14:03:07.123Z
             */
            available_at: string | null;
            /**
             * Format: date-time
             * @description When the points expire; null: never (and for debits).
             * @example 2026-11-22T14:03:07.123Z
             */
            expires_at: string | null;
            /** @description reversal: the credit reversed. */
            reversed_transaction_id?: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
        };
        /**
         * @example {
         *       "transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
         *       "amount": 150,
         *       "remaining": 150,
         *       "reversed": 0,
         *       "status": "available",
         *       "available_at": null,
         *       "expires_at": "2027-11-22T14:03:07.123Z",
         *       "created_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        Lot: {
            /** @description The credit that made the lot (`txn_…` or `evt_…`); the list's cursor. */
            transaction_id: string;
            /** @description Points credited. */
            amount: number;
            /** @description Points still in the lot (spendable once available). */
            remaining: number;
            /** @description Points reversals of this credit took back. */
            reversed: number;
            /** @enum {string} */
            status: "pending" | "available" | "spent" | "expired";
            /**
             * Format: date-time
             * @description While pending: when it becomes spendable.
             * @example 2026-11-22T14:03:07.123Z
             */
            available_at: string | null;
            /**
             * Format: date-time
             * @description When its remaining points expire; null: never.
             * @example 2026-11-22T14:03:07.123Z
             */
            expires_at: string | null;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
        };
        /**
         * @example {
         *       "position": 3,
         *       "type": "PointsEarned",
         *       "data": {
         *         "transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
         *         "amount": 150,
         *         "balance": 620,
         *         "base_amount": 120,
         *         "multiplier": 1.25,
         *         "description": "Order #7731",
         *         "reference": "order-7731",
         *         "metadata": {}
         *       },
         *       "metadata": {
         *         "business_id": "biz_0pL9kM8nJ7bH6vG5cF4x",
         *         "actor": "key_Q2w3E4r5T6y7U8i9O0pA",
         *         "request_id": "req_V1StGXR8Z5jdHi6BmyT",
         *         "idempotency_key": "order-7731-earn"
         *       },
         *       "recorded_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        StreamEvent: {
            position: number;
            /**
             * @description The event type as logged (PointsEarned, TierUpgraded, …): see docs/events.md.
             * @example PointsEarned
             */
            type: string;
            data: {
                [key: string]: unknown;
            };
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            recorded_at: string;
        };
        /** @description `duplicate_transaction` (409): The `reference` was already used for this customer (by a transaction, an event or a redemption); nothing was recorded. */
        DuplicateTransactionError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "duplicate_transaction";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The `reference` was already used for this customer (by a transaction, an event or a redemption); nothing was recorded.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
            transaction?: components["schemas"]["PointsTransaction"] & unknown;
            event?: components["schemas"]["Event"];
            redemption?: components["schemas"]["Redemption"];
        };
        /**
         * @description The original, when the reference was used by an event.
         * @example {
         *       "id": "evt_7uI9oP2aS5dF8gH1jK4l",
         *       "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "event_type": "purchase",
         *       "properties": {
         *         "amount": 120,
         *         "currency": "EUR"
         *       },
         *       "reference": "order-7732",
         *       "points_awarded": 312,
         *       "base_points": 250,
         *       "multiplier": 1.25,
         *       "balance": 932,
         *       "available_at": null,
         *       "expires_at": null,
         *       "created_at": "2026-11-22T14:05:41.870Z"
         *     }
         */
        Event: {
            /** @example evt_7uI9oP2aS5dF8gH1jK4l */
            id: string;
            customer_id: string;
            event_type: string;
            properties: {
                [key: string]: unknown;
            };
            reference: string | null;
            points_awarded: number;
            base_points: number;
            multiplier: number;
            balance: number;
            /**
             * Format: date-time
             * @description When the points became or become spendable; null: at once (and for debits).
             * @example 2026-11-22T14:03:07.123Z
             */
            available_at: string | null;
            /**
             * Format: date-time
             * @description When the points expire; null: never (and for debits).
             * @example 2026-11-22T14:03:07.123Z
             */
            expires_at: string | null;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
        };
        /**
         * @description The original, when the reference was used by a redemption.
         * @example {
         *       "id": "red_5tR2yU8iO1pA4sD7fG0h",
         *       "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "reward_id": "rew_3mN8bV1cX6zL4kJ2hG9f",
         *       "points_cost": 100,
         *       "balance": 520,
         *       "status": "completed",
         *       "reference": "pos-7733",
         *       "metadata": {},
         *       "created_at": "2026-11-22T14:05:41.870Z",
         *       "cancelled_at": null
         *     }
         */
        Redemption: {
            /** @example red_5tR2yU8iO1pA4sD7fG0h */
            id: string;
            customer_id: string;
            reward_id: string;
            points_cost: number;
            /** @description The customer's balance right after the redemption; in the answer to a cancel, right after the cancellation. */
            balance: number;
            /** @enum {string} */
            status: "completed" | "cancelled";
            reference: string | null;
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            cancelled_at: string | null;
        };
        /** @description `insufficient_points` (422): A debit (deduct, negative adjust, redemption) would take the balance below 0; nothing was recorded. */
        InsufficientPointsError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "insufficient_points";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A debit (deduct, negative adjust, redemption) would take the balance below 0; nothing was recorded.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
            /**
             * @description The balance the debit met.
             * @example 120
             */
            balance: number;
        };
        /** @description `points_out_of_range` (422): An event’s rules award more than 1,000,000,000 points, or a balance or lifetime total would pass 2^53 − 1. */
        PointsOutOfRangeError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "points_out_of_range";
            /**
             * @description For people; may change. Branch on `code`.
             * @example An event’s rules award more than 1,000,000,000 points, or a balance or lifetime total would pass 2^53 − 1.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "type": "earn",
         *       "amount": 120,
         *       "reference": "order-7731",
         *       "description": "Order #7731",
         *       "apply_multiplier": true,
         *       "metadata": {
         *         "store": "berlin-1"
         *       },
         *       "expires_at": "2027-11-22T14:03:07.123Z"
         *     }
         */
        PointsTransactionCreate: {
            /**
             * @description earn and deduct take amount > 0; adjust takes amount ≠ 0.
             * @enum {string}
             */
            type: "earn" | "deduct" | "adjust";
            amount: number;
            description?: string;
            /** @description Unique per customer across transactions, events and redemptions, forever. */
            reference?: string;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
            /** @description earn only: multiply by the customer's tier multiplier. */
            apply_multiplier?: boolean;
            /**
             * Format: date-time
             * @description When the points become spendable (in the future); until then they are pending. Default: now + the program's pending_days.
             * @example 2026-12-01T00:00:00.000Z
             */
            available_at?: string;
            /**
             * Format: date-time
             * @description When the points expire (in the future, after available_at); null: never. Default: the program's points_expiry_days after the points become available.
             * @example 2027-12-01T00:00:00.000Z
             */
            expires_at?: string | null;
        };
        /** @description `transaction_not_found` (404): A reversal names a transaction this customer does not have. */
        TransactionNotFoundError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "transaction_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A reversal names a transaction this customer does not have.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `transaction_not_reversible` (422): A reversal names a transaction that is not a credit (a deduction, negative adjust, redemption, release, expiry or reversal); nothing was recorded. */
        TransactionNotReversibleError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "transaction_not_reversible";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A reversal names a transaction that is not a credit (a deduction, negative adjust, redemption, release, expiry or reversal); nothing was recorded.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `reversal_exceeds_credit` (422): A reversal asks for more than the credit’s points not reversed yet; nothing was recorded. */
        ReversalExceedsCreditError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "reversal_exceeds_credit";
            /**
             * @description For people; may change. Branch on `code`.
             * @example A reversal asks for more than the credit’s points not reversed yet; nothing was recorded.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "amount": 50,
         *       "reference": "refund-7731",
         *       "description": "Order #7731 partly refunded"
         *     }
         */
        ReversalCreate: {
            /** @description Points to reverse; default: all of the credit not reversed yet. */
            amount?: number;
            /** @description Unique per customer across transactions, events and redemptions, forever (e.g. the refund id). */
            reference?: string;
            description?: string;
        };
        /**
         * @example {
         *       "id": "key_Q2w3E4r5T6y7U8i9O0pA",
         *       "type": "private",
         *       "name": "checkout server",
         *       "permissions": [
         *         "customers:read",
         *         "customers:write",
         *         "points:read",
         *         "points:write"
         *       ],
         *       "key_hint": "sk_live_…x9Qa",
         *       "created_at": "2026-11-22T14:03:07.123Z",
         *       "revoked_at": null,
         *       "key": "sk_live_4eC39HqLyjWDarjtT1zdp7dcX9Qa8bN2mK5pR7tV"
         *     }
         */
        CreatedApiKey: components["schemas"]["ApiKey"] & {
            /** @description The full key. Shown only in this response; null when the answer is an Idempotency-Key replay (secrets are never stored). */
            key: string | null;
        };
        /**
         * @example {
         *       "id": "key_Q2w3E4r5T6y7U8i9O0pA",
         *       "type": "private",
         *       "name": "checkout server",
         *       "permissions": [
         *         "customers:read",
         *         "customers:write",
         *         "points:read",
         *         "points:write"
         *       ],
         *       "key_hint": "sk_live_…x9Qa",
         *       "created_at": "2026-11-22T14:03:07.123Z",
         *       "revoked_at": null
         *     }
         */
        ApiKey: {
            /** @example key_Q2w3E4r5T6y7U8i9O0pA */
            id: string;
            /** @enum {string} */
            type: "private" | "public";
            name: string | null;
            permissions: ("customers:read" | "customers:write" | "points:read" | "points:write" | "rewards:read" | "rewards:write" | "webhooks:write" | "keys:write")[];
            /** @example sk_live_…x9Qa */
            key_hint: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            revoked_at: string | null;
        };
        /**
         * @example {
         *       "type": "private",
         *       "name": "checkout server",
         *       "permissions": [
         *         "customers:read",
         *         "customers:write",
         *         "points:read",
         *         "points:write"
         *       ]
         *     }
         */
        ApiKeyCreate: {
            /** @enum {string} */
            type: "private" | "public";
            name?: string;
            /** @description Private keys only; all permissions when omitted. A key cannot grant what it lacks. */
            permissions?: ("customers:read" | "customers:write" | "points:read" | "points:write" | "rewards:read" | "rewards:write" | "webhooks:write" | "keys:write")[];
        };
        /** @description `key_not_found` (404): No API key with this id in the key’s business. */
        KeyNotFoundError: {
            /** @enum {string} */
            code: "key_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No API key with this id in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `last_private_key` (409): Revoking the business’s last active private key with keys:write. */
        LastPrivateKeyError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "last_private_key";
            /**
             * @description For people; may change. Branch on `code`.
             * @example Revoking the business’s last active private key with keys:write.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "id": "tier_9XkQ2mP4vR7tY1wB3nL5",
         *       "name": "Silver",
         *       "points_threshold": 500,
         *       "multiplier": 1.25,
         *       "benefits": [
         *         "Free delivery"
         *       ],
         *       "metadata": {},
         *       "created_at": "2026-11-01T08:00:00.000Z",
         *       "updated_at": "2026-11-01T08:00:00.000Z"
         *     }
         */
        Tier: {
            /** @example tier_9XkQ2mP4vR7tY1wB3nL5 */
            id: string;
            name: string;
            points_threshold: number;
            multiplier: number;
            benefits: string[];
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string;
        };
        /**
         * @example {
         *       "name": "Silver",
         *       "points_threshold": 500,
         *       "multiplier": 1.25,
         *       "benefits": [
         *         "Free delivery"
         *       ]
         *     }
         */
        TierCreate: {
            /** @example Gold */
            name: string;
            /**
             * @description lifetime_earned at which a customer reaches the tier.
             * @example 1000
             */
            points_threshold: number;
            /** @example 1.25 */
            multiplier: number;
            benefits?: string[];
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `tier_not_found` (404): No tier with this id in the key’s business. */
        TierNotFoundError: {
            /** @enum {string} */
            code: "tier_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No tier with this id in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "benefits": [
         *         "Free delivery",
         *         "Birthday gift"
         *       ]
         *     }
         */
        TierUpdate: {
            name?: string;
            points_threshold?: number;
            /** @example 1.25 */
            multiplier?: number;
            benefits?: string[];
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /**
         * @example {
         *       "points_expiry_days": 365,
         *       "pending_days": 14,
         *       "expiring_notice_days": 7,
         *       "tier_qualification": {
         *         "mode": "rolling",
         *         "window_days": 365
         *       },
         *       "updated_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        ProgramSettings: {
            points_expiry_days: number | null;
            pending_days: number;
            expiring_notice_days: number;
            tier_qualification: {
                /** @enum {string} */
                mode: "lifetime" | "rolling";
                window_days: number | null;
            };
            /**
             * Format: date-time
             * @description When the policy last changed; null while it is the default.
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string | null;
        };
        /**
         * @example {
         *       "points_expiry_days": 365,
         *       "pending_days": 14,
         *       "tier_qualification": {
         *         "mode": "rolling",
         *         "window_days": 365
         *       }
         *     }
         */
        ProgramSettingsUpdate: {
            points_expiry_days?: number | null;
            pending_days?: number;
            expiring_notice_days?: number;
            tier_qualification?: {
                /** @enum {string} */
                mode?: "lifetime" | "rolling";
                window_days?: number | null;
            };
        };
        /**
         * @example {
         *       "id": "evtp_6gH8jK0lZ2xC4vB6nM8q",
         *       "name": "purchase",
         *       "display_name": "Purchase",
         *       "default_points": 10,
         *       "rules": [
         *         {
         *           "conditions": [
         *             {
         *               "property": "amount",
         *               "op": "gte",
         *               "value": 100
         *             }
         *           ],
         *           "points_per_unit": 2,
         *           "unit_property": "amount",
         *           "unit_size": 1,
         *           "max_points": 1000,
         *           "description": "Double points on orders of 100 or more"
         *         }
         *       ],
         *       "metadata": {},
         *       "created_at": "2026-11-01T08:00:00.000Z",
         *       "updated_at": "2026-11-01T08:00:00.000Z"
         *     }
         */
        EventType: {
            id: string;
            name: string;
            display_name: string;
            default_points: number;
            rules: {
                conditions?: {
                    property: string;
                    /** @enum {string} */
                    op: "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "exists";
                    value?: unknown;
                }[];
                points?: number;
                points_per_unit?: number;
                unit_property?: string;
                unit_size?: number;
                max_points?: number;
                description?: string;
            }[];
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string;
        };
        /**
         * @example {
         *       "name": "purchase",
         *       "display_name": "Purchase",
         *       "default_points": 10,
         *       "rules": [
         *         {
         *           "conditions": [
         *             {
         *               "property": "amount",
         *               "op": "gte",
         *               "value": 100
         *             }
         *           ],
         *           "points_per_unit": 2,
         *           "unit_property": "amount",
         *           "unit_size": 1,
         *           "max_points": 1000,
         *           "description": "Double points on orders of 100 or more"
         *         }
         *       ]
         *     }
         */
        EventTypeCreate: {
            /** @example purchase */
            name: string;
            display_name: string;
            default_points: number;
            /** @description Each rule applies when all its conditions hold on the event properties (ops eq ne gt gte lt lte in exists, dotted paths); it is worth points + floor(properties[unit_property] / unit_size) × points_per_unit, capped at max_points. */
            rules?: {
                conditions?: {
                    property: string;
                    /** @enum {string} */
                    op: "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "exists";
                    value?: unknown;
                }[];
                points?: number;
                points_per_unit?: number;
                unit_property?: string;
                unit_size?: number;
                max_points?: number;
                description?: string;
            }[];
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `event_type_not_found` (404): No event type with this name in the key’s business. */
        EventTypeNotFoundError: {
            /** @enum {string} */
            code: "event_type_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No event type with this name in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "default_points": 5
         *     }
         */
        EventTypeUpdate: {
            display_name?: string;
            default_points?: number;
            /** @description Each rule applies when all its conditions hold on the event properties (ops eq ne gt gte lt lte in exists, dotted paths); it is worth points + floor(properties[unit_property] / unit_size) × points_per_unit, capped at max_points. */
            rules?: {
                conditions?: {
                    property: string;
                    /** @enum {string} */
                    op: "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "exists";
                    value?: unknown;
                }[];
                points?: number;
                points_per_unit?: number;
                unit_property?: string;
                unit_size?: number;
                max_points?: number;
                description?: string;
            }[];
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /**
         * @example {
         *       "id": "rew_3mN8bV1cX6zL4kJ2hG9f",
         *       "title": "Free coffee",
         *       "points_cost": 100,
         *       "reward_type": "physical",
         *       "description": "Any size, any shop",
         *       "stock_quantity": 250,
         *       "active": true,
         *       "redeemed_count": 31,
         *       "metadata": {},
         *       "created_at": "2026-11-01T08:00:00.000Z",
         *       "updated_at": "2026-11-22T14:03:07.123Z"
         *     }
         */
        Reward: {
            /** @example rew_3mN8bV1cX6zL4kJ2hG9f */
            id: string;
            title: string;
            points_cost: number;
            /** @enum {string} */
            reward_type: "digital" | "physical" | "discount" | "experience" | "achievement";
            description: string | null;
            stock_quantity: number | null;
            active: boolean;
            redeemed_count: number;
            metadata: {
                [key: string]: unknown;
            };
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string;
        };
        /**
         * @example {
         *       "title": "Free coffee",
         *       "points_cost": 100,
         *       "reward_type": "physical",
         *       "description": "Any size, any shop",
         *       "stock_quantity": 250
         *     }
         */
        RewardCreate: {
            title: string;
            /** @description 0 for achievements. */
            points_cost: number;
            /** @enum {string} */
            reward_type: "digital" | "physical" | "discount" | "experience" | "achievement";
            description?: string;
            /** @description null or absent: unlimited. */
            stock_quantity?: number | null;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `reward_not_found` (404): No reward with this id in the key’s business. */
        RewardNotFoundError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "reward_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No reward with this id in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "stock_quantity": 500,
         *       "active": true
         *     }
         */
        RewardUpdate: {
            title?: string;
            points_cost?: number;
            /** @enum {string} */
            reward_type?: "digital" | "physical" | "discount" | "experience" | "achievement";
            description?: string | null;
            stock_quantity?: number | null;
            active?: boolean;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `out_of_stock` (409): The reward’s stock is 0. */
        OutOfStockError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "out_of_stock";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The reward’s stock is 0.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `achievement_already_granted` (409): This achievement was already granted to this customer. */
        AchievementAlreadyGrantedError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "achievement_already_granted";
            /**
             * @description For people; may change. Branch on `code`.
             * @example This achievement was already granted to this customer.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `reward_inactive` (422): The reward is not active. */
        RewardInactiveError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "reward_inactive";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The reward is not active.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "reward_id": "rew_3mN8bV1cX6zL4kJ2hG9f",
         *       "reference": "pos-7733"
         *     }
         */
        RedemptionCreate: {
            reward_id: string;
            /** @description Unique per customer across transactions, events and redemptions. */
            reference?: string;
            /**
             * @description Free-form key/value data, at most 8 KiB serialized.
             * @example {
             *       "source": "pos"
             *     }
             */
            metadata?: {
                [key: string]: unknown;
            };
        };
        /** @description `redemption_not_found` (404): No redemption with this id for this customer. */
        RedemptionNotFoundError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "redemption_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No redemption with this id for this customer.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `redemption_already_cancelled` (409): The redemption was already cancelled. */
        RedemptionAlreadyCancelledError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "redemption_already_cancelled";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The redemption was already cancelled.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /** @description `unknown_event_type` (422): The event names a type the business has not created. */
        UnknownEventTypeError: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            code: "unknown_event_type";
            /**
             * @description For people; may change. Branch on `code`.
             * @example The event names a type the business has not created.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "event_type": "purchase",
         *       "properties": {
         *         "amount": 120,
         *         "currency": "EUR"
         *       },
         *       "reference": "order-7732"
         *     }
         */
        EventCreate: {
            customer_id: string;
            event_type: string;
            /**
             * @description Details of the occurrence, read by the rules.
             * @default {}
             * @example {
             *       "amount": 120
             *     }
             */
            properties: {
                [key: string]: unknown;
            };
            /** @description Unique per customer across transactions, events and redemptions. */
            reference?: string;
            /**
             * Format: date-time
             * @description When the points become spendable (in the future); until then they are pending. Default: now + the program's pending_days.
             * @example 2026-12-01T00:00:00.000Z
             */
            available_at?: string;
            /**
             * Format: date-time
             * @description When the points expire (in the future, after available_at); null: never. Default: the program's points_expiry_days after the points become available.
             * @example 2027-12-01T00:00:00.000Z
             */
            expires_at?: string | null;
        };
        /**
         * @example {
         *       "id": "whk_2wE4rT6yU8iO0pA1sD3f",
         *       "url": "https://example.com/hooks/loyalty",
         *       "events": [
         *         "tier.upgraded",
         *         "points.earned"
         *       ],
         *       "description": "CRM sync",
         *       "active": true,
         *       "disabled_reason": null,
         *       "created_at": "2026-11-22T14:03:07.123Z",
         *       "updated_at": "2026-11-22T14:03:07.123Z",
         *       "deleted_at": null,
         *       "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
         *     }
         */
        WebhookWithSecret: components["schemas"]["Webhook"] & {
            /** @description The signing secret (whsec_…). Shown only in this response; null when the answer is an Idempotency-Key replay (secrets are never stored). */
            secret: string | null;
        };
        /**
         * @example {
         *       "id": "whk_2wE4rT6yU8iO0pA1sD3f",
         *       "url": "https://example.com/hooks/loyalty",
         *       "events": [
         *         "tier.upgraded",
         *         "points.earned"
         *       ],
         *       "description": "CRM sync",
         *       "active": true,
         *       "disabled_reason": null,
         *       "created_at": "2026-11-22T14:03:07.123Z",
         *       "updated_at": "2026-11-22T14:03:07.123Z",
         *       "deleted_at": null
         *     }
         */
        Webhook: {
            /** @example whk_2wE4rT6yU8iO0pA1sD3f */
            id: string;
            url: string;
            events: ("tier.upgraded" | "customer.created" | "points.earned" | "points.deducted" | "points.adjusted" | "event.recorded" | "reward.redeemed" | "redemption.cancelled" | "points.released" | "points.expiring" | "points.expired" | "points.reversed" | "tier.downgraded" | "*")[];
            description: string | null;
            active: boolean;
            /** @description Why the service disabled it (e.g. a 410 Gone), if it did. */
            disabled_reason: string | null;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            updated_at: string;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            deleted_at: string | null;
        };
        /**
         * @example {
         *       "url": "https://example.com/hooks/loyalty",
         *       "events": [
         *         "tier.upgraded",
         *         "points.earned"
         *       ],
         *       "description": "CRM sync"
         *     }
         */
        WebhookCreate: {
            /** @example https://example.com/hooks/loyalty */
            url: string;
            /** @description Event names, or ["*"] for all: tier.upgraded, customer.created, points.earned, points.deducted, points.adjusted, event.recorded, reward.redeemed, redemption.cancelled, points.released, points.expiring, points.expired, points.reversed, tier.downgraded. */
            events: ("tier.upgraded" | "customer.created" | "points.earned" | "points.deducted" | "points.adjusted" | "event.recorded" | "reward.redeemed" | "redemption.cancelled" | "points.released" | "points.expiring" | "points.expired" | "points.reversed" | "tier.downgraded" | "*")[];
            description?: string;
        };
        /** @description `webhook_not_found` (404): No webhook endpoint with this id in the key’s business. */
        WebhookNotFoundError: {
            /** @enum {string} */
            code: "webhook_not_found";
            /**
             * @description For people; may change. Branch on `code`.
             * @example No webhook endpoint with this id in the key’s business.
             */
            message: string;
            /** @example req_V1StGXR8Z5jdHi6BmyT */
            request_id: string;
        };
        /**
         * @example {
         *       "events": [
         *         "*"
         *       ]
         *     }
         */
        WebhookUpdate: {
            /** @example https://example.com/hooks/loyalty */
            url?: string;
            /** @description Event names, or ["*"] for all: tier.upgraded, customer.created, points.earned, points.deducted, points.adjusted, event.recorded, reward.redeemed, redemption.cancelled, points.released, points.expiring, points.expired, points.reversed, tier.downgraded. */
            events?: ("tier.upgraded" | "customer.created" | "points.earned" | "points.deducted" | "points.adjusted" | "event.recorded" | "reward.redeemed" | "redemption.cancelled" | "points.released" | "points.expiring" | "points.expired" | "points.reversed" | "tier.downgraded" | "*")[];
            description?: string | null;
            active?: boolean;
        };
        /**
         * @example {
         *       "id": "att_7hJ2kL9mN4pQ6rS8tV1w",
         *       "message_id": "msg_2ZkqP2mXv4RtY6wQ1bN3",
         *       "event_type": "points.earned",
         *       "attempt": 2,
         *       "attempted_at": "2026-11-22T14:03:12.410Z",
         *       "status_code": 200,
         *       "duration_ms": 84,
         *       "response_excerpt": "ok",
         *       "error": null,
         *       "message_status": "delivered",
         *       "next_attempt_at": null
         *     }
         */
        WebhookDelivery: {
            /** @example att_7hJ2kL9mN4pQ6rS8tV1w */
            id: string;
            /** @description The webhook-id header: stable across retries of one message. */
            message_id: string;
            /** @enum {string} */
            event_type: "tier.upgraded" | "customer.created" | "points.earned" | "points.deducted" | "points.adjusted" | "event.recorded" | "reward.redeemed" | "redemption.cancelled" | "points.released" | "points.expiring" | "points.expired" | "points.reversed" | "tier.downgraded" | "webhook.test";
            attempt: number;
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            attempted_at: string;
            status_code: number | null;
            duration_ms: number;
            response_excerpt: string | null;
            error: string | null;
            /**
             * @description pending (waiting or retrying), delivered, failed (retries exhausted, or 410), cancelled (the endpoint was disabled or deleted first).
             * @enum {string}
             */
            message_status: "pending" | "delivered" | "failed" | "cancelled";
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            next_attempt_at: string | null;
        };
        /**
         * @example {
         *       "id": "msg_1qA2wS3eD4rF5tG6yH7u",
         *       "event_type": "webhook.test",
         *       "status": "pending"
         *     }
         */
        WebhookTestMessage: {
            /** @example msg_1qA2wS3eD4rF5tG6yH7u */
            id: string;
            /** @enum {string} */
            event_type: "webhook.test";
            /** @enum {string} */
            status: "pending";
        };
        /**
         * @example {
         *       "id": "key_Q2w3E4r5T6y7U8i9O0pA",
         *       "type": "private",
         *       "name": "checkout server",
         *       "key_hint": "sk_live_…9Qa8",
         *       "permissions": [
         *         "customers:read",
         *         "customers:write",
         *         "points:read",
         *         "points:write"
         *       ],
         *       "created_at": "2026-11-22T14:03:07.123Z",
         *       "business": {
         *         "id": "biz_8Hj2Kd9Lm3Np5Qr7St1V",
         *         "name": "Corner Coffee",
         *         "plan": "unlimited",
         *         "created_at": "2026-11-22T14:03:07.123Z"
         *       }
         *     }
         */
        Me: {
            /** @example key_Q2w3E4r5T6y7U8i9O0pA */
            id: string;
            /** @enum {string} */
            type: "private" | "public";
            name: string | null;
            /** @example sk_live_…x9Qa */
            key_hint: string;
            /**
             * @example [
             *       "customers:read",
             *       "points:read",
             *       "rewards:read"
             *     ]
             */
            permissions: string[];
            /**
             * Format: date-time
             * @example 2026-11-22T14:03:07.123Z
             */
            created_at: string;
            business: {
                /** @example biz_8Hj2Kd9Lm3Np5Qr7St1V */
                id: string;
                /** @example Corner Coffee */
                name: string;
                /** @enum {string} */
                plan: "free" | "unlimited";
                /**
                 * Format: date-time
                 * @example 2026-11-22T14:03:07.123Z
                 */
                created_at: string;
            };
        };
        /**
         * @example {
         *       "from": "2026-11-21",
         *       "to": "2026-11-22",
         *       "days": [
         *         {
         *           "date": "2026-11-21",
         *           "issued": 980,
         *           "redeemed": 200,
         *           "expired": 0
         *         },
         *         {
         *           "date": "2026-11-22",
         *           "issued": 1340,
         *           "redeemed": 400,
         *           "expired": 0
         *         }
         *       ],
         *       "customers": 42,
         *       "outstanding": 18250,
         *       "tiers": [
         *         {
         *           "tier_id": null,
         *           "name": null,
         *           "points_threshold": null,
         *           "customers": 31
         *         },
         *         {
         *           "tier_id": "tier_9XkQ2mP4vR7tY1wB3nL5",
         *           "name": "Silver",
         *           "points_threshold": 500,
         *           "customers": 11
         *         }
         *       ]
         *     }
         */
        Stats: {
            /** @example 2026-10-26 */
            from: string;
            /** @example 2026-11-24 */
            to: string;
            /** @description Every day of the range, oldest first; zeros where nothing moved. */
            days: components["schemas"]["StatsDay"][];
            /** @description Customers now. */
            customers: number;
            /** @description Points held by the business's customers now (balances plus pending points). */
            outstanding: number;
            /** @description Customers per tier now, by threshold; the first entry (tier_id null) counts customers without a tier. */
            tiers: {
                tier_id: string | null;
                name: string | null;
                points_threshold: number | null;
                customers: number;
            }[];
        };
        /**
         * @example {
         *       "date": "2026-11-22",
         *       "issued": 1340,
         *       "redeemed": 400,
         *       "expired": 0
         *     }
         */
        StatsDay: {
            /** @example 2026-11-24 */
            date: string;
            /** @description Credits made that day (earn, event, adjust) minus reversals made that day. */
            issued: number;
            /** @description Deducts and redemptions that day minus the redemptions cancelled that day. */
            redeemed: number;
            /** @description Points expired that day. */
            expired: number;
        };
        /**
         * @example {
         *       "event_type": "purchase",
         *       "default_points": 10,
         *       "rules": [
         *         {
         *           "index": 0,
         *           "description": "Double points on orders of 100 or more",
         *           "applies": true,
         *           "points": 240
         *         }
         *       ],
         *       "points": 240
         *     }
         */
        RulePreview: {
            /** @example purchase */
            event_type: string;
            default_points: number;
            /** @description Every rule, in order. */
            rules: {
                /** @description Position of the rule in the event type (0-based). */
                index: number;
                description: string | null;
                /** @description Whether every condition of the rule holds. */
                applies: boolean;
                /** @description What the rule gives (0 when it does not apply). */
                points: number;
            }[];
            /** @description The total an event with these properties would award to a customer with no tier. */
            points: number;
        };
        /**
         * @example {
         *       "properties": {
         *         "amount": 120,
         *         "currency": "EUR"
         *       }
         *     }
         */
        RulePreviewRequest: {
            /**
             * @description The properties of an imagined event.
             * @example {
             *       "amount": 120
             *     }
             */
            properties: {
                [key: string]: unknown;
            };
        };
        /**
         * @example {
         *       "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
         *       "events": 7,
         *       "chain_intact": true,
         *       "breaks": [],
         *       "read_model_matches": true,
         *       "drifts": []
         *     }
         */
        CustomerAudit: {
            customer_id: string;
            /** @description Events of the stream checked. */
            events: number;
            /** @description Every event's hash matches its content and its predecessor's hash. */
            chain_intact: boolean;
            /** @description Where the hash chain does not hold. */
            breaks: {
                position: number;
                problem: string;
            }[];
            /** @description Folding the stream gives what the read models hold. */
            read_model_matches: boolean;
            drifts: {
                /** @example points_balance */
                field: string;
                /** @description What folding the stream gives. */
                log?: unknown;
                /** @description What the read model holds. */
                read_model?: unknown;
            }[];
        };
    };
    responses: never;
    parameters: {
        /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
        IdempotencyKey: string;
    };
    requestBodies: never;
    headers: {
        /** @description The request’s id (`req_…`, or the one the caller sent, up to 255 of `[A-Za-z0-9_=-]`): quote it when reporting a problem. */
        XRequestId: string;
        /** @description What is left of the key’s request budget (draft-ietf-httpapi-ratelimit-headers): `r` requests remain, the bucket is full again in `t` seconds. Absent when rate limiting is off. */
        RateLimit: string;
        /** @description The key’s budget: `q` requests per window of `w` seconds, refilled continuously (`api-key` for private keys, `public-key` for public ones). */
        RateLimitPolicy: string;
        /** @description Seconds to wait before sending the same request again (with the same Idempotency-Key). */
        RetryAfter: number;
        /** @description RFC 8288 link to the next page, keeping the request’s other query parameters; absent on the last page. */
        Link: string;
        /** @description `true` when this answer is the stored answer to an earlier request with the same Idempotency-Key (nothing was done again). */
        IdempotentReplayed: "true";
    };
    pathItems: never;
};
export type $defs = Record<string, never>;
export interface operations {
    listCustomers: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description Only items created after this instant (exclusive), e.g. `2026-11-01T00:00:00Z`. */
                created_after?: string;
                /** @description Only items created before this instant (exclusive); must be later than `created_after`. */
                created_before?: string;
                /** @description Exact e-mail, case-insensitive. */
                email?: string;
                /** @description Exact phone number, as stored. */
                phone?: string;
                /** @description Exact external reference (the caller’s own user id). */
                external_reference?: string;
                /** @description Tier id. */
                tier?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Customers, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createCustomer: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerCreate"];
            };
        };
        responses: {
            /** @description The new customer. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"] | components["schemas"]["PlanLimitReachedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerExistsError"] | components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getCustomer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The customer. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateCustomer: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CustomerUpdate"];
            };
        };
        responses: {
            /** @description The customer as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerExistsError"] | components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getCustomerSummary: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The summary. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerSummary"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listTransactions: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description Only items created after this instant (exclusive), e.g. `2026-11-01T00:00:00Z`. */
                created_after?: string;
                /** @description Only items created before this instant (exclusive); must be later than `created_after`. */
                created_before?: string;
            };
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every balance change, oldest first, with the balance after it. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PointsTransaction"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listLots: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description Also lots with nothing left (spent, expired, fully reversed). */
                all?: "true" | "false";
            };
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The lots with points left (every lot with `all=true`), oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Lot"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getCustomerStream: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Position of the last event seen. */
                starting_after?: number;
            };
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Events in stream order. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StreamEvent"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createPointsTransaction: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PointsTransactionCreate"];
            };
        };
        responses: {
            /** @description The transaction, with the balance right after it. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PointsTransaction"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DuplicateTransactionError"] | components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPointsError"] | components["schemas"]["PointsOutOfRangeError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    reverseTransaction: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
                /** @description The credit’s id: `txn_…` of an earn or adjust, `evt_…` of an event. */
                transaction_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReversalCreate"];
            };
        };
        responses: {
            /** @description The reversal (type `reversal`), with the balance right after it. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PointsTransaction"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"] | components["schemas"]["TransactionNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DuplicateTransactionError"] | components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPointsError"] | components["schemas"]["TransactionNotReversibleError"] | components["schemas"]["ReversalExceedsCreditError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listKeys: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Keys, oldest first, revoked ones included. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ApiKeyCreate"];
            };
        };
        responses: {
            /** @description The key, in full this once. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedApiKey"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    revokeKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description An API key’s id (`key_…`). */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key as it now stands, with revoked_at set. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"] | components["schemas"]["LastPrivateKeyError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listTiers: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Tiers by threshold. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tier"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createTier: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TierCreate"];
            };
        };
        responses: {
            /** @description The new tier. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tier"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getTier: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A tier’s id (`tier_…`). */
                tier_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tier. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tier"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TierNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateTier: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A tier’s id (`tier_…`). */
                tier_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TierUpdate"];
            };
        };
        responses: {
            /** @description The tier as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tier"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TierNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getProgramSettings: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The policy as it stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProgramSettings"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateProgramSettings: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProgramSettingsUpdate"];
            };
        };
        responses: {
            /** @description The policy as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProgramSettings"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listEventTypes: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Event types, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventType"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createEventType: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EventTypeCreate"];
            };
        };
        responses: {
            /** @description The new event type. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventType"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getEventType: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The event type’s name. */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event type. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventType"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventTypeNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateEventType: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description The event type’s name. */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EventTypeUpdate"];
            };
        };
        responses: {
            /** @description The event type as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventType"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventTypeNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listRewards: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description `true` for active rewards only, `false` for inactive ones. */
                active?: "true" | "false";
                /** @description Only rewards of this type. */
                reward_type?: "digital" | "physical" | "discount" | "experience" | "achievement";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Rewards, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reward"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createReward: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RewardCreate"];
            };
        };
        responses: {
            /** @description The new reward (active). */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reward"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getReward: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A reward’s id (`rew_…`). */
                reward_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The reward. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reward"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RewardNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateReward: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A reward’s id (`rew_…`). */
                reward_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RewardUpdate"];
            };
        };
        responses: {
            /** @description The reward as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reward"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RewardNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listRedemptions: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description Only items created after this instant (exclusive), e.g. `2026-11-01T00:00:00Z`. */
                created_after?: string;
                /** @description Only items created before this instant (exclusive); must be later than `created_after`. */
                created_before?: string;
            };
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Redemptions, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Redemption"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createRedemption: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RedemptionCreate"];
            };
        };
        responses: {
            /** @description The redemption. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Redemption"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"] | components["schemas"]["RewardNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DuplicateTransactionError"] | components["schemas"]["ConflictError"] | components["schemas"]["OutOfStockError"] | components["schemas"]["AchievementAlreadyGrantedError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPointsError"] | components["schemas"]["RewardInactiveError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    cancelRedemption: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
                /** @description A redemption’s id (`red_…`). */
                redemption_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The redemption, now cancelled. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Redemption"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"] | components["schemas"]["RedemptionNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["RedemptionAlreadyCancelledError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PointsOutOfRangeError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
                /** @description Only items created after this instant (exclusive), e.g. `2026-11-01T00:00:00Z`. */
                created_after?: string;
                /** @description Only items created before this instant (exclusive); must be later than `created_after`. */
                created_before?: string;
                /** @description A customer’s id (`cust_…`). */
                customer_id?: string;
                /** @description Only events of this event type (its name). */
                event_type?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Events, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Event"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    recordEvent: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EventCreate"];
            };
        };
        responses: {
            /** @description The recorded event. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Event"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DuplicateTransactionError"] | components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownEventTypeError"] | components["schemas"]["PointsOutOfRangeError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Endpoints, oldest first (never their secrets). */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookCreate"];
            };
        };
        responses: {
            /** @description The endpoint and its secret. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint as it now stands (deleted_at set). */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    updateWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookUpdate"];
            };
        };
        responses: {
            /** @description The endpoint as it now stands. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint and its new secret. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50). */
                limit?: number;
                /** @description Id of the last item of the previous page. */
                starting_after?: string;
            };
            header?: never;
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Attempts, oldest first. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"][];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    sendTestWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description A webhook endpoint’s id (`whk_…`). */
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The queued message; its attempts show in deliveries. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookTestMessage"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getMe: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The signed-in key (never the key itself) and its business. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Me"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getStats: {
        parameters: {
            query?: {
                /** @description First UTC day, inclusive (default: 29 days before `to`). */
                from?: string;
                /** @description Last UTC day, inclusive (default: today). */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The figures. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Stats"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    previewEventType: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key with the same request replays the first answer (`Idempotent-Replayed: true`) instead of doing it again; with a different request it answers 422 `idempotency_key_reused`, while the first still runs 409 `idempotency_key_in_progress`. Scoped to the business, kept 24 hours. Use one key per logical operation and reuse it on every retry. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description The event type’s name. */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RulePreviewRequest"];
            };
        };
        responses: {
            /** @description The points, rule by rule. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RulePreview"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"] | components["schemas"]["InvalidJsonError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventTypeNotFoundError"];
                };
            };
            /** @description Conflict with the current state (see `code`). */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"] | components["schemas"]["IdempotencyKeyInProgressError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The body is not sent as `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Valid, but it cannot be done (see `code`); nothing was recorded. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Idempotent-Replayed": components["headers"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PointsOutOfRangeError"] | components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    auditCustomer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A customer’s id (`cust_…`). */
                customer_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What the check found; a broken chain or a drift is a finding, answered 200. */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerAudit"];
                };
            };
            /** @description The request is not valid; nothing was done. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorError"];
                };
            };
            /** @description Missing, invalid or ambiguous API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MissingApiKeyError"] | components["schemas"]["InvalidApiKeyError"] | components["schemas"]["AmbiguousApiKeyError"];
                };
            };
            /** @description The key may not do this. */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientPermissionsError"] | components["schemas"]["PublicKeyNotAllowedError"];
                };
            };
            /** @description Unknown id (another business’s ids are unknown too). */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CustomerNotFoundError"];
                };
            };
            /** @description The body is over 64 KiB. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description The key’s request budget is used up; retry after `Retry-After` seconds. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description A fault on the service’s side, logged with the request id. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description A store is unavailable; nothing was written. Retry after `Retry-After` seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["XRequestId"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicy"];
                    "Retry-After": components["headers"]["RetryAfter"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    tierUpgradedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "tier.upgraded",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "previous_tier": null,
                 *         "new_tier": {
                 *           "id": "tier_9kLm2NpQ4rSt6VwX8yZa",
                 *           "name": "Silver",
                 *           "points_threshold": 500,
                 *           "multiplier": 1.25,
                 *           "benefits": [
                 *             "Free delivery"
                 *           ]
                 *         },
                 *         "lifetime_earned": 620,
                 *         "upgraded_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["TierUpgradedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    customerCreatedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "customer.created",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "email": "ada@example.com",
                 *         "phone": null,
                 *         "first_name": "Ada",
                 *         "last_name": "Lovelace",
                 *         "external_reference": "user-1042",
                 *         "metadata": {
                 *           "source": "signup-form"
                 *         },
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["CustomerCreatedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsEarnedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.earned",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
                 *         "amount": 150,
                 *         "balance": 620,
                 *         "description": "Order #7731",
                 *         "reference": "order-7731",
                 *         "metadata": {
                 *           "store": "berlin-1"
                 *         },
                 *         "base_amount": 120,
                 *         "multiplier": 1.25,
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsEarnedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsDeductedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.deducted",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_3HbN5mQ7sV9xZ1cE4gJ6",
                 *         "amount": 200,
                 *         "balance": 420,
                 *         "description": "Gift card top-up",
                 *         "reference": "giftcard-88",
                 *         "metadata": {},
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsDeductedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsAdjustedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.adjusted",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_6PdR8tW0yB2eG4iK6mO8",
                 *         "amount": -50,
                 *         "balance": 370,
                 *         "description": "Correction: returned item",
                 *         "reference": null,
                 *         "metadata": {
                 *           "ticket": "SUP-311"
                 *         },
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsAdjustedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    eventRecordedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "event.recorded",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "event_id": "evt_7uI9oP2aS5dF8gH1jK4l",
                 *         "event_type": "purchase",
                 *         "properties": {
                 *           "amount": 120,
                 *           "currency": "EUR"
                 *         },
                 *         "reference": "order-7732",
                 *         "base_points": 120,
                 *         "multiplier": 1.25,
                 *         "points_awarded": 150,
                 *         "balance": 520,
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["EventRecordedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    rewardRedeemedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "reward.redeemed",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "redemption_id": "red_5tR2yU8iO1pA4sD7fG0h",
                 *         "reward_id": "rew_2qW4eR6tY8uI0oP1aS3d",
                 *         "reward_title": "Free coffee",
                 *         "reward_type": "physical",
                 *         "points_cost": 100,
                 *         "reference": "pos-7733",
                 *         "metadata": {},
                 *         "balance": 420,
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["RewardRedeemedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    redemptionCancelledWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "redemption.cancelled",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_1XcV3bN5mA7sD9fG2hJ4",
                 *         "redemption_id": "red_5tR2yU8iO1pA4sD7fG0h",
                 *         "reward_id": "rew_2qW4eR6tY8uI0oP1aS3d",
                 *         "points_cost": 100,
                 *         "balance": 520,
                 *         "cancelled_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["RedemptionCancelledWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsReleasedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.released",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_2b9c5d1e8f3a4b7c9d0e1f2a",
                 *         "lot_transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
                 *         "amount": 150,
                 *         "balance": 770,
                 *         "released_at": "2026-11-29T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsReleasedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsExpiringWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.expiring",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
                 *         "amount": 150,
                 *         "expires_at": "2027-11-29T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsExpiringWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsExpiredWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.expired",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_5e6f7a8b9c0d1e2f3a4b5c6d",
                 *         "lots": [
                 *           {
                 *             "transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
                 *             "amount": 150
                 *           },
                 *           {
                 *             "transaction_id": "txn_3HgF6dS9aQ2wE5rT8yU1",
                 *             "amount": 40
                 *           }
                 *         ],
                 *         "amount": 190,
                 *         "pending": 0,
                 *         "balance": 470,
                 *         "expired_at": "2027-11-29T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsExpiredWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    pointsReversedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "points.reversed",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "transaction_id": "txn_4KpL6nM8qR0sT2uV4wX6",
                 *         "reversed_transaction_id": "txn_8ZkqP2mXv4RtY6wQ1bN3",
                 *         "amount": 150,
                 *         "from_lot": 100,
                 *         "from_expired": 0,
                 *         "lots": [
                 *           {
                 *             "transaction_id": "txn_7YhG5fD3sA1qW9eR7tY5",
                 *             "amount": 50
                 *           }
                 *         ],
                 *         "balance": 470,
                 *         "description": "Order #7731 refunded",
                 *         "reference": "refund-7731",
                 *         "metadata": {},
                 *         "created_at": "2026-11-22T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["PointsReversedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    tierDowngradedWebhook: {
        parameters: {
            query?: never;
            header: {
                /** @description The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it. */
                "webhook-id": string;
                /** @description Seconds since the epoch when this attempt was signed. */
                "webhook-timestamp": string;
                /** @description `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation). */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "type": "tier.downgraded",
                 *       "timestamp": "2026-11-22T14:03:07.123Z",
                 *       "data": {
                 *         "customer_id": "cust_4fTz9QbLr2XcVw7NkP1a",
                 *         "previous_tier": {
                 *           "id": "tier_9kLm2NpQ4rSt6VwX8yZa",
                 *           "name": "Silver",
                 *           "points_threshold": 500,
                 *           "multiplier": 1.25,
                 *           "benefits": [
                 *             "Free delivery"
                 *           ]
                 *         },
                 *         "new_tier": null,
                 *         "qualifying_points": 320,
                 *         "downgraded_at": "2027-02-20T14:03:07.123Z"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["TierDowngradedWebhook"];
            };
        };
        responses: {
            /** @description Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
