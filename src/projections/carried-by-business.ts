import type { Checkpoint } from '../store/event-store.js';

/** Where a batch starts and ends in the log, for a projector that carries rows between batches. */
export interface BatchSpan {
  /** The projector's checkpoint before the batch, read under its lock. */
  from: Checkpoint;
  /** Its checkpoint once the batch commits. */
  to: Checkpoint;
  /** What the projector carries between the batches of one runner (each runner has its own). */
  carried: CarriedByBusiness;
}

/** Businesses kept at most: past this, the kept values are dropped and read again as needed. */
const MAX_BUSINESSES = 10_000;

/**
 * A reactor's per-business rows (webhook endpoints, lifecycle policies) that each batch reads
 * before its events, carried from one batch to the next so that a batch reads only the businesses
 * it has not seen: a round trip less per batch on the write path. One per runner and projector
 * (a process may run several stores, each with its own positions).
 *
 * Exact because the values are kept with the checkpoint they hold at: a read model at checkpoint P
 * is the same whoever wrote it, and only the projector's own batches write these tables. A batch
 * that starts where this runner's last batch ended knows that batch committed (the checkpoint,
 * read under lock, says so) and takes over what it left; a batch that starts anywhere else
 * (another process applied the batches between, or the last one rolled back) reads again.
 */
export class CarriedByBusiness {
  /** The checkpoint `values` hold at. */
  private at: bigint | undefined;
  /** By business; `undefined` for a business known to have no row. */
  private readonly values = new Map<string, unknown>();
  /** What the last batch left, until a batch starting at its end shows that it committed. */
  private left: { at: bigint; values: ReadonlyMap<string, unknown> } | undefined;

  /**
   * The values of `businesses` at `span.from`, for the batch to change as its events go (what it
   * holds at the end goes to `leave`). `read` reads businesses' rows through the batch's
   * transaction; `copy` copies a kept value, so that the batch's changes stay its own until it
   * commits. Without a span (a rebuild), everything is read.
   */
  static async take<V>(
    span: BatchSpan | undefined,
    businesses: readonly string[],
    read: (businesses: string[]) => Promise<Map<string, V>>,
    copy: (value: V) => V,
  ): Promise<Map<string, V | undefined>> {
    if (!span) {
      const found = await read([...businesses]);
      return new Map(businesses.map((b) => [b, found.get(b)]));
    }
    const kept = span.carried;
    await kept.keepFor(span.from.globalPosition, businesses, read);
    return new Map(businesses.map((b) => {
      const value = kept.values.get(b) as V | undefined;
      return [b, value === undefined ? undefined : copy(value)];
    }));
  }

  /** What the batch ending at `span.to` leaves: every business `take` gave it, as they are now. */
  static leave<V>(span: BatchSpan | undefined, values: ReadonlyMap<string, V | undefined>): void {
    if (span) span.carried.left = { at: span.to.globalPosition, values };
  }

  private async keepFor<V>(from: bigint, businesses: readonly string[], read: (businesses: string[]) => Promise<Map<string, V>>): Promise<void> {
    if (this.left?.at === from && this.at !== undefined) {
      // The last batch committed: what it left is current, and it changed no other business.
      for (const [business, value] of this.left.values) this.values.set(business, value);
      this.at = from;
    }
    this.left = undefined;
    if (this.at !== from) {
      this.values.clear();
      this.at = from;
    }
    const missing = businesses.filter((b) => !this.values.has(b));
    if (missing.length === 0) return;
    if (this.values.size + missing.length > MAX_BUSINESSES) this.values.clear();
    const found = await read(missing);
    for (const business of missing) this.values.set(business, found.get(business));
  }
}
