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
