// `npm run lint`: ESLint's and typescript-eslint's recommended rules (the ones that catch real
// bugs without type information, so the run stays fast) over the TypeScript, Svelte and
// scripts of main/, renderer/, test/, scripts/ and bench/. Formatting is prettier's job.
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'test-output/**', 'renderer/dist/**', '**/*.d.ts'] },
  { files: ['**/*.{ts,mjs,js,svelte}'], extends: [js.configs.recommended, ...tseslint.configs.recommended] },
  ...svelte.configs['flat/recommended'],
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: tseslint.parser, extraFileExtensions: ['.svelte'] } },
    // Svelte 5 declares props and derived state with `let` by convention; svelte/prefer-const
    // is prefer-const that knows those runes.
    rules: { 'prefer-const': 'off', 'svelte/prefer-const': 'error' },
  },
  {
    languageOptions: { globals: globals.node },
    rules: {
      // An unused parameter kept for a signature's sake is spelled with a leading underscore.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The interface runs in a browser; tests and the UI bench drive one (page.evaluate, jsdom).
    files: ['renderer/**', 'test/**', 'bench/**'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    // Tests and benchmarks read untyped JSON replies off the wire (WebSocket, IPC) and poke at them.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
