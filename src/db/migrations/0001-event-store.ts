import { type Migration, sql } from 'kysely';

export const migration: Migration = {
  async up(db) {
    await sql`
      create table events (
        global_position bigint generated always as identity primary key,
        stream_id text not null,
        stream_position bigint not null,
        event_id uuid not null unique,
        type text not null,
        data jsonb not null,
        metadata jsonb not null,
        recorded_at timestamptz not null,
        unique (stream_id, stream_position)
      )`.execute(db);
    await sql`create table streams (stream_id text primary key, version bigint not null)`.execute(db);
    await sql`
      create table projection_checkpoints (
        name text primary key,
        global_position bigint not null default 0,
        updated_at timestamptz not null default now()
      )`.execute(db);
  },
};
