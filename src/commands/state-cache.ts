import type { AppendResult, EventStore, RecordedEvent, SnapshotAndEvents } from '../store/event-store.js';
import { FrequencySketch } from './frequency-sketch.js';
import { type SnapshotStore, STATE_VERSION } from './snapshot-store.js';

/** Events folded since the last snapshot after which a new one is taken, at least. */
export const SNAPSHOT_EVERY = 200;
/**
 * Characters of snapshot per event folded since it, at most: a large state (a customer with
 * thousands of lots) is snapshotted less often, so writing snapshots costs each event O(1) however
 * large the state grows, and a cold load folds at most about as many events as its snapshot holds lots.
 */
const SNAPSHOT_CHARS_PER_EVENT = 1_000;
/**
 * A state leaving memory with at least this many events folded since its last snapshot, and at
 * least a tenth of its weight (a customer's lots), is snapshotted as it goes: when more customers
 * are in use than memory holds, each is loaded again soon, and the load folds every event since the
 * snapshot (up to SNAPSHOT_EVERY, each decoded and folded) where it would fold a few.
 */
export const SNAPSHOT_ON_LEAVING = 16;

/** Where a load found the state it decides on: memory, a snapshot (and the events after it), or the log alone. */
export type LoadedFrom = 'memory' | 'snapshot' | 'log';

/** The revision a cached state is at; `no_stream` remembers that the stream did not exist. */
export type CachedRevision = number | 'no_stream';

export interface CachedState<State> {
  state: State;
  revision: CachedRevision;
  /** The append this state assumes, while it is queued: a decision on the state names it as `after`. */
  pending?: Promise<AppendResult>;
  /** While `pending`: the newest state known committed before it (a baseline to read forward from). */
  committed?: { state: unknown; revision: CachedRevision };
  /** Its append was decided again on other states: this one never becomes true. */
  superseded?: boolean;
}

/**
 * What `get` found: a state at a revision, with the events after it where they were read with its
 * snapshot; or, read with the snapshot that was not there, the stream's events from its start.
 */
export type Found<State> = { state: State; revision: number; events?: RecordedEvent[] } | { state?: undefined; revision?: undefined; events: RecordedEvent[] };

/** A stored snapshot's state made whole by `revive` (a customer's lots as a ledger again). */
function revived<State>(snapshot: { state: unknown; revision: number }, revive?: (snapshot: State) => State): { state: State; revision: number } {
  const state = snapshot.state as State;
  return { state: revive ? revive(state) : state, revision: snapshot.revision };
}

const order = (revision: CachedRevision) => (revision === 'no_stream' ? -1 : revision);

/** A bound on what the cache holds besides its number of entries: states weigh what they grow with. */
export interface WeightBound {
  /** What a state weighs (a customer's: its lots). */
  weigh: (state: unknown) => number;
  /** The most the states in memory may weigh together; the least recently used go first (the newest always stays). */
  max: number;
}

/**
 * Folded aggregate states, so a command reads only the events appended since (usually none)
 * instead of the whole stream: recently used ones in memory, and with a snapshot store, one
 * snapshot in PostgreSQL per `SNAPSHOT_EVERY` events for cold loads. A cache only: an entry may be
 * stale (another process wrote after it); commands that decide on a memory entry without reading
 * the store rely on the append's expected-revision check to catch that, and `forget` the entry
 * when it does. An entry may also be the state after an append still queued (`setQueued`): it is
 * forgotten if that append fails, and snapshots are only ever taken of committed states. Least
 * recently used entries leave memory past `capacity`, or past the `weight` bound: states grow with
 * their history (a customer's lots), so a count alone bounds nothing.
 */
export class StateCache {
  private readonly entries = new Map<string, CachedState<unknown>>();
  private readonly persisted = new Map<string, number>();
  /** Per stream, events to fold after its last snapshot before the next (more than SNAPSHOT_EVERY for large states). */
  private readonly snapshotEvery = new Map<string, number>();
  /**
   * Streams whose snapshot is being written: one at a time each. A large state's snapshot takes
   * seconds, and until the first one is written its size (hence its interval) is unknown: without
   * this, a customer with 150,000 lots had a 40 MB snapshot started every 200 events, each
   * serialized on the event loop, until the server answered a few earns a second.
   */
  private readonly snapshotting = new Set<string>();
  /** Per stream in memory, what its state weighs (with a `weight` bound), and their sum. */
  private readonly weights = new Map<string, number>();
  private weighed = 0;
  /** The last state remembered that weighs more than the whole bound, while memory holds it (see `evict`). */
  private oversized: string | undefined;
  /** How often each stream was loaded lately: who is let in when memory is full (see `evict`). */
  private readonly uses: FrequencySketch;
  private readonly counts: Record<LoadedFrom, number> = { memory: 0, snapshot: 0, log: 0 };

