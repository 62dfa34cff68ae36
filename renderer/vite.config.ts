import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import path from 'node:path';

// Relative base: the same build loads from file:// in Electron and from `vramlab serve`.
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [svelte()],
  resolve: { alias: { $contract: path.resolve(import.meta.dirname, '../main/contract') } },
  build: {
    outDir: path.resolve(import.meta.dirname, '../dist/renderer'),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 1500,
  },
});
