import { MinHeap } from './min-heap.js';

/**
 * `items` smallest first by `compare`, ordered only as far as the caller reads: a binary heap built
 * in O(n), then O(log n) per item taken. For a caller that takes the first few of many (a debit
 * takes a customer's soonest-expiring lots): sorting them all was O(n log n) each time. Takes
 * `items` over (reordered and emptied in place); items that compare equal come in no particular order.
 */
export function* smallestFirst<T>(items: T[], compare: (a: T, b: T) => number): Generator<T, void, undefined> {
  const heap = new MinHeap(compare, items);
  while (heap.size > 0) yield heap.pop()!;
}
