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
    return this.chainAt(idHash(id)).find((entry) => entry.id === id)?.value;
  }

  set(id: string, value: V): IdMap<V> {
    const hash = idHash(id);
    const chain = this.chainAt(hash);
    let next: Entry<V> | undefined;
    for (const entry of chain) if (entry.id !== id) next = { id: entry.id, value: entry.value, next };
    const added = chain.every((entry) => entry.id !== id);
    return new IdMap(this.entries.set(hash, { id, value, next }), this.size + (added ? 1 : 0));
  }

  values(): V[] {
    return this.all().map((entry) => entry.value);
  }

  /** A plain object of ids, for a snapshot. */
  toJSON(): Record<string, V> {
    return Object.fromEntries(this.all().map((entry) => [entry.id, entry.value]));
  }

  /** The entries under one hash (usually none or one). */
  private chainAt(hash: number): Entry<V>[] {
    const chain: Entry<V>[] = [];
    for (let entry = this.entries.get(hash); entry; entry = entry.next) chain.push(entry);
    return chain;
  }

  private all(): Entry<V>[] {
    return [...this.entries.keys()].flatMap((hash) => this.chainAt(hash));
  }
}
