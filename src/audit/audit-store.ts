import type { Kysely } from 'kysely';
import { streams } from '../events/streams.js';
import type { Database } from '../db/schema.js';
import { customersProjector } from '../projections/customers/customers-projector.js';
import { compareCheckpoints, type EventStore, START, type StoredEvent } from '../store/event-store.js';
import { type Drift, diffCustomer, type LedgerRow } from './diff-customer.js';
import { type ChainBreak, ChainVerifier } from './verify-chain.js';

export interface AuditReport {
  events: number;
  streams: number;
  customers: number;
  breaks: ChainBreak[];
  drifts: Drift[];
}

export interface AuditOptions {
  /** Only this customer: its stream's chain and its read-model rows. */
  customerId?: string | undefined;
  /** Customers compared per read-model snapshot. */
  chunkSize?: number;
}

const READ_BATCH = 1000;

/**
 * `loyalty audit verify`: checks every stream's hash chain (or one customer's), folds every
 * customer stream with the customer decider and diffs the result against `customers` and
 * `ledger_entries`.
 *
 * Safe while the service writes: the chains are checked up to the log's head as of one moment
 * (taken with the store's record of each stream's head, `streamHeads`), and each chunk of customers is compared
 * with its read-model rows as of one snapshot of the customers projection, folding only the events
 * that projection had applied then.
 */
export async function auditStore(db: Kysely<Database>, store: EventStore, options: AuditOptions = {}): Promise<AuditReport> {
  const { customerId } = options;
  const verifier = await verifyChains(store, customerId === undefined ? undefined : streams.customer(customerId));
  const ids = customerId === undefined ? await allCustomerIds(db, store) : [customerId];
  const drifts: Drift[] = [];
  const chunkSize = options.chunkSize ?? 500;
  for (let i = 0; i < ids.length; i += chunkSize) drifts.push(...(await diffCustomers(db, store, ids.slice(i, i + chunkSize))));
  return { events: verifier.events, streams: verifier.streams, customers: ids.length, breaks: verifier.breaks, drifts };
}

/**
 * Reads the chains up to the log's head as the store reported it together with each stream's
 * recorded head (`streamHeads`), then compares where each chain ended with that record.
 */
async function verifyChains(store: EventStore, stream: string | undefined): Promise<ChainVerifier> {
  const { position: head, streams: heads } = await store.streamHeads(stream === undefined ? {} : { stream });
  const verifier = new ChainVerifier();
  const check = (events: StoredEvent[]) => events.filter((e) => compareCheckpoints(e.position, head) <= 0).forEach((e) => verifier.check(e));
  if (stream !== undefined) {
    check(await store.readStream(stream));
  } else {
    let after = START;
    while (compareCheckpoints(after, head) < 0) {
      const batch = await store.readAll(after, READ_BATCH);
      if (batch.events.length === 0) break;
      check(batch.events);
      after = batch.checkpoint;
    }
  }
  verifier.checkHeads(heads.map((h) => ({ stream: h.stream, version: h.revision, lastHash: h.lastHash })));
  return verifier;
}

async function allCustomerIds(db: Kysely<Database>, store: EventStore): Promise<string[]> {
  const [fromLog, fromReadModel] = await Promise.all([
    store.streamHeads({ prefix: streams.customer('') }),
    db.selectFrom('customers').select('id').execute(),
  ]);
  return [...new Set([...fromLog.streams.map((h) => streams.customerIdOf(h.stream)), ...fromReadModel.map((r) => r.id)])].sort();
}

async function diffCustomers(db: Kysely<Database>, store: EventStore, ids: string[]): Promise<Drift[]> {
  const snapshot = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const checkpoint = await trx
        .selectFrom('projection_checkpoints')
        .select('global_position')
        .where('name', '=', customersProjector.name)
        .executeTakeFirst();
      const rows = await trx.selectFrom('customers').selectAll().where('id', 'in', ids).execute();
      const ledger = await trx.selectFrom('ledger_entries').selectAll().where('customer_id', 'in', ids).orderBy('seq').execute();
      return { projected: BigInt(checkpoint?.global_position ?? 0), rows, ledger };
    });
  const rowOf = new Map(snapshot.rows.map((r) => [r.id, r]));
  const ledgerOf = new Map<string, LedgerRow[]>();
  for (const line of snapshot.ledger) {
    const lines = ledgerOf.get(line.customer_id);
    if (lines) lines.push(line);
    else ledgerOf.set(line.customer_id, [line]);
  }
  const drifts: Drift[] = [];
  for (const id of ids) {
    const events = (await store.readStream(streams.customer(id))).filter((e) => e.position.globalPosition <= snapshot.projected);
    drifts.push(...diffCustomer(id, events, rowOf.get(id), ledgerOf.get(id) ?? []));
  }
  return drifts;
}
