import { CompiledQuery, sql, type Transaction } from 'kysely';
import { streams } from '../../events/streams.js';
import type { Database } from '../../db/schema.js';
import { deferredWrite } from '../../db/deferred-writes.js';
import { rowSetInsert } from '../insert-rows.js';
import { defineProjector, type ProjectedEvent, type ProjectedEventOf } from '../projector.js';
import type { LotShare } from '../../events/customer-events.js';
import { type LedgerEntry, type LedgerSource, ledgerEntryFromEvent } from './ledger-entry.js';
import { LotBook, type NextExpiring } from './lot-book.js';

/** How a ledger line moves the lifetime totals (its balance is already in the line). */
function lifetimeEffect(entry: LedgerEntry): Lifetime {
  switch (entry.type) {
    case 'earn':
    case 'adjust':
    case 'event':
      return { earned: entry.amount, redeemed: 0, expired: 0 };
    case 'deduct':
    case 'redemption':
      return { earned: 0, redeemed: entry.amount, expired: 0 };
    case 'redemption_cancelled':
      return { earned: 0, redeemed: -entry.amount, expired: 0 };
    case 'release':
      return { earned: 0, redeemed: 0, expired: 0 };
    case 'expire':
      return { earned: 0, redeemed: 0, expired: entry.amount };
    case 'reversal':
      // What the reversal took from the credit's expired part comes out of lifetime_expired (see PointsReversed).
      return { earned: -entry.amount, redeemed: 0, expired: 0 };
  }
}

interface Lifetime {
  earned: number;
  redeemed: number;
  expired: number;
}

/** What a batch's balance changes do to one customer row: the last balance, summed lifetime moves. */
interface NetChange {
  id: string;
  /** The balance after the batch's last ledger line; null when none changed it. */
  balance: number | null;
  earned: number;
  redeemed: number;
  expired: number;
  pending: number;
  /** The last balance change's time, or null when a later profile or tier event set `updated_at`. */
  updated_at: Date | null;
  /** When a lot with an expiry changed: what the batch knows of the next expiring points (null: they stay). */
  expiring: NextExpiring | null;
}

const CUSTOMER_COLUMNS = {
  id: 'text',
  business_id: 'text',
  email: 'text',
  email_lower: 'text',
  phone: 'text',
  first_name: 'text',
  last_name: 'text',
  external_reference: 'text',
  metadata: 'jsonb',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
};
const LEDGER_COLUMNS = {
  id: 'text',
  business_id: 'text',
  customer_id: 'text',
  type: 'text',
  amount: 'bigint',
  balance: 'bigint',
  base_amount: 'bigint',
  multiplier: 'numeric',
  description: 'text',
  reference: 'text',
  metadata: 'jsonb',
  created_at: 'timestamptz',
  lots: 'jsonb',
  available_at: 'timestamptz',
  expires_at: 'timestamptz',
  reversed_transaction_id: 'text',
};
const RECORDED_EVENT_COLUMNS = {
  id: 'text',
  business_id: 'text',
  customer_id: 'text',
  event_type: 'text',
  properties: 'jsonb',
  reference: 'text',
  base_points: 'bigint',
  multiplier: 'numeric',
  points_awarded: 'bigint',
  balance: 'bigint',
  available_at: 'timestamptz',
  expires_at: 'timestamptz',
  created_at: 'timestamptz',
};
const TIER_CHANGE_COLUMNS = {
  business_id: 'text',
  customer_id: 'text',
  previous_tier_id: 'text',
  new_tier_id: 'text',
  lifetime_earned: 'bigint',
  changed_at: 'timestamptz',
  direction: 'text',
  qualifying_points: 'bigint',
};

