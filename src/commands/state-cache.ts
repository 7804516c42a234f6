/**
 * Recently loaded aggregate states, so a command reads only the events appended since (usually
 * none) instead of the whole stream. A cache only: an entry may be stale (another process wrote
 * after it), which costs reading the tail, and the append's expected-revision check catches any
 * race. Least recently used entries are dropped past `capacity`.
 */
export class StateCache {
  private readonly entries = new Map<string, { state: unknown; revision: number }>();

  constructor(private readonly capacity = 10_000) {}

  get<State>(stream: string): { state: State; revision: number } | undefined {
    const entry = this.entries.get(stream);
    if (!entry) return undefined;
    this.entries.delete(stream);
    this.entries.set(stream, entry);
    return entry as { state: State; revision: number };
  }

  set(stream: string, state: unknown, revision: number): void {
    this.entries.delete(stream);
    this.entries.set(stream, { state, revision });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}