  constructor(
    private readonly capacity = 10_000,
    private readonly snapshots?: SnapshotStore,
    private readonly weight?: WeightBound,
  ) {
    this.uses = new FrequencySketch(capacity);
  }

  /**
   * A command loads the stream: counted once per load, for admission (`evict`). Counts are halved
   * every ten loads per state held (at least 16 states' worth): popularity is measured over about
   * ten passes over what memory holds, whatever bound holds it (the lots bound keeps a few thousand
   * states where the count bound would allow 50,000).
   */
  touch(stream: string): void {
    this.uses.add(stream, 10 * Math.max(this.entries.size, 16));
  }

  /** What the states in memory weigh together (0 without a `weight` bound). */
  get weightHeld(): number {
    return this.weighed;
  }

  /** The bound on that weight, and on the number of states. */
  get bounds(): { weight: number | undefined; states: number } {
    return { weight: this.weight?.max, states: this.capacity };
  }

  /** States in memory. */
  get size(): number {
    return this.entries.size;
  }

  /** Where loads for decisions found their state, since the process started (`recall`, `get`). */
  get loads(): Readonly<Record<LoadedFrom, number>> {
    return this.counts;
  }

  /** The state in memory, for a decision made on it without reading the store: `peek`, counted as a load from memory. */
  recall<State>(stream: string): CachedState<State> | undefined {
    const entry = this.peek<State>(stream);
    if (entry) this.counts.memory++;
    return entry;
  }

  /** The state in memory, if any (never a snapshot: those are old by nature). */
  peek<State>(stream: string): CachedState<State> | undefined {
    const entry = this.entries.get(stream);
    if (!entry) return undefined;
    this.entries.delete(stream);
    this.entries.set(stream, entry);
    return entry as CachedState<State>;
  }

  /**
   * The committed state in memory (waiting for a queued append it holds the state after to settle),
   * else the stream's snapshot (if it has one); none when memory holds it as absent. With
   * a `store` that keeps snapshots beside its log (`readStreamFromSnapshot`), the snapshot comes with the
   * events after it, read in one round trip, and without a snapshot the events alone.
   */
  async get<State>(stream: string, revive?: (snapshot: State) => State, store?: Pick<EventStore, 'readStreamFromSnapshot'>): Promise<Found<State> | undefined> {
    let entry = this.peek<State>(stream);
    while (entry?.pending) {
      await entry.pending.catch(() => undefined);
      entry = this.peek<State>(stream);
    }
    if (entry) {
      this.counts.memory++;
      return entry.revision === 'no_stream' ? undefined : (entry as { state: State; revision: number });
    }
    const { snapshot, events }: Partial<SnapshotAndEvents> =
      this.snapshots && store?.readStreamFromSnapshot
        ? await store.readStreamFromSnapshot(stream, STATE_VERSION)
        : { snapshot: await this.stored(stream) };
    this.counts[snapshot ? 'snapshot' : 'log']++;
    if (!snapshot) return events && { events };
    this.persisted.set(stream, snapshot.revision);
    return { ...revived(snapshot, revive), ...(events && { events }) };
  }

  /**
   * Remembers `state` at `revision`. An older revision than the one in memory is ignored: a load
   * that started before a concurrent append may finish after it.
   */
  set(stream: string, state: unknown, revision: CachedRevision): void {
    if (this.remember(stream, { state, revision })) this.snapshotIfDue(stream, state, revision);
  }

