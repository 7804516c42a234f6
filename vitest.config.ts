import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/contract-check.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Files are independent (each has its own database); two cores, so two at a time.
    maxWorkers: 2,
    // Each worker loads the module graph once and runs file after file in it, instead of a fresh
    // process and a fresh import of src/ per file (2-3 s of CPU each, over a hundred files). Files
    // share no state through modules: every one makes its own app, services and database.
    isolate: false,
    // Longest first (estimated where no earlier run was cached), so both workers finish together.
    sequence: { sequencer: LongestFirstSequencer },
  },
});
