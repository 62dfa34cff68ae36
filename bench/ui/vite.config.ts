import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import path from 'node:path';

// The frame-rate bench page, built like the renderer (same aliases, production mode).
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  logLevel: 'warn',
  plugins: [svelte()],
  resolve: { alias: { $contract: path.resolve(import.meta.dirname, '../../main/contract') } },
  build: {
    outDir: path.resolve(import.meta.dirname, '../../test-output/bench-ui'),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 2000,
  },
});
