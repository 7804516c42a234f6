import { type Migration, sql } from 'kysely';

/**
 * Views for analysts in their own schema, `analytics` (docs/read-models.md describes every
 * column). They are the stable interface: the read-model tables under them may change shape
 * between versions, these views keep their names and columns (a change is a new migration).
 * They never show credentials: no key hashes, no webhook secrets, no idempotency records.
 * Table names are unqualified on purpose: they bind to the read models of the schema migrated.
 */
export const migration: Migration = {
  async up(db) {
    await sql`create schema if not exists analytics`.execute(db);

    await sql`
      create view analytics.businesses as
      select id as business_id, name, plan, customer_count, created_at
      from businesses`.execute(db);

    await sql`
      create view analytics.customers as
      select
        c.id as customer_id, c.business_id, c.email, c.phone, c.first_name, c.last_name,
        c.external_reference, c.metadata, c.points_balance, c.lifetime_earned, c.lifetime_redeemed,
        c.tier_id, c.tier ->> 'name' as tier_name, (c.tier ->> 'achieved_at')::timestamptz as tier_achieved_at,
        c.created_at, c.updated_at, c.seq
      from customers c`.execute(db);

    await sql`
      create view analytics.points_ledger as
      select
        l.id as entry_id, l.business_id, l.customer_id, l.type as entry_type, l.amount,
        case when l.type in ('deduct', 'redemption') then -l.amount else l.amount end as points_change,
        l.balance as balance_after, l.base_amount, l.multiplier, l.description, l.reference, l.metadata,
        l.created_at, l.seq
      from ledger_entries l`.execute(db);

    await sql`
      create view analytics.tiers as
      select
        id as tier_id, business_id, name, points_threshold, multiplier, benefits, metadata,
        created_at, updated_at
      from tiers`.execute(db);

    await sql`
      create view analytics.event_types as
      select
        id as event_type_id, business_id, name, display_name, default_points, rules, metadata,
        created_at, updated_at
      from event_types`.execute(db);

    await sql`
      create view analytics.rewards as
      select
        id as reward_id, business_id, title, reward_type, points_cost, description, stock_quantity,
        active, redeemed_count as times_redeemed, metadata, created_at, updated_at
      from rewards`.execute(db);

    await sql`
      create view analytics.redemptions as
      select
        r.id as redemption_id, r.business_id, r.customer_id, r.reward_id, w.title as reward_title,
        w.reward_type, r.points_cost, r.balance as balance_after, r.status, r.reference, r.metadata,
        r.created_at as redeemed_at, r.cancelled_at, r.seq
      from redemptions r
      left join rewards w on w.id = r.reward_id`.execute(db);

    await sql`
      create view analytics.events as
      select
        id as event_id, business_id, customer_id, event_type, properties, reference, base_points,
        multiplier, points_awarded, balance as balance_after, created_at as recorded_at, seq
      from recorded_events`.execute(db);

    await sql`
      create view analytics.tier_changes as
      select
        c.business_id, c.customer_id, c.previous_tier_id, p.name as previous_tier_name, c.new_tier_id,
        n.name as new_tier_name, c.lifetime_earned, c.changed_at, c.seq
      from tier_changes c
      left join tiers p on p.id = c.previous_tier_id
      left join tiers n on n.id = c.new_tier_id`.execute(db);

    await sql`
      create view analytics.webhook_endpoints as
      select
        id as webhook_id, business_id, url, events, description, active, disabled_reason, deleted_at,
        created_at, updated_at
      from webhook_endpoints`.execute(db);

    await sql`
      create view analytics.webhook_deliveries as
      select
        m.id as message_id, m.business_id, m.webhook_id, m.event_type, m.source_event_id, m.status,
        m.attempts, m.created_at, m.next_attempt_at, m.delivered_at,
        a.attempted_at as last_attempt_at, a.status_code as last_status_code,
        a.duration_ms as last_duration_ms, a.error as last_error, m.seq
      from webhook_messages m
      left join lateral (
        select attempted_at, status_code, duration_ms, error
        from webhook_attempts
        where message_id = m.id
        order by attempt desc
        limit 1
      ) a on true`.execute(db);

    await sql`
      create view analytics.webhook_attempts as
      select
        id as attempt_id, message_id, webhook_id, business_id, attempt, attempted_at, status_code,
        duration_ms, response_excerpt, error
      from webhook_attempts`.execute(db);

    await sql`
      create view analytics.points_liability as
      select
        b.id as business_id,
        count(c.id) as customers,
        count(c.id) filter (where c.points_balance > 0) as customers_with_points,
        coalesce(sum(c.points_balance), 0)::bigint as outstanding_points,
        coalesce(sum(c.lifetime_earned), 0)::bigint as lifetime_earned,
        coalesce(sum(c.lifetime_redeemed), 0)::bigint as lifetime_redeemed
      from businesses b
      left join customers c on c.business_id = b.id
      group by b.id`.execute(db);

    await sql`
      create view analytics.tier_distribution as
      with counts as (
        select t.business_id, t.id as tier_id, t.name as tier_name, t.points_threshold, count(c.id) as customers
        from tiers t
        left join customers c on c.tier_id = t.id
        group by t.business_id, t.id, t.name, t.points_threshold
        union all
        select business_id, null, null, null, count(*)
        from customers
        where tier_id is null
        group by business_id
      )
      select
        business_id, tier_id, tier_name, points_threshold, customers,
        round(customers::numeric / nullif(sum(customers) over (partition by business_id), 0), 4) as share
      from counts`.execute(db);
  },
};
