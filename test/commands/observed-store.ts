import type { EventStore, ReadStreamOptions } from '../../src/store/event-store.js';

/** The real store, noting where each readStream started (to see how much of a stream a load read). */
export function observed(store: EventStore) {
  const reads: Array<{ stream: string; from: number | undefined }> = [];
  const wrapped: EventStore = {
    get transactionalReceipts() {
      return store.transactionalReceipts;
    },
    append: (w, options) => store.append(w, options),
    readAll: (a, m, o) => store.readAll(a, m, o),
    headPosition: () => store.headPosition(),
    countEvents: (a, o) => store.countEvents(a, o),
    lag: (c, h, o) => store.lag(c, h, o),
    streamHeads: (f) => store.streamHeads(f),
    onAppended: (l) => store.onAppended(l),
    readStream: (stream: string, options?: ReadStreamOptions) => {
      reads.push({ stream, from: options?.from });
      return store.readStream(stream, options);
    },
  };
  return { store: wrapped, reads };
}
