import { isCondition, type PlannedAppend } from './append-plan.js';
import { type AppendOptions, type AppendResult, type AppendWrite, awaitDependencies, type Redecide } from './event-store.js';

export interface PendingAppend {
  writes: AppendWrite[];
  /** The appends this one was decided on (see `EventStore.append`). */
  after: PendingAppend[];
  /** Decides the append again where the batch finds its streams moved (see `AppendOptions.redecide`). */
  redecide?: Redecide;
  /** The request's answer, stored in the batch's transaction (see `AppendOptions.receipt`). */
  receipt?: AppendOptions['receipt'];
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
  settled?: boolean;
  failure?: { error: unknown };
}

export function settle(pending: PendingAppend, error: unknown, result?: AppendResult): void {
  if (pending.settled) return;
  pending.settled = true;
  pending.after = []; // let a long chain of appends decided on each other be collected
  if (result) pending.resolve(result);
  else {
    pending.failure = { error };
    pending.reject(error);
  }
}

/**
 * The appends of `batch` to plan, each naming the earlier appends of the batch it was decided on
 * (every unsettled dependency is one: see `GroupCommit`), or the failure of one settled before.
 */
export function plannedAppends(batch: PendingAppend[]): { live: PendingAppend[]; planned: PlannedAppend[] } {
  const live = batch.filter((pending) => !pending.settled);
  const planned = live.map((pending) => ({
    writes: pending.writes,
    after: pending.after.map((d) => live.indexOf(d)).filter((i) => i >= 0),
    failedDependency: pending.after.find((d) => d.failure)?.failure as { error: Error } | undefined,
    redecide: pending.redecide,
  }));
  return { live, planned };
}

/**
 * Commits one batch and settles every append in it. Calls `take` for the batch once it holds a
 * connection (so, on a database of one connection such as PGlite, a batch waiting for it keeps
 * filling up), and `claimed` once the batch holds its stream locks and has decided its appends, so
 * the next batch may start.
 */
export type CommitBatch = (take: () => PendingAppend[], claimed: () => void) => Promise<void>;

export interface GroupCommitOptions {
  /** Most appends one batch carries. */
  maxBatch: number;
  /** Most batches in flight at once (each on its own connection). */
  maxInFlight: number;
  /**
   * Fewest appends that start a batch while another is in flight. Pipelining pays when batches are
   * full (the store is saturated); splitting a small batch in two only pays the per-batch
   * statements and the commit's flush twice, and makes latency worse.
   */
  pipelineFrom: number;
}

interface Touched {
  written: Set<string>;
  read: Set<string>;
}

/**
 * The queue of a group commit. Appends queue in arrival order; a batch takes the oldest ones
 * up to `maxBatch` when it has a connection, and while it commits the next batch can claim its
 * streams if `pipelineFrom` appends wait (at most `maxInFlight` batches, at most one of them
 * claiming at a time).
 *
 * Appends that touch one stream are decided in the order they were queued: a batch never takes
 * an append that writes a stream an earlier batch still in flight writes or has a condition on,
 * or that has a condition on a stream one writes; it also leaves behind every later append that
 * would conflict in the same way with one it left behind. So the streams two batches in flight
 * write are disjoint (they wait for each other only on the append lock), conditions on one stream
 * (say, a business's program) are shared by both, and a batch that fails and is retried append by
 * append still decides before any later append of its streams. An append also waits for the
 * appends it was decided on (`after`) unless they are settled or in the same batch: so when it is
 * decided, their outcome is known.
 */
export class GroupCommit {
  private readonly queue: PendingAppend[] = [];
  private readonly writing = new Set<string>();
  private readonly reading = new Map<string, number>();
  private readonly tickets = new WeakMap<Promise<AppendResult>, PendingAppend>();
  private inFlight = 0;
  private claiming = false;

