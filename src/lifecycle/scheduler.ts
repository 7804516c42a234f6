import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { BackgroundLoop } from '../background-loop.js';
import type { Database } from '../db/schema.js';
import { holderGone } from '../db/process-mark.js';
import { type Checkpoint, compareCheckpoints } from '../store/event-store.js';
import { DEFAULT_KEEP, DEFAULT_PACER_OPTIONS, Pacer, type PacerOptions, type Span } from './pacing.js';

/** One piece of due work a run appended: a release, an expiring notice, an expiry or a downgrade. */
export interface DoneWork {
  type: string;
  /** The lot (credit id) it was about; null for a downgrade. */
  lot: string | null;
  amount: number | null;
  /** The instant it names (ISO): the release's available_at, the expiry a notice announces, the expiry's expires_at, the downgrade's instant. */
  at: string;
}

/** What applying a customer's due work did, as the command path answered it. */
export interface AppliedDue {
  work: DoneWork[];
  /** The events appended (an expiry is one event for all the lots of its instant). */
  events: number;
  /** When the customer next has due work, as the decider sees its state after the run; null: never. */
  nextDueAt: Date | null;
  /** The customer stream's revision that was decided at (after the run's append, if any). */
  revision: number;
  /** Where the run's last event is in the log; null when it appended nothing. */
  position: Checkpoint | null;
}

/**
 * A customer's due work, done through the normal command path (expected revision: exactly once);
 * its append is queued once `appendAfter` settles (see `runOnce`).
 */
export type ApplyDue = (businessId: string, customerId: string, appendAfter?: Promise<unknown>) => Promise<AppliedDue>;

export interface CustomerRun extends AppliedDue {
  customer_id: string;
  business_id: string;
  /** When the index said it was due. */
  due_at: Date;
  /** The scheduler's clock just before the run decided (the decision's own time is at or after it). */
  started_at: Date;
}

export interface SchedulerOptions {
  applyDue: ApplyDue;
  now: () => Date;
  /** This process's `ProcessMark`: a claim of a process that died is taken over at once. */
  holder?: string | undefined;
  /** How long a claimed customer is ours before another scheduler may take it. */
  claimMs?: number;
  /** Customers claimed per round. */
  batchSize?: number;
  /** How often to look for due work when there was none (well under the 2 s of CONTRACT.md §13). */
  pollMs?: number;
  /**
   * Waits until the read models include a position. The loop waits for each round's appends to be
   * projected before it claims more, so the requests of the process, each waiting for its own write
   * to be projected (read-your-writes), never queue behind more than one round of due work.
   */
  settle?: ((position: Checkpoint) => Promise<void>) | undefined;
  /**
   * The share of their rate that everyone else writing to the log (requests, other processes)
   * keeps while due work runs: the loop pauses after each round as long as that takes (`Pacer`).
   * 0: never pause.
   */
  keep?: number;
  /** The pacer's settings (see `PacerOptions`; tests lengthen the probe). */
  pacing?: Partial<PacerOptions>;
  /**
   * The log's head (`EventStore.headPosition`): how the loop tells how much others wrote during a
   * round and its pause (their events are the head's move less the round's own). Without it: no pauses.
   */
  logHead?: (() => Promise<Checkpoint>) | undefined;
  logger?: Logger | undefined;
}

/** A customer whose run failed is left alone this long before another try. */
const FAILURE_BACKOFF_MS = 5_000;

/**
 * The lifecycle scheduler of the workers (CONTRACT.md §13). It claims customers whose due instant
 * has come from the `customer_due` index (an index range scan: never every customer), soonest due
 * first, and has each one's due work done through the normal command path, then records the
 * decider's next due instant for it. Several schedulers (worker processes) claim disjoint
 * customers (`FOR UPDATE SKIP LOCKED`, leases, and a dead holder's claims are taken over at once);
 * even when two run one customer, its stream's expected revision lets one append and the other
 * re-decide and find nothing due, and due events carry ids derived from lot, kind and instant:
 * exactly once per lot and customer. After downtime the index holds every missed instant, and
 * rounds take them oldest first.
 */
