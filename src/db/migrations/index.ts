import type { Migration } from 'kysely';
import { migration as m0001 } from './0001-event-store.js';
import { migration as m0002 } from './0002-core-read-models.js';
import { migration as m0003 } from './0003-program-read-models.js';
import { migration as m0004 } from './0004-webhooks.js';
import { migration as m0005 } from './0005-hash-chain.js';
import { migration as m0007 } from './0007-analytics-views.js';
import { migration as m0008 } from './0008-rate-limits.js';
import { migration as m0009 } from './0009-aggregate-snapshots.js';
import { migration as m0010 } from './0010-idempotency-expiry.js';
import { migration as m0011 } from './0011-random-attempt-ids.js';
import { migration as m0012 } from './0012-claim-holders.js';
import { migration as m0013 } from './0013-daily-points.js';
import { migration as m0014 } from './0014-points-lifecycle.js';
import { migration as m0015 } from './0015-lot-times-in-lists.js';
import { migration as m0016 } from './0016-rate-limit-takes.js';
import { migration as m0017 } from './0017-lots-seq-not-unique.js';

/**
 * Schema migrations, in order; one file each. The event store tables (`events`, `streams`) are the
 * source of truth; every other table is a read model that can be rebuilt from the log.
 * A new migration is a new file here and one line below.
 */
export const migrations: Record<string, Migration> = {
  '0001_event_store': m0001,
  '0002_core_read_models': m0002,
  '0003_program_read_models': m0003,
  '0004_webhooks': m0004,
  '0005_hash_chain': m0005,
  '0007_analytics_views': m0007,
  '0008_rate_limits': m0008,
  '0009_aggregate_snapshots': m0009,
  '0010_idempotency_expiry': m0010,
  '0011_random_attempt_ids': m0011,
  '0012_claim_holders': m0012,
  '0013_daily_points': m0013,
  '0014_points_lifecycle': m0014,
  '0015_lot_times_in_lists': m0015,
  '0016_rate_limit_takes': m0016,
  '0017_lots_seq_not_unique': m0017,
};
