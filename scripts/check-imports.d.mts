// Types of scripts/check-imports.mjs for the unit test that drives it.
export const ALLOWED: Record<string, string[]>;
export function layerOf(file: string): string | null;
export function check(sources: { path: string; text: string }[]): string[];
