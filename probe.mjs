import { PGlite } from '@electric-sql/pglite';
const t=Date.now();
const db = await PGlite.create();
console.log('init', Date.now()-t);
const r = await db.query(`select 1::int8 as a, pg_current_xact_id() as x, pg_snapshot_xmin(pg_current_snapshot()) as m, now() as n, '{"a":1}'::jsonb as j, 1.5::numeric as num, version() as v`);
console.log(r.rows, r.fields);
const t2=Date.now(); const dump = await db.dumpDataDir('none'); console.log('dump', Date.now()-t2, dump.size);
const t3=Date.now(); const db2 = await PGlite.create({loadDataDir: dump}); await db2.query('select 1'); console.log('load', Date.now()-t3);
