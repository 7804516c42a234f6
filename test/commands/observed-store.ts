import type { EventStore, ReadStreamOptions } from '../../src/store/event-store.js';

/** Where a load started reading a stream, and whether it read it with its snapshot (one round trip). */
export interface StreamRead {
  stream: string;
  from: number | undefined;
  withSnapshot?: true;
}

/**
 * The real store, noting where each read of a stream started (to see how much of a stream a load
 * read). `fromSnapshot: false` hides the store's combined read of a snapshot and the events after
 * it, as a store without one (KurrentDB) would.
 */
export function observed(store: EventStore, options: { fromSnapshot?: boolean } = {}) {
  const reads: StreamRead[] = [];
  const wrapped: EventStore = {
    get transactionalReceipts() {
      return store.transactionalReceipts;
    },
    append: (w, o) => store.append(w, o),
    readAll: (a, m, o) => store.readAll(a, m, o),
    headPosition: () => store.headPosition(),
    countEvents: (a, o) => store.countEvents(a, o),
    lag: (c, h, o) => store.lag(c, h, o),
    streamHeads: (f) => store.streamHeads(f),
    onAppended: (l) => store.onAppended(l),
    readStream: (stream: string, o?: ReadStreamOptions) => {
      reads.push({ stream, from: o?.from });
      return store.readStream(stream, o);
    },
  };
  const readFromSnapshot = store.readStreamFromSnapshot?.bind(store);
  if (readFromSnapshot && options.fromSnapshot !== false) {
    wrapped.readStreamFromSnapshot = async (stream, version) => {
      const read = await readFromSnapshot(stream, version);
      reads.push({ stream, from: read.snapshot ? read.snapshot.revision + 1 : undefined, withSnapshot: true });
      return read;
    };
  }
  return { store: wrapped, reads };
}
