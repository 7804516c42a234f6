import { defineConfig } from 'vitest/config';

/**
 * The unit tier (`npm run test:unit`): pure tests, named `*.unit.test.ts` — deciders, rules, event
 * decoding, schedules. No database and no global set-up (building the PGlite template alone takes
 * seconds), so it answers in a few seconds. `npm test` runs these too, with everything else.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.unit.test.ts'],
    pool: 'threads',
    // Pure modules: one module graph per worker is safe, and loading it once is most of the cost.
    isolate: false,
    maxWorkers: 1,
  },
});
