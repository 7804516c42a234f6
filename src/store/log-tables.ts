import type { Generated, Kysely } from 'kysely';
import type { Database, Json, Timestamp } from '../db/schema.js';

/** The event log (the only source of truth). */
export interface EventsTable {
  global_position: Generated<number>;
  stream_id: string;
  stream_position: number;
  event_id: string;
  type: string;
  data: Json<unknown>;
  metadata: Json;
  recorded_at: Timestamp;
}

/** One row per stream: its revision and the hash of its last event (see hash-chain.ts). */
export interface StreamsTable {
  stream_id: string;
  version: number;
  last_hash: Generated<string>;
}

/** The PostgreSQL event store's tables (created by migration 0001). */
export type LogTables = {
  events: EventsTable;
  streams: StreamsTable;
};

/** The database as the PostgreSQL event store sees it: the read models' tables and its own. */
export type LogDatabase = Database & LogTables;

/** `db` with the log's tables named: only adapters under src/store call this. */
export function withLogTables(db: Kysely<Database>): Kysely<LogDatabase> {
  return db.withTables<LogTables>();
}