const NEW_CUSTOMER_COLUMNS = {
  ...CUSTOMER_COLUMNS,
  points_balance: 'bigint',
  lifetime_earned: 'bigint',
  lifetime_redeemed: 'bigint',
  lifetime_expired: 'bigint',
  points_pending: 'bigint',
  next_expiring_at: 'timestamptz',
  next_expiring_amount: 'bigint',
};
const NO_TIER = { tier_id: sql`null`, tier: sql`'null'::jsonb` };
/** New customers whose later statements in the batch (profile, tier, balance) change the rows it makes: sent before them. */
const insertCustomers = rowSetInsert('customers', NEW_CUSTOMER_COLUMNS, { also: NO_TIER });
/** New customers with their batch's balance and totals already in, in a batch with no profile or tier statement: nothing after it changes them. */
const insertCustomersAsTheyEnd = rowSetInsert('customers', NEW_CUSTOMER_COLUMNS, { also: NO_TIER, deferred: true });
// Deferred (`deferredWrite`): they travel with the batch's next statement. Not the customers'
// insert: the profile, tier and balance statements after it change the rows it makes.
const insertLedger = rowSetInsert('ledger_entries', LEDGER_COLUMNS, { deferred: true });
const insertRecordedEvents = rowSetInsert('recorded_events', RECORDED_EVENT_COLUMNS, { deferred: true });
const insertTierChanges = rowSetInsert('tier_changes', TIER_CHANGE_COLUMNS, { deferred: true });

/**
 * A batch's balance changes, one statement for all its customers (a constant: nothing to build per
 * batch). Arrays, not one JSON document of rows: an `unnest` of parameters is planned for 10 rows
 * and probes the primary key; a `jsonb_to_recordset` was planned for 100 and hash-joined a scan of
 * every customer into each batch (docs/performance.md).
 *
 * The same update sets the next expiring points of the customers one of whose lots with an expiry
 * changed (`expiring`), so a row is written once per batch: the earlier of what the batch knows of
 * the lots it changed (`soon_at`, `soon_amount`) and of the customer's other lots with points
 * left, read as they were (the statement does not see the batch's writes, which travel with it;
 * the changed ones, `changed`, are left out: ids joined by spaces, which no id holds). Two index
 * seeks on `lots_open` a customer.
 */
const APPLY_NETS = `update customers c set
    points_balance = coalesce(x.balance, c.points_balance),
    lifetime_earned = c.lifetime_earned + x.earned,
    lifetime_redeemed = c.lifetime_redeemed + x.redeemed,
    lifetime_expired = c.lifetime_expired + x.expired,
    points_pending = c.points_pending + x.pending,
    updated_at = coalesce(x.updated_at, c.updated_at),
    next_expiring_at = case when x.expiring then n.at else c.next_expiring_at end,
    next_expiring_amount = case when x.expiring then n.amount else c.next_expiring_amount end
  from unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::timestamptz[], $8::bool[], $9::text[], $10::timestamptz[], $11::int8[])
    as x(id, balance, earned, redeemed, expired, pending, updated_at, expiring, changed, soon_at, soon_amount)
  left join lateral (
    select m.at,
           case when m.at is null then null
                else (case when d.at = m.at then d.amount else 0 end) + (case when x.soon_at = m.at then x.soon_amount else 0 end) end as amount
      from (select f.at,
                   (select sum(l.remaining) from lots l
                     where l.customer_id = x.id and l.remaining > 0 and l.expires_at = f.at
                       and l.transaction_id <> all(string_to_array(x.changed, ' '))) as amount
              from (select min(l.expires_at) as at from lots l
                     where l.customer_id = x.id and l.remaining > 0
                       and l.transaction_id <> all(string_to_array(x.changed, ' '))) f) d
      cross join lateral (select least(d.at, x.soon_at) as at) m
     where x.expiring) n on true
  where c.id = x.id`;

interface Batch {
  trx: Transaction<Database>;
  registered: Record<string, unknown>[];
  /** Profile and tier statements, run in order once the batch's new customers are inserted. */
  later: Array<() => Promise<void>>;
  ledger: Record<string, unknown>[];
  recorded: Record<string, unknown>[];
  tierChanges: Record<string, unknown>[];
  net: Map<string, NetChange>;
  lots: LotBook;
  /** The shares of redemptions that recorded none (planned here), for their cancellations: by redemption id. */
  plannedShares: Map<string, LotShare[]>;
}

