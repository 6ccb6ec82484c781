import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-server suite has a config of its own (vitest.mindsdb.config.ts, npm run test:mindsdb).
    exclude: ['test/mindsdb/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real servers and child processes; two cores do not gain from more.
    maxWorkers: 2,
  },
});
