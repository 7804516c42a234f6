/**
 * `items` smallest first by `compare`, ordered only as far as the caller reads: a binary heap built
 * in O(n), then O(log n) per item taken. For a caller that takes the first few of many (a debit
 * takes a customer's soonest-expiring lots): sorting them all was O(n log n) each time. Reorders
 * `items` in place; items that compare equal come in no particular order.
 */
export function* smallestFirst<T>(items: T[], compare: (a: T, b: T) => number): Generator<T, void, undefined> {
  let size = items.length;
  const siftDown = (from: number) => {
    let at = from;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= size) return;
      const right = left + 1;
      const child = right < size && compare(items[right]!, items[left]!) < 0 ? right : left;
      if (compare(items[child]!, items[at]!) >= 0) return;
      const parent = items[at]!;
      items[at] = items[child]!;
      items[child] = parent;
      at = child;
    }
  };
  for (let i = (size >>> 1) - 1; i >= 0; i--) siftDown(i);
  while (size > 0) {
    const top = items[0]!;
    items[0] = items[--size]!;
    siftDown(0);
    yield top;
  }
}