/**
 * `customers` (profile, balance, lifetime totals, pending and next expiring points, tier),
 * `ledger_entries` (every balance change with the balance after it), `lots` (one per credit,
 * CONTRACT.md §13), `recorded_events` and `tier_changes`.
 *
 * Set-based: a batch costs one insert per table it adds rows to and ONE update of all the
 * customers whose balance moved (the balance after each change is in its event, so the last one
 * is the customer's; lifetime totals move by the batch's sums). Profile and tier events are rare
 * and keep one statement each, run before that update; the order of the statements never changes
 * a row, since they write different columns (and `updated_at` goes to the customer's last event).
 */
export const customersProjector = defineProjector<Batch, { lots: Promise<LotBook> }>({
  name: 'customers',
  tables: ['customers', 'ledger_entries', 'recorded_events', 'tier_changes', 'lots'],
  begin: async (trx, events, span, ahead) => ({
    trx,
    registered: [],
    later: [],
    ledger: [],
    recorded: [],
    tierChanges: [],
    net: new Map(),
    // Not in a rebuild (no span), whose read-ahead needs every lot it changes in the book.
    lots: await (ahead?.lots ?? LotBook.load(trx, events, { expireUnread: span !== undefined })),
    plannedShares: await plannedSharesOf(trx, events),
  }),
  // A rebuild's next page reads its lots while this page's writes wait (see `LotBook.readAhead`).
  readAhead: (trx, events, previous) => {
    const lots = LotBook.readAhead(trx, events, previous.lots);
    lots.catch(() => undefined); // awaited by the next page's `begin`; if the rebuild fails first, nobody will
    return { lots };
  },
  on: {
    CustomerRegistered({ data, recordedAt }, batch) {
      batch.registered.push({
        id: data.customer_id,
        business_id: data.business_id,
        email: data.email,
        email_lower: data.email?.toLowerCase() ?? null,
        phone: data.phone,
        first_name: data.first_name,
        last_name: data.last_name,
        external_reference: data.external_reference,
        metadata: data.metadata,
        created_at: recordedAt,
        updated_at: recordedAt,
        points_balance: 0,
        lifetime_earned: 0,
        lifetime_redeemed: 0,
        lifetime_expired: 0,
        points_pending: 0,
        next_expiring_at: null,
        next_expiring_amount: null,
      });
    },
    TierUpgraded(event, batch) {
      const customerId = streams.customerIdOf(event.streamId);
      batch.tierChanges.push({
        business_id: event.metadata.business_id,
        customer_id: customerId,
        previous_tier_id: event.data.previous_tier?.id ?? null,
        new_tier_id: event.data.new_tier.id,
        lifetime_earned: event.data.lifetime_earned,
        changed_at: event.recordedAt,
        direction: 'upgrade',
        qualifying_points: null,
      });
      batch.later.push(() => applyTierReached(event, batch.trx));
      markTouched(batch.net, customerId);
    },
    TierDowngraded(event, batch) {
      const customerId = streams.customerIdOf(event.streamId);
      batch.tierChanges.push({
        business_id: event.metadata.business_id,
        customer_id: customerId,
        previous_tier_id: event.data.previous_tier.id,
        new_tier_id: event.data.new_tier?.id ?? null,
        lifetime_earned: null,
        changed_at: event.recordedAt,
        direction: 'downgrade',
        qualifying_points: event.data.qualifying_points,
      });
      batch.later.push(() => applyTierLost(event, batch.trx));
      markTouched(batch.net, customerId);
    },
    CustomerUpdated(event, batch) {
      batch.later.push(() => applyProfileChange(event, batch.trx));
      markTouched(batch.net, streams.customerIdOf(event.streamId));
    },
    TierUpdated(event, batch) {
      batch.later.push(() => applyTierChange(event, batch.trx));
    },
    EventRecorded(event, batch) {
      const { data } = event;
      batch.recorded.push({
        id: data.event_id,
        business_id: event.metadata.business_id,
        customer_id: streams.customerIdOf(event.streamId),
        event_type: data.event_type,
        properties: data.properties,
        reference: data.reference,
        base_points: data.base_points,
        multiplier: String(data.multiplier),
        points_awarded: data.points_awarded,
        balance: data.balance,
        available_at: data.available_at,
        expires_at: data.expires_at,
        created_at: event.recordedAt,
      });
      addLedgerLine(event, batch);
      if (data.points_awarded > 0) creditLot(event, batch, data.event_id, data.points_awarded);
    },
    PointsEarned(event, batch) {
      addLedgerLine(event, batch);
      creditLot(event, batch, event.data.transaction_id, event.data.amount);
    },
    PointsAdjusted(event, batch) {
      const { data } = event;
      const taken = data.amount < 0 ? batch.lots.debit(streams.customerIdOf(event.streamId), data.lots, -data.amount) : null;
      addLedgerLine(event, batch, taken);
      if (data.amount > 0) creditLot(event, batch, data.transaction_id, data.amount);
    },
    PointsDeducted(event, batch) {
      addLedgerLine(event, batch, batch.lots.debit(streams.customerIdOf(event.streamId), event.data.lots, event.data.amount));
    },
    RewardRedeemed(event, batch) {
      const { data } = event;
      const taken = data.points_cost > 0 ? batch.lots.debit(streams.customerIdOf(event.streamId), data.lots, data.points_cost) : null;
      if (taken && !data.lots) batch.plannedShares.set(data.redemption_id, taken);
      addLedgerLine(event, batch, taken);
    },
    RedemptionCancelled(event, batch) {
      const { data } = event;
      addLedgerLine(event, batch);
      if (data.points_cost === 0) return;
      const shares = data.lots ?? batch.plannedShares.get(data.redemption_id);
      if (!shares) throw new Error(`redemption ${data.redemption_id}: cancelled, but its shares are nowhere`);
      batch.lots.giveBack(streams.customerIdOf(event.streamId), shares);
    },
    PointsReleased(event, batch) {
      addLedgerLine(event, batch);
      batch.lots.release(streams.customerIdOf(event.streamId), event.data.lot_transaction_id);
    },
    PointsExpiringNotified(event, batch) {
      batch.lots.notice(streams.customerIdOf(event.streamId), event.data.lot_transaction_id);
    },
    PointsExpired(event, batch) {
      addLedgerLine(event, batch, event.data.lots);
      batch.lots.expire(streams.customerIdOf(event.streamId), event.data.lots);
    },
    PointsReversed(event, batch) {
      const { data } = event;
      const change = addLedgerLine(event, batch);
      change.expired -= data.from_expired;
      batch.lots.reverse(streams.customerIdOf(event.streamId), data.reversed_transaction_id, {
        fromLot: data.from_lot,
        fromExpired: data.from_expired,
        fromBalance: data.lots,
      });
    },
  },
  async end({ trx, registered, later, tierChanges, recorded, ledger, net, lots }) {
    // Every statement is built before the first is sent (the JavaScript of a batch is mostly
    // here): in a rebuild the page before this one is still being written meanwhile, and the
    // first statement sent waits for it (src/projections/rebuild.ts).
    await lots.expireUnread(trx);
    for (const [customerId, moved] of lots.pendingMoves()) netOf(net, customerId).pending += moved;
    const expiring = lots.expiringChanges();
    const newCustomers = newCustomersInsert(trx, registered, later.length === 0 ? net : null, expiring);
    for (const [customerId, next] of expiring) netOf(net, customerId).expiring = next;
    const deferredInserts = [
      insertTierChanges.prepare(trx, tierChanges),
      insertRecordedEvents.prepare(trx, recorded),
      insertLedger.prepare(trx, ledger),
      ...lots.writes(trx),
    ];
    const applyNets = net.size > 0 ? netsQuery([...net.values()]) : null;
    await newCustomers();
    for (const statement of later) await statement();
    for (const insert of deferredInserts) await insert();
    if (applyNets) await trx.executeQuery(deferredWrite(applyNets));
  },
});