export class LifecycleScheduler {
  private readonly loop: BackgroundLoop;
  private readonly pacer: Pacer;
  /** Ends the loop's pause early (on stop). */
  private endPause: (() => void) | null = null;
  private stopping = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: SchedulerOptions,
  ) {
    this.pacer = new Pacer(options.keep ?? DEFAULT_KEEP, { ...DEFAULT_PACER_OPTIONS, ...options.pacing });
    this.loop = new BackgroundLoop(() => this.paced(), {
      pollMs: options.pollMs ?? 500,
      onError: (error) => options.logger?.error({ err: error }, 'lifecycle round failed; will retry'),
    });
  }

  start(): void {
    this.stopping = false;
    this.loop.start();
  }

  stop(): Promise<void> {
    this.stopping = true;
    const stopped = this.loop.stop();
    this.endPause?.();
    return stopped;
  }

  wake(): void {
    this.loop.wake();
  }

  /** One round of the loop, then its wait for the read models and its pause (see `settle`, `keep`). */
  private async paced(): Promise<boolean> {
    const { logHead, settle } = this.options;
    const started = Date.now();
    const before = await logHead?.();
    const runs = await this.runOnce();
    if (runs.length === 0) {
      if (before) this.pacer.idle(started, Number(before.globalPosition));
      return false;
    }
    this.pacer.busy();
    const last = runs.reduce<Checkpoint | null>((a, r) => (r.position && (!a || compareCheckpoints(r.position, a) > 0) ? r.position : a), null);
    if (last && settle) await settle(last);
    if (!logHead || !before) return true;
    const afterRound = await logHead();
    const ended = Date.now();
    const round = { ms: ended - started, others: Math.max(0, eventsBetween(before, afterRound) - runs.reduce((n, r) => n + r.events, 0)) };
    const plan = this.pacer.plan(ended, round.ms, round.others);
    if (plan.ms <= 0) return true;
    let secondHalf: Span | undefined;
    let head = afterRound;
    if (plan.probe) {
      // Its first half lets the requests the round held up through; the second is what they do undisturbed.
      await this.pause(plan.ms / 2);
      if (this.stopping) return true;
      const middle = await logHead();
      const from = Date.now();
      await this.pause(plan.ms / 2);
      head = await logHead();
      secondHalf = { ms: Date.now() - from, others: eventsBetween(middle, head) };
    } else {
      await this.pause(plan.ms);
      head = await logHead();
    }
    const at = Date.now();
    const pause = { ms: at - ended, others: eventsBetween(afterRound, head) };
    this.pacer.observe(at, round, pause, secondHalf);
    this.options.logger?.debug({ customers: runs.length, round, pause, probe: secondHalf ?? null, ...this.pacer.state() }, 'lifecycle round paced');
    return true;
  }

  /** Waits `ms`, or less if the scheduler is stopped meanwhile. */
  private pause(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endPause?.(), ms);
      this.endPause = () => {
        clearTimeout(timer);
        this.endPause = null;
        resolve();
      };
    });
  }

  /**
   * One round: claims up to a batch of due customers, does their due work, then records every
   * one's next due instant in one statement (one commit per round, not one per customer); what
   * it did, in due order.
   */
  async runOnce(): Promise<CustomerRun[]> {
    const claimed = await this.claim();
    // Each customer is decided in a turn of the event loop of its own, so the projections this
    // process runs (the requests' writes, which they wait for) go on between two decisions
    // instead of waiting for a round's worth of them; the appends are held until the turn after
    // the last decision began, so the round goes in one commit, and into the log at once (a
    // decision that must read its customer from the store may miss it and go in the next).
    let open!: () => void;
    const decided = new Promise<void>((resolve) => (open = resolve));
    let turn = Promise.resolve();
    const applied = claimed.map((customer) => {
      turn = turn.then(nextTurn);
      return turn.then(() => this.apply(customer, decided));
    });
    void turn.then(nextTurn).then(open);
    const runs = (await Promise.all(applied)).filter((run): run is CustomerRun => run !== null);
    await this.recordNextDue(runs);
    return runs.sort((a, b) => a.due_at.getTime() - b.due_at.getTime());
  }

  /** Rounds until nothing is due now (what `loyalty lifecycle run` does). */
  async runUntilIdle(): Promise<CustomerRun[]> {
    const all: CustomerRun[] = [];
    for (;;) {
      const runs = await this.runOnce();
      if (runs.length === 0) return all;
      all.push(...runs);
    }
  }

  private async claim(): Promise<Array<{ customer_id: string; business_id: string; due_at: Date }>> {
    const now = this.options.now();
    const result = await sql<{ customer_id: string; business_id: string; due_at: Date }>`
      with due as (
             select customer_id
               from customer_due
              where due_at <= ${now}
                and (claimed_until is null or claimed_until < ${now} or ${holderGone(sql.ref('holder'))})
              order by due_at
              limit ${this.options.batchSize ?? 100}
                for update skip locked)
      update customer_due d
         set claimed_until = ${new Date(now.getTime() + (this.options.claimMs ?? 60_000))}, holder = ${this.options.holder ?? null}::bigint
       -- an array, not a join: joined, the claimed rows were planned as 100 and hash-joined a scan of every due row
       where d.customer_id = any(array(select customer_id from due))
      returning d.customer_id, d.business_id, d.due_at`.execute(this.db);
    return result.rows.map((r) => ({ ...r, due_at: new Date(r.due_at) })).sort((a, b) => a.due_at.getTime() - b.due_at.getTime());
  }

  /** Does one customer's due work; null when it failed (the customer is then left alone for a while). */
  private async apply(customer: { customer_id: string; business_id: string; due_at: Date }, appendAfter: Promise<void>): Promise<CustomerRun | null> {
    let applied: AppliedDue;
    const startedAt = this.options.now();
    try {
      applied = await this.options.applyDue(customer.business_id, customer.customer_id, appendAfter);
    } catch (error) {
      this.options.logger?.error({ err: error, customer_id: customer.customer_id }, 'due work failed; will retry');
      await this.db
        .updateTable('customer_due')
        .set({ holder: null, claimed_until: new Date(this.options.now().getTime() + FAILURE_BACKOFF_MS) })
        .where('customer_id', '=', customer.customer_id)
        .execute();
      return null;
    }
    return { ...customer, ...applied, started_at: startedAt };
  }

  /**
   * Releases the round's customers with the decider's next due instant for each, unless an event
   * after the decided revision lowered it meanwhile (then that instant stays, and a later round
   * decides again). An instant that came due while the round ran (a slow round straddling it) is
   * recorded as it is: the next round claims it.
   */
  private async recordNextDue(runs: CustomerRun[]): Promise<void> {
    if (runs.length === 0) return;
    const now = this.options.now();
    const rows = runs.map((run) => {
      let next = run.nextDueAt;
      if (next !== null && next <= run.started_at) {
        // A run does everything due at its clock time: anything due before it began means the decider and the index disagree.
        this.options.logger?.warn({ customer_id: run.customer_id, next_due_at: next.toISOString() }, 'due work left after a run; looking again later');
        next = new Date(now.getTime() + FAILURE_BACKOFF_MS);
      }
      return { customer_id: run.customer_id, revision: run.revision, next_due: next };
    });
    // Arrays: planned for 10 rows, the update probes the index; as one JSON document of rows it was
    // planned for 100 and hash-joined a scan of every customer's due row (docs/performance.md).
    await sql`update customer_due d set
        holder = null, claimed_until = null,
        due_at = case when d.revision <= r.revision then r.next_due else d.due_at end,
        revision = greatest(d.revision, r.revision)
      from unnest(${rows.map((r) => r.customer_id)}::text[], ${rows.map((r) => r.revision)}::int8[], ${rows.map((r) => r.next_due)}::timestamptz[])
        as r(customer_id, revision, next_due)
      where d.customer_id = r.customer_id`.execute(this.db);
  }
}

/** Resolves in the next turn of the event loop, after its I/O. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Events appended between two heads of the log (positions are taken one after another; a rolled-back append's count too). */
function eventsBetween(from: Checkpoint, to: Checkpoint): number {
  return Math.max(0, Number(to.globalPosition - from.globalPosition));
}