  /**
   * Remembers `state` at `revision` as the state after `appended`, queued but not committed: the
   * next command decides on it at once instead of waiting for the commit. Once `appended`
   * commits the entry is an ordinary one; if it fails, the entry is forgotten (unless replaced since).
   * `replace`: even over a newer entry (the append was decided again, and states queued after its
   * first decision are wrong). Returns the entry, to mark it superseded if that happens to it.
   */
  setQueued(stream: string, state: unknown, revision: number, appended: Promise<AppendResult>, options: { replace?: boolean } = {}): CachedState<unknown> {
    const before = this.entries.get(stream);
    const committed = before && (before.pending ? before.committed : { state: before.state, revision: before.revision });
    const entry: CachedState<unknown> = { state, revision, pending: appended, committed };
    if (options.replace) this.entries.delete(stream);
    if (!this.remember(stream, entry, before === undefined)) return entry;
    appended.then(
      () => {
        const current = this.entries.get(stream);
        if (entry.superseded) {
          // Never true, and nothing replaced it (the decision made again wrote nothing to this
          // stream): let it go, or it would stay marked queued and `get` would wait on it for ever.
          if (current === entry) this.drop(stream);
          return;
        }
        if (current === entry) this.entries.set(stream, { state, revision });
        // A later append of the chain is still queued: its baseline moves up to this commit, or a
        // stream that is never idle would keep the baseline of the chain's start, and every
        // decision made again on it would read and fold everything since (`baseline`).
        else if (current?.pending && order(current.revision) > revision && order(current.committed?.revision ?? 'no_stream') < revision) {
          current.committed = { state, revision };
        }
        this.snapshotIfDue(stream, state, revision);
      },
      () => {
        if (this.entries.get(stream) === entry) this.drop(stream);
      },
    );
    return entry;
  }

  /** Whether memory now holds `entry`: not if it is older than the one there, nor if it was not let in (`evict`). */
  private remember(stream: string, entry: CachedState<unknown>, newcomer = !this.entries.has(stream)): boolean {
    const current = this.entries.get(stream);
    if (current && order(current.revision) > order(entry.revision)) return false;
    this.entries.delete(stream);
    this.entries.set(stream, entry);
    if (this.weight) {
      const weight = this.weight.weigh(entry.state);
      this.weighed += weight - (this.weights.get(stream) ?? 0);
      this.weights.set(stream, weight);
      if (weight > this.weight.max) this.oversized = stream;
      else if (this.oversized === stream) this.oversized = undefined;
    }
    return this.evict(stream, newcomer);
  }

  /**
   * Lets entries go while there are more than `capacity`, or while they weigh more than the bound;
   * answers whether `newest` (the one just remembered) stays. Each time room is needed, the least
   * recently used entry goes, unless `newest` is a newcomer used no more often lately than it
   * (`touch`): then the newcomer goes instead. Least-recently-used eviction alone keeps nothing of
   * a set of streams used in turn that is larger than memory (every customer earning in turn, a
   * batch over all of them): each is let go just before its next use, and every command reads its
   * snapshot and folds onto it. With admission by frequency, the streams in memory stay and serve
   * their share. One state heavier than the whole bound, the last one remembered, stays too, and
   * the bound applies to the others: it is in use (a customer with 150,000 lots, written all the
   * time), and were it let go each time a light state came in after it, every command on it would
   * read its snapshot again and fold onto it.
   */
  private evict(newest: string, newcomer: boolean): boolean {
    for (;;) {
      const kept = this.oversized;
      const held = this.weighed - (kept === undefined ? 0 : (this.weights.get(kept) ?? 0));
      if (this.entries.size <= this.capacity && !(this.weight && held > this.weight.max)) return true;
      let victim: string | undefined;
      for (const stream of this.entries.keys()) {
        if (stream !== newest && stream !== kept) {
          victim = stream;
          break;
        }
      }
      if (victim === undefined) return true;
      if (newcomer && newest !== kept && this.uses.count(newest) <= this.uses.count(victim)) victim = newest;
      this.snapshotLeaving(victim);
      this.drop(victim);
      this.persisted.delete(victim);
      this.snapshotEvery.delete(victim);
      if (victim === newest) return false;
    }
  }

  /** The stream's entry leaves memory (its snapshot bookkeeping stays). */
  private drop(stream: string): void {
    if (this.oversized === stream) this.oversized = undefined;
    this.entries.delete(stream);
    this.weighed -= this.weights.get(stream) ?? 0;
    this.weights.delete(stream);
  }

