/**
 * Which statements a pool sends to PostgreSQL as named prepared statements: those whose text it
 * has run `threshold` times (pgJDBC's `prepareThreshold`, for the same reason). A named statement
 * is parsed and planned once per connection, then only bound and executed; an unnamed one is
 * parsed and planned on every call. The service's hot statements have fixed texts (the group
 * commit's, the projection batch's, the key lookup, the summary), and for the summary with its
 * subqueries that planning was most of PostgreSQL's work per request (docs/performance.md).
 * Names are capped, so texts built per call (lists of varying length) cannot fill the server's
 * memory. Threshold 0 prepares nothing (`LOYALTY_DB_PREPARE_THRESHOLD=0`: for a connection pooler
 * that cannot keep prepared statements, such as PgBouncer in transaction mode before 1.21).
 */
export const DEFAULT_PREPARE_THRESHOLD = 5;
const MAX_NAMES = 500;
const MAX_COUNTED = 5_000;

export class PreparedStatements {
  private readonly names = new Map<string, string>();
  private readonly seen = new Map<string, number>();

  constructor(private readonly threshold = DEFAULT_PREPARE_THRESHOLD) {}

  /** The name to send `text` under, once it has run often enough; undefined: send it unnamed. */
  nameOf(text: string): string | undefined {
    if (this.threshold <= 0) return undefined;
    const name = this.names.get(text);
    if (name !== undefined || this.names.size >= MAX_NAMES) return name;
    const count = (this.seen.get(text) ?? 0) + 1;
    if (count < this.threshold) {
      if (this.seen.size < MAX_COUNTED || this.seen.has(text)) this.seen.set(text, count);
      return undefined;
    }
    this.seen.delete(text);
    const named = `loyalty_${this.names.size + 1}`;
    this.names.set(text, named);
    return named;
  }
}

/** When each connection's cached plans are dropped: at these ages of the process, then every last one. */
const PLAN_REFRESH_AT_MS = [10_000, 20_000, 40_000, 80_000, 160_000, 320_000];

/**
 * Which connections should drop their cached plans (`discard plans`) before their next work. A named
 * statement keeps the generic plan PostgreSQL made for it once, and only statistics gathered by
 * autovacuum (a minute or more apart) replace it: a plan made while a table was small (a scan of
 * all of it, cheaper than an index then) stayed while the table grew, and every batch scanned a
 * table of ten thousand streams (docs/performance.md). Tables grow fastest when a database is new,
 * so the plans are dropped often at first (10, 20, 40, 80, 160 and 320 s into the process's life),
 * then every 320 s. The statements stay prepared; each is planned again on its next run.
 */
export class PlanRefresh {
  private readonly startedAt: number;
  private readonly epochs = new WeakMap<object, number>();

  constructor(private readonly now: () => number = Date.now) {
    this.startedAt = now();
  }

  /** True once per refresh for each connection that has been in use since before it. */
  due(connection: object): boolean {
    const epoch = this.epoch();
    const seen = this.epochs.get(connection);
    this.epochs.set(connection, epoch);
    return seen !== undefined && seen < epoch;
  }

  private epoch(): number {
    const age = this.now() - this.startedAt;
    const last = PLAN_REFRESH_AT_MS.at(-1)!;
    if (age >= last) return PLAN_REFRESH_AT_MS.length + Math.floor((age - last) / last);
    return PLAN_REFRESH_AT_MS.filter((at) => age >= at).length;
  }
}