/**
 * The insert of the batch's new customers. With `net` (a batch with no profile or tier statement,
 * nearly all of them), each row takes its customer's net change, which leaves `net`, and the
 * insert is deferred with the batch's other writes: in a rebuild, a page then sends nothing that
 * waits for the page before to be written, which it did on every page that registered someone,
 * holding the next page's JavaScript behind PostgreSQL (docs/performance.md). Their next expiring
 * points too, which leave `expiring`: all their lots are the batch's. Otherwise it is sent first,
 * since the statements after it change its rows.
 */
function newCustomersInsert(
  trx: Transaction<Database>,
  registered: Record<string, unknown>[],
  net: Map<string, NetChange> | null,
  expiring: Map<string, NextExpiring>,
): () => Promise<void> {
  if (!net) return insertCustomers.prepare(trx, registered);
  for (const row of registered) {
    const next = expiring.get(row.id as string);
    if (next) {
      expiring.delete(row.id as string);
      row.next_expiring_at = next.at;
      row.next_expiring_amount = next.at === null ? null : next.amount;
    }
    const change = net.get(row.id as string);
    if (!change) continue;
    net.delete(change.id);
    row.points_balance = change.balance ?? 0;
    row.lifetime_earned = change.earned;
    row.lifetime_redeemed = change.redeemed;
    row.lifetime_expired = change.expired;
    row.points_pending = change.pending;
    row.updated_at = change.updated_at ?? row.updated_at;
  }
  return insertCustomersAsTheyEnd.prepare(trx, registered);
}

