// Types of scripts/check-imports.mjs for the unit test that drives it.
type Source = { path: string; text: string };
export const ALLOWED: Record<string, string[]>;
export const NATIVE_ALLOWED: Record<string, string[]>;
export function layerOf(file: string): string | null;
export function importsOf(file: string, text: string): string[];
export function checkLayers(sources: Source[]): string[];
export function findCycles(sources: Source[]): string[];
export function check(sources: Source[]): string[];
export function checkNative(sources: Source[]): string[];
export function treeSources(root: string): { main: Source[]; native: Source[] };
