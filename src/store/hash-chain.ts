import { hash } from 'node:crypto';
import { canonicalJson } from '../json-equality.js';

/** The `prev_hash` of a stream's first event. */
export const GENESIS_HASH = '0'.repeat(64);

export interface HashedFields {
  stream_id: string;
  stream_position: number;
  event_id: string;
  type: string;
  data: unknown;
  /** The event's metadata without `prev_hash` and `hash`. */
  metadata: Record<string, unknown>;
}

/**
 * The hash that chains an event to the one before it in its stream (tamper evidence for
 * auditors): hex SHA-256 of `prev_hash`, a newline, and the canonical JSON (keys sorted, no
 * spaces) of {stream_id, stream_position, event_id, type, data, metadata}. docs/auditing.md shows
 * how to check a stream with a few lines of code.
 */
export function eventHash(prevHash: string, fields: HashedFields): string {
  const { prev_hash: _p, hash: _h, ...metadata } = fields.metadata;
  return hash('sha256', `${prevHash}\n${canonicalJson({ ...fields, metadata })}`, 'hex');
}