/** The batch's balance changes as `APPLY_NETS` with its column arrays. */
function netsQuery(nets: readonly NetChange[]): CompiledQuery {
  const column = <T>(pick: (n: NetChange) => T) => nets.map(pick);
  return CompiledQuery.raw(APPLY_NETS, [
    column((n) => n.id),
    column((n) => n.balance),
    column((n) => n.earned),
    column((n) => n.redeemed),
    column((n) => n.expired),
    column((n) => n.pending),
    column((n) => n.updated_at),
    column((n) => n.expiring !== null),
    column((n) => n.expiring?.changed.join(' ') ?? null),
    column((n) => n.expiring?.at ?? null),
    column((n) => n.expiring?.amount ?? null),
  ]);
}

/**
 * The shares of the redemptions that the batch's cancellations recorded none for (written before
 * lots existed): as their redemptions' ledger lines keep them. Those made in the batch itself are
 * added as their redemptions are projected.
 */
async function plannedSharesOf(trx: Transaction<Database>, events: readonly ProjectedEvent[]): Promise<Map<string, LotShare[]>> {
  const ids = events.flatMap((e) => (e.type === 'RedemptionCancelled' && !e.data.lots && e.data.points_cost > 0 ? [e.data.redemption_id] : []));
  if (ids.length === 0) return new Map();
  const rows = await trx.selectFrom('ledger_entries').select(['id', 'lots']).where('id', 'in', ids).where('type', '=', 'redemption').execute();
  return new Map(rows.flatMap((r) => (r.lots ? [[r.id, r.lots] as const] : [])));
}

/** A credit's lot (none for 0 points). */
function creditLot(
  event: ProjectedEventOf<'PointsEarned' | 'PointsAdjusted' | 'EventRecorded'>,
  batch: Batch,
  transactionId: string,
  amount: number,
): void {
  if (amount <= 0) return;
  batch.lots.credit(streams.customerIdOf(event.streamId), event.metadata.business_id, {
    transactionId,
    amount,
    createdAt: event.recordedAt.toISOString(),
    availableAt: event.data.available_at,
    expiresAt: event.data.expires_at,
  });
}

function netOf(net: Map<string, NetChange>, customerId: string): NetChange {
  let change = net.get(customerId);
  if (!change) net.set(customerId, (change = { id: customerId, balance: null, earned: 0, redeemed: 0, expired: 0, pending: 0, updated_at: null, expiring: null }));
  return change;
}