  constructor(
    private readonly commit: CommitBatch,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Queues `writes`; `after` are promises this group commit returned (others are awaited before queueing). */
  add(writes: AppendWrite[], options: Pick<AppendOptions, 'after' | 'redecide' | 'receipt'> = {}): Promise<AppendResult> {
    const { after = [], redecide, receipt } = options;
    const dependencies = after.map((ticket) => this.tickets.get(ticket));
    if (!dependencies.every((d) => d !== undefined)) return awaitDependencies(writes, after).then(() => this.add(writes, { redecide, receipt }));
    let pending: PendingAppend | undefined;
    const ticket = new Promise<AppendResult>((resolve, reject) => {
      pending = { writes, after: dependencies.filter((d) => d.failure || !d.settled), redecide, receipt, resolve, reject };
    });
    this.tickets.set(ticket, pending!);
    this.queue.push(pending!);
    this.pump();
    return ticket;
  }

  private pump(): void {
    while (!this.claiming && this.inFlight < this.options.maxInFlight && this.enoughWaiting()) {
      this.inFlight++;
      this.claiming = true;
      let taken: { batch: PendingAppend[]; touched: Touched } | undefined;
      const take = () => {
        if (!taken) {
          const batch = this.take();
          taken = { batch, touched: touchedBy(batch) };
          this.mark(taken.touched, +1);
        }
        return taken.batch;
      };
      let released = false;
      const claimed = () => {
        if (released) return;
        released = true;
        this.claiming = false;
        this.pump();
      };
      void this.commit(take, claimed)
        .catch((error: unknown) => take().forEach((pending) => settle(pending, error)))
        .finally(() => {
          if (taken) this.mark(taken.touched, -1);
          this.inFlight--;
          claimed();
          this.pump();
        });
    }
  }

  private enoughWaiting(): boolean {
    const least = this.inFlight === 0 ? 1 : this.options.pipelineFrom;
    return this.select(least).batch.length >= least;
  }

  /** Takes the oldest appends that may go now (at most `maxBatch`), leaving the rest queued in order. */
  private take(): PendingAppend[] {
    const { batch, left } = this.select(this.options.maxBatch);
    this.queue.splice(0, this.queue.length, ...left);
    return batch;
  }

  private select(max: number): { batch: PendingAppend[]; left: PendingAppend[] } {
    const batch: PendingAppend[] = [];
    const left: PendingAppend[] = [];
    const leftBehind: Touched = { written: new Set(), read: new Set() };
    const taken = new Set<PendingAppend>();
    for (const [i, pending] of this.queue.entries()) {
      if (batch.length >= max) {
        left.push(...this.queue.slice(i));
        break;
      }
      const touched = touchedByOne(pending);
      const mustWait =
        [...touched.written].some((s) => this.writing.has(s) || this.reading.has(s) || leftBehind.written.has(s) || leftBehind.read.has(s)) ||
        [...touched.read].some((s) => this.writing.has(s) || leftBehind.written.has(s)) ||
        pending.after.some((d) => !d.settled && !taken.has(d));
      if (!mustWait) {
        batch.push(pending);
        taken.add(pending);
        continue;
      }
      left.push(pending);
      touched.written.forEach((s) => leftBehind.written.add(s));
      touched.read.forEach((s) => leftBehind.read.add(s));
    }
    return { batch, left };
  }

  private mark(touched: Touched, delta: 1 | -1): void {
    for (const s of touched.written) {
      if (delta > 0) this.writing.add(s);
      else this.writing.delete(s);
    }
    for (const s of touched.read) {
      const count = (this.reading.get(s) ?? 0) + delta;
      if (count > 0) this.reading.set(s, count);
      else this.reading.delete(s);
    }
  }
}

/**
 * The streams one append touches, kept by its writes: `select` asks for every queued append on
 * every pass, and a queue of n appends is passed over about n times while it fills (a new array of
 * writes, after a decision made again, is a new key).
 */
const touchedByWrites = new WeakMap<AppendWrite[], Touched>();
function touchedByOne(pending: PendingAppend): Touched {
  let touched = touchedByWrites.get(pending.writes);
  if (!touched) touchedByWrites.set(pending.writes, (touched = touchedBy([pending])));
  return touched;
}

/** The streams a batch writes, and those it only has conditions on. */
export function touchedBy(batch: PendingAppend[]): Touched {
  const written = new Set<string>();
  const read = new Set<string>();
  for (const write of batch.flatMap((p) => p.writes)) {
    if (write.events.length > 0) written.add(write.stream);
    else if (isCondition(write)) read.add(write.stream);
  }
  for (const s of written) read.delete(s);
  return { written, read };
}