  private snapshotIfDue(stream: string, state: unknown, revision: CachedRevision): void {
    const every = this.snapshotEvery.get(stream) ?? SNAPSHOT_EVERY;
    if (revision === 'no_stream' || revision - (this.persisted.get(stream) ?? -1) < every) return;
    void this.writeSnapshot(stream, state, revision);
  }

  /** A committed state about to leave memory is snapshotted if reloading it would fold many events (SNAPSHOT_ON_LEAVING). */
  private snapshotLeaving(stream: string): void {
    const entry = this.entries.get(stream);
    if (entry && this.worthSnapshot(stream, entry)) void this.writeSnapshot(stream, entry.state, entry.revision as number);
  }

  /** Committed, and SNAPSHOT_ON_LEAVING events (and a tenth of its weight) or more since its last snapshot. */
  private worthSnapshot(stream: string, entry: CachedState<unknown>): boolean {
    if (entry.pending || entry.revision === 'no_stream') return false;
    const since = entry.revision - (this.persisted.get(stream) ?? -1);
    return since >= Math.max(SNAPSHOT_ON_LEAVING, Math.ceil((this.weights.get(stream) ?? 1) / 10));
  }

  /**
   * On shutdown: snapshots the states memory holds that are worth it (as if each were leaving),
   * most recently used first, a few at a time, starting none after `withinMs`; answers how many
   * were written. A restart (a deploy) then loads those customers from snapshots taken at their
   * last event instead of folding up to SNAPSHOT_EVERY events each while the first requests wait.
   */
  async snapshotHeld(withinMs: number, concurrency = 4): Promise<number> {
    const until = Date.now() + withinMs;
    const due = [...this.entries].reverse().filter(([stream, entry]) => this.worthSnapshot(stream, entry));
    let next = 0;
    let written = 0;
    const writer = async () => {
      while (next < due.length && Date.now() < until) {
        const [stream, entry] = due[next++]!;
        if (await this.writeSnapshot(stream, entry.state, entry.revision as number)) written++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, writer));
    return written;
  }

  /** Writes a snapshot unless one of the stream is being written; answers whether this one was. */
  private async writeSnapshot(stream: string, state: unknown, revision: number): Promise<boolean> {
    if (!this.snapshots || this.snapshotting.has(stream)) return false;
    this.persisted.set(stream, revision);
    this.snapshotting.add(stream);
    // Off the request's path. A failed snapshot only means a slower cold load; the next is due
    // `every` events on, like any other.
    return this.snapshots
      .put(stream, revision, state)
      .then(
        (chars) => {
          // Not for a stream that left memory meanwhile: its bookkeeping left with it.
          if (this.entries.has(stream)) this.snapshotEvery.set(stream, Math.max(SNAPSHOT_EVERY, Math.ceil(chars / SNAPSHOT_CHARS_PER_EVENT)));
          return true;
        },
        () => false,
      )
      .finally(() => this.snapshotting.delete(stream));
  }

  /**
   * The newest committed state memory holds of a stream, without waiting for queued appends
   * (possibly behind the store: a baseline to read the events after it from), else its snapshot.
   */
  async baseline<State>(stream: string, revive?: (snapshot: State) => State): Promise<{ state: State; revision: number } | undefined> {
    const entry = this.entries.get(stream);
    const committed = entry && (entry.pending ? entry.committed : entry);
    if (committed && committed.revision !== 'no_stream') return committed as { state: State; revision: number };
    if (committed) return undefined;
    return this.snapshot(stream, revive);
  }

  /** The stream's snapshot, made whole by `revive`; none when there is none or it cannot be read. */
  private async snapshot<State>(stream: string, revive?: (snapshot: State) => State): Promise<{ state: State; revision: number } | undefined> {
    const snapshot = await this.stored(stream);
    return snapshot ? revived(snapshot, revive) : undefined;
  }

  /** The stream's snapshot as stored; null when there is none or it cannot be read (a slower load, not a failed one). */
  private async stored(stream: string): Promise<SnapshotAndEvents['snapshot']> {
    return (await this.snapshots?.get(stream).catch(() => undefined)) ?? null;
  }

  /** Drops the memory entry (it proved stale): the next load reads the store. */
  forget(stream: string): void {
    this.drop(stream);
  }
}
