import { Map as ImmutableMap } from 'immutable';
import { idHash } from './lot-ledger.js';

/** One id's value; ids whose hashes collide are chained (rare: 32-bit hashes of a customer's ids). */
interface Entry<V> {
  readonly id: string;
  readonly value: V;
  readonly next: Entry<V> | undefined;
}

/**
 * A persistent map from a customer's ids (`txn_…`, `red_…`) to values, for the parts of its state
 * that grow with every debit: setting one costs O(log n) and leaves the map before it intact. A
 * plain object copied per event (`{ ...lines, [id]: … }`) made each debit O(n): folding a customer's
 * 20,000th deduct took 6 ms of the event loop. Keyed by `idHash`, a number, for the reason
 * given there. In a snapshot it is a plain object of ids (`toJSON`), as the state held before.
 */
export class IdMap<V> {
  private constructor(
    private readonly entries: ImmutableMap<number, Entry<V>>,
    readonly size: number,
  ) {}

  private static readonly NONE = new IdMap<never>(ImmutableMap(), 0);

  static empty<V>(): IdMap<V> {
    return IdMap.NONE;
  }

  /** From a snapshot's object of ids (`toJSON`). */
  static fromJSON<V>(record: Readonly<Record<string, V>>): IdMap<V> {
    const entries = ImmutableMap<number, Entry<V>>().withMutations((mutable) => {
      for (const [id, value] of Object.entries(record)) {
        const hash = idHash(id);
        mutable.set(hash, { id, value, next: mutable.get(hash) });
      }
    });
    return new IdMap(entries, Object.keys(record).length);
  }

  get(id: string): V | undefined {
    for (let entry = this.entries.get(idHash(id)); entry; entry = entry.next) if (entry.id === id) return entry.value;
    return undefined;
  }

  set(id: string, value: V): IdMap<V> {
    const hash = idHash(id);
    const first = this.entries.get(hash);
    let found = false;
    const chain = (entry: Entry<V> | undefined): Entry<V> | undefined => {
      if (!entry) return undefined;
      if (entry.id === id) {
        found = true;
        return { id, value, next: entry.next };
      }
      return { id: entry.id, value: entry.value, next: chain(entry.next) };
    };
    const replaced = chain(first);
    if (found) return new IdMap(this.entries.set(hash, replaced!), this.size);
    return new IdMap(this.entries.set(hash, { id, value, next: first }), this.size + 1);
  }

  values(): V[] {
    const out: V[] = [];
    for (const first of this.entries.values()) for (let entry: Entry<V> | undefined = first; entry; entry = entry.next) out.push(entry.value);
    return out;
  }

  /** A plain object of ids, for a snapshot. */
  toJSON(): Record<string, V> {
    const out: Record<string, V> = {};
    for (const first of this.entries.values()) for (let entry: Entry<V> | undefined = first; entry; entry = entry.next) out[entry.id] = entry.value;
    return out;
  }
}
