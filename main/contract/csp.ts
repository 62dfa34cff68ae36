// Content-Security-Policy for the desktop window and the served page: our own scripts and
// styles only, no remote content. The desktop window talks over IPC and needs no socket at
// all; the served page may open a WebSocket back to the one host:port that served it, and
// nowhere else ('self' covers same-origin ws: in CSP3 browsers; the explicit ws: source
// covers the rest). It used to allow ws://127.0.0.1:* and ws://localhost:*: any local port.
const BASE = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'", // Svelte transitions and chart.js set inline styles
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
];

/** The desktop window: IPC only. */
export const CSP = [...BASE, "connect-src 'self'"].join('; ');

/** A loopback Host header with an optional port ("127.0.0.1:8123", "localhost", "[::1]:9"). */
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;

/** The served page for a request that addressed `host` (its Host header). */
export function servedCsp(host: string | undefined): string {
  const ws = host && LOOPBACK_HOST.test(host) ? ` ws://${host}` : '';
  return [...BASE, `connect-src 'self'${ws}`].join('; ');
}
