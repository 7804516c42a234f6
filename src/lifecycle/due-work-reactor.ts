import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { DEFAULT_PROGRAM_SETTINGS } from '../events/program-events.js';
import { streams } from '../events/streams.js';
import { rowSetInsert } from '../projections/insert-rows.js';
import { type BatchSpan, CarriedByBusiness } from '../projections/carried-by-business.js';
import { defineProjector, type ProjectedEvent, type ProjectedEventOf } from '../projections/projector.js';

const DAY_MS = 86_400_000;

/**
 * Keeps `customer_due`, the index the lifecycle scheduler claims due customers from (CONTRACT.md
 * §13): for each customer, an instant before which it has no due work. Events that bring new work
 * lower it — a credit's release, expiring notice and expiry instants, a change that may move a
 * rolling-tier downgrade or bring back points to expire (then: at once, and the scheduler asks
 * the decider) — and the scheduler sets it to the decider's exact `nextDueAt` after each run,
 * recording the stream revision that was decided at. An event at or below that revision was part
 * of the decision and changes nothing.
 *
 * A reactor: its rows drive work (the scheduler's appends), so a rebuild never replays it. A lower
 * bound that is too low costs one re-decision that finds nothing due; one too high would be a
 * missed expiry, which is why anything unsure asks for a look at once.
 */
export const dueWorkReactor = defineProjector<Batch>({
  name: 'due-work',
  tables: ['customer_due', 'due_policies'],
  reactor: true,
  async begin(trx, events, span) {
    const businesses = [...new Set(events.map((e) => e.metadata.business_id))];
    const policies = await CarriedByBusiness.take(span, businesses, (missing) => policiesOf(trx, missing), (policy) => ({ ...policy }));
    return { trx, span, policies, due: new Map() };
  },
  on: {
    async ProgramSettingsChanged(event, batch) {
      await flush(batch); // the statements below read what came before
      const businessId = event.metadata.business_id;
      const was = policyOf(batch, businessId);
      const now: Policy = {
        business_id: businessId,
        expiring_notice_days: event.data.expiring_notice_days,
        tier_mode: event.data.tier_qualification.mode,
        window_days: event.data.tier_qualification.window_days,
      };
      batch.policies.set(businessId, now);
      await batch.trx
        .insertInto('due_policies')
        .values(now)
        .onConflict((oc) => oc.column('business_id').doUpdateSet({ expiring_notice_days: now.expiring_notice_days, tier_mode: now.tier_mode, window_days: now.window_days }))
        .execute();
      if (now.expiring_notice_days > was.expiring_notice_days) await noticesMovedEarlier(batch.trx, businessId, now.expiring_notice_days);
      if (now.tier_mode === 'rolling' && (was.tier_mode !== 'rolling' || now.window_days !== was.window_days)) {
        await lookAtTierHolders(batch.trx, businessId, event.recordedAt);
      }
    },
    PointsEarned: credited,
    EventRecorded: credited,
    PointsAdjusted(event, batch) {
      if (event.data.amount > 0) credited(event, batch);
      else if (policyOf(batch, event.metadata.business_id).tier_mode === 'rolling') lookNow(event, batch);
    },
    TierUpgraded(event, batch) {
      if (policyOf(batch, event.metadata.business_id).tier_mode === 'rolling') lookNow(event, batch);
    },
    // Points given back may land in lots that expire (or expired meanwhile); a reversal may move a downgrade.
    RedemptionCancelled: lookNow,
    PointsReversed: lookNow,
  },
  async end(batch) {
    await flush(batch);
    CarriedByBusiness.leave(batch.span, batch.policies);
  },
});

/** The policies of businesses that have one, as the batch's transaction sees them. */
async function policiesOf(trx: Transaction<Database>, businesses: string[]): Promise<Map<string, Policy>> {
  const rows = await trx.selectFrom('due_policies').selectAll().where('business_id', 'in', businesses).execute();
  return new Map(rows.map((r) => [r.business_id, r]));
}