/**
 * A balance change: its ledger line (none for 0 points) — a debit's with the lot shares it took —
 * and the customer's net change in this batch.
 */
function addLedgerLine(event: LedgerSource & { metadata: { business_id: string } }, batch: Batch, lots: LotShare[] | null = null): NetChange {
  const entry = ledgerEntryFromEvent(event);
  const change = netOf(batch.net, streams.customerIdOf(event.streamId));
  if (!entry) return change;
  const { earned, redeemed, expired } = lifetimeEffect(entry);
  change.balance = entry.balance;
  change.earned += earned;
  change.redeemed += redeemed;
  change.expired += expired;
  change.updated_at = event.recordedAt;
  batch.ledger.push({
    id: entry.id,
    business_id: event.metadata.business_id,
    customer_id: entry.customer_id,
    type: entry.type,
    amount: entry.amount,
    balance: entry.balance,
    base_amount: entry.base_amount,
    multiplier: entry.multiplier === null ? null : String(entry.multiplier),
    description: entry.description,
    reference: entry.reference,
    metadata: entry.metadata,
    created_at: entry.created_at,
    lots,
    available_at: entry.available_at,
    expires_at: entry.expires_at,
    reversed_transaction_id: entry.reversed_transaction_id,
  });
  return change;
}

/** A profile or tier event came after the customer's last balance change: it owns `updated_at`. */
function markTouched(net: Map<string, NetChange>, customerId: string): void {
  const change = net.get(customerId);
  if (change) change.updated_at = null;
}

async function applyProfileChange(event: ProjectedEventOf<'CustomerUpdated'>, trx: Transaction<Database>): Promise<void> {
  const { metadata, ...fields } = event.data;
  await trx
    .updateTable('customers')
    .set({
      ...fields,
      ...(fields.email !== undefined ? { email_lower: fields.email?.toLowerCase() ?? null } : {}),
      ...(metadata !== undefined ? { metadata: JSON.stringify(metadata) } : {}),
      updated_at: event.recordedAt,
    })
    .where('id', '=', streams.customerIdOf(event.streamId))
    .execute();
}

async function applyTierLost(event: ProjectedEventOf<'TierDowngraded'>, trx: Transaction<Database>): Promise<void> {
  const { new_tier, downgraded_at } = event.data;
  await trx
    .updateTable('customers')
    .set({
      tier_id: new_tier?.id ?? null,
      tier: JSON.stringify(new_tier ? { ...new_tier, achieved_at: new Date(downgraded_at).toISOString() } : null),
      updated_at: event.recordedAt,
    })
    .where('id', '=', streams.customerIdOf(event.streamId))
    .execute();
}

async function applyTierReached(event: ProjectedEventOf<'TierUpgraded'>, trx: Transaction<Database>): Promise<void> {
  const { new_tier } = event.data;
  await trx
    .updateTable('customers')
    .set({ tier_id: new_tier.id, tier: JSON.stringify({ ...new_tier, achieved_at: event.recordedAt.toISOString() }), updated_at: event.recordedAt })
    .where('id', '=', streams.customerIdOf(event.streamId))
    .execute();
}

/** A renamed or re-weighted tier shows as such on the customers that hold it. */
async function applyTierChange(event: ProjectedEventOf<'TierUpdated'>, trx: Transaction<Database>): Promise<void> {
  const { tier_id, ...changes } = event.data;
  const shown = Object.fromEntries(
    Object.entries({ name: changes.name, points_threshold: changes.points_threshold, multiplier: changes.multiplier, benefits: changes.benefits }).filter(
      ([, v]) => v !== undefined,
    ),
  );
  if (Object.keys(shown).length === 0) return;
  await trx
    .updateTable('customers')
    .set({ tier: sql`tier || ${JSON.stringify(shown)}::jsonb` })
    .where('tier_id', '=', tier_id)
    .execute();
}
