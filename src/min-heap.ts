/**
 * A binary heap, smallest first by `compare`: O(log n) to add an item or take the smallest, O(n)
 * to build from many at once. Items that compare equal come out in no particular order.
 */
export class MinHeap<T> {
  private readonly items: T[];

  /** `items` (taken over: reordered and emptied in place) in O(n). */
  constructor(
    private readonly compare: (a: T, b: T) => number,
    items: T[] = [],
  ) {
    this.items = items;
    this.heapify();
  }

  get size(): number {
    return this.items.length;
  }

  /** The smallest item, left in. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    let at = items.length;
    items.push(item);
    while (at > 0) {
      const parent = (at - 1) >>> 1;
      if (this.compare(item, items[parent]!) >= 0) break;
      items[at] = items[parent]!;
      at = parent;
    }
    items[at] = item;
  }

  /** Takes the smallest item out. */
  pop(): T | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  /** Keeps only the items `keep` accepts, in O(n). */
  retain(keep: (item: T) => boolean): void {
    const items = this.items;
    let kept = 0;
    for (const item of items) if (keep(item)) items[kept++] = item;
    items.length = kept;
    this.heapify();
  }

  private heapify(): void {
    for (let i = (this.items.length >>> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private siftDown(from: number): void {
    const items = this.items;
    const size = items.length;
    const item = items[from]!;
    let at = from;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= size) break;
      const right = left + 1;
      const child = right < size && this.compare(items[right]!, items[left]!) < 0 ? right : left;
      if (this.compare(items[child]!, item) >= 0) break;
      items[at] = items[child]!;
      at = child;
    }
    items[at] = item;
  }
}
