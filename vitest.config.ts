import { defineConfig } from 'vitest/config';

// Two cores: keep test files from starving each other (the service tests start worker threads).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
