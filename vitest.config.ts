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
    // Longest first (estimated where no earlier run was cached), so both workers finish together.
    sequence: { sequencer: LongestFirstSequencer },
  },
});
