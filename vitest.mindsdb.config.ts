import { defineConfig } from 'vitest/config';

/**
 * The real-server suite (`npm run test:mindsdb`): the contract held against a real MindsDB from
 * PyPI, started once for the suite by test/mindsdb/global-setup.ts. `npm test` leaves it out.
 */
export default defineConfig({
  test: {
    include: ['test/mindsdb/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/mindsdb/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // The server answers from a few worker processes of its own; two test files at once keep both cores busy.
    maxWorkers: 2,
  },
});
