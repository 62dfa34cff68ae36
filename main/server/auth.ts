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

/** A loopback name with any port: `ssh -L 9000:127.0.0.1:<port>` makes the page "localhost:9000". */
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;

/** Returns why the upgrade is refused, or null when it is allowed. */
export function refuseUpgrade(req: IncomingMessage, token: string, boundHost: string, _port: number): string | null {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/ws') return 'not found';
  if (!tokenMatches(url.searchParams.get('token'), token)) return 'missing or wrong token';
  const hostHeader = req.headers.host ?? '';
  // Bound to loopback, only loopback names may address us: a DNS-rebinding page's Host is
  // its own name. Any port is accepted, since a local forward (ssh -L, a dev proxy) changes
  // it; reaching that port already takes a local process, and the token is still required.
  if (isLoopback(boundHost) && !LOOPBACK_HOST.test(hostHeader)) return `unexpected Host header "${hostHeader}"`;
  // A page may only connect from the origin it was served from (same host and port as the
  // Host it addressed): another site's Origin is refused whatever the port.
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${hostHeader}`.toLowerCase()) return `foreign Origin "${origin}"`;
  return null;
}
