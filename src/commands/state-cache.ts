import type { SnapshotStore } from './snapshot-store.js';

/** Events folded since the last snapshot after which a new one is taken. */
export const SNAPSHOT_EVERY = 200;

/**
 * Folded aggregate states, so a command reads only the events appended since (usually none)
 * instead of the whole stream: recently used ones in memory, and with a snapshot store, one
 * snapshot in PostgreSQL per `SNAPSHOT_EVERY` events for cold loads. A cache only: an entry may be
 * stale (another process wrote after it), which costs reading the tail, and the append's
 * expected-revision check catches any race. Least recently used entries leave memory past `capacity`.
 */
export class StateCache {
  private readonly entries = new Map<string, { state: unknown; revision: number }>();
  private readonly persisted = new Map<string, number>();

  constructor(
    private readonly capacity = 10_000,
    private readonly snapshots?: SnapshotStore,
  ) {}

  async get<State>(stream: string): Promise<{ state: State; revision: number } | undefined> {
    const entry = this.entries.get(stream);
    if (entry) {
      this.entries.delete(stream);
      this.entries.set(stream, entry);
      return entry as { state: State; revision: number };
    }
    const snapshot = await this.snapshots?.get(stream).catch(() => undefined);
    if (!snapshot) return undefined;
    this.persisted.set(stream, snapshot.revision);
    return snapshot as { state: State; revision: number };
  }

  set(stream: string, state: unknown, revision: number): void {
    this.entries.delete(stream);
    this.entries.set(stream, { state, revision });
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value!;
      this.entries.delete(oldest);
      this.persisted.delete(oldest);
    }
    if (this.snapshots && revision - (this.persisted.get(stream) ?? -1) >= SNAPSHOT_EVERY) {
      this.persisted.set(stream, revision);
      // Off the request's path; a failed snapshot only means a slower cold load.
      this.snapshots.put(stream, revision, state).catch(() => this.persisted.delete(stream));
    }
  }
}