interface Batch {
  trx: Transaction<Database>;
  span: BatchSpan | undefined;
  /** By business: its policy, `undefined` for the defaults. */
  policies: Map<string, Policy | undefined>;
  /** Per customer: the earliest instant the batch's events may have made due, and the last revision seen. */
  due: Map<string, { customer_id: string; business_id: string; due_at: number; revision: number }>;
}

type Policy = Database['due_policies'] extends infer T ? { [K in keyof T]: T[K] } : never;

function policyOf(batch: Batch, businessId: string): Policy {
  return (
    batch.policies.get(businessId) ?? {
      business_id: businessId,
      expiring_notice_days: DEFAULT_PROGRAM_SETTINGS.expiring_notice_days,
      tier_mode: DEFAULT_PROGRAM_SETTINGS.tier_qualification.mode,
      window_days: DEFAULT_PROGRAM_SETTINGS.tier_qualification.window_days,
    }
  );
}

/** A credit's lot: due when it is released, when its notice is due, when it expires (the earliest counts). */
function credited(event: ProjectedEventOf<'PointsEarned' | 'PointsAdjusted' | 'EventRecorded'>, batch: Batch): void {
  const { available_at, expires_at } = event.data;
  const policy = policyOf(batch, event.metadata.business_id);
  if (available_at !== null) mayBeDueAt(event, batch, Date.parse(available_at));
  if (expires_at !== null) mayBeDueAt(event, batch, Date.parse(expires_at) - policy.expiring_notice_days * DAY_MS);
}

function lookNow(event: ProjectedEvent, batch: Batch): void {
  mayBeDueAt(event, batch, event.recordedAt.getTime());
}

function mayBeDueAt(event: ProjectedEvent, batch: Batch, at: number): void {
  const customerId = streams.customerIdOf(event.streamId);
  const known = batch.due.get(customerId);
  if (!known) batch.due.set(customerId, { customer_id: customerId, business_id: event.metadata.business_id, due_at: at, revision: event.streamPosition });
  else {
    known.due_at = Math.min(known.due_at, at);
    known.revision = Math.max(known.revision, event.streamPosition);
  }
}

const insertDue = rowSetInsert('customer_due', { customer_id: 'text', business_id: 'text', due_at: 'timestamptz', revision: 'bigint' }, {
  deferred: true,
  onConflict: sql`on conflict (customer_id) do update set
    due_at = case when excluded.revision > customer_due.revision then least(customer_due.due_at, excluded.due_at) else customer_due.due_at end,
    revision = greatest(customer_due.revision, excluded.revision)`,
});

/** Writes the batch's instants: each lowers its customer's, unless the scheduler already decided past its events. */
async function flush(batch: Batch): Promise<void> {
  if (batch.due.size === 0) return;
  const rows = [...batch.due.values()].map((r) => ({ ...r, due_at: new Date(r.due_at).toISOString() }));
  batch.due.clear();
  await insertDue(batch.trx, rows);
}

/** Notices now come sooner: each open lot with an expiry and no notice yet may be due earlier. */
async function noticesMovedEarlier(trx: Transaction<Database>, businessId: string, noticeDays: number): Promise<void> {
  await sql`insert into customer_due (customer_id, business_id, due_at)
    select customer_id, business_id, min(expires_at) - make_interval(days => ${noticeDays}::int)
      from lots
     where business_id = ${businessId} and remaining > 0 and expires_at is not null and not noticed
     group by customer_id, business_id
    on conflict (customer_id) do update set due_at = least(customer_due.due_at, excluded.due_at)`.execute(trx);
}

/** Rolling qualification began (or its window changed): every tier holder is looked at once. */
async function lookAtTierHolders(trx: Transaction<Database>, businessId: string, at: Date): Promise<void> {
  await sql`insert into customer_due (customer_id, business_id, due_at)
    select id, business_id, ${at}::timestamptz from customers where business_id = ${businessId} and tier_id is not null
    on conflict (customer_id) do update set due_at = least(customer_due.due_at, excluded.due_at)`.execute(trx);
}
