import { defineConfig } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import os from 'node:os';
import path from 'node:path';

const alias = { $contract: path.resolve(import.meta.dirname, 'main/contract') };
// Vitest's default is one worker fewer than the cores: one worker on CI's 2 cores, where a
// test file spends much of its time importing modules or waiting on the processes it
// starts (the CLI, rank processes), so two workers keep both cores busy. VITEST_MAX_WORKERS=1
// overrides it on a machine other jobs already load.
const workers = Math.max(os.availableParallelism() - 1, 2);

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          testTimeout: 30_000,
          maxWorkers: workers,
        },
      },
      {
        plugins: [svelte()],
        resolve: { alias, conditions: ['browser'] },
        test: {
          name: 'component',
          include: ['test/component/**/*.test.ts'],
          environment: 'jsdom',
          testTimeout: 30_000,
          maxWorkers: workers,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Each file starts its own server (port 0, temporary home) and Chromium, so files run
          // side by side too: 23 files passed in 226 s against 335 s one at a time, on a loaded
          // 2-core machine.
          maxWorkers: workers,
        },
      },
    ],
  },
});
