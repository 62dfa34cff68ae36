// Who may open the WebSocket: the right token, from no Origin (a script) or our own page,
// addressed to our own host name (guards against DNS rebinding).
import { timingSafeEqual, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

export function tokenMatches(given: string | null, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.includes(host) || host === '::1';
}

/** Returns why the upgrade is refused, or null when it is allowed. */
export function refuseUpgrade(req: IncomingMessage, token: string, boundHost: string, port: number): string | null {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/ws') return 'not found';
  if (!tokenMatches(url.searchParams.get('token'), token)) return 'missing or wrong token';
  const hostHeader = req.headers.host ?? '';
  // Bound to loopback, only loopback names may address us: a rebinding page's Host is its own name.
  if (isLoopback(boundHost) && !LOOPBACK_NAMES.map((h) => `${h}:${port}`).includes(hostHeader))
    return `unexpected Host header "${hostHeader}"`;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${hostHeader}`) return `foreign Origin "${origin}"`;
  return null;
}
