import { defineConfig } from 'vitest/config';

// Two cores: keep test files from starving each other (the service tests start worker threads).
// The engine's tests run twice: as usual, and in processes that forbid string code generation
// (`node --disallow-code-generation-from-strings`), where every tree and expression takes the
// plain-TypeScript path — an operator may harden a deployment that way (docs/configuration.md).
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    projects: [
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'engine-without-codegen',
          include: ['test/bt/**/*.test.ts'],
          execArgv: ['--disallow-code-generation-from-strings'],
        },
      },
    ],
  },
});
