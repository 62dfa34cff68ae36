// The host's playground methods (main/contract/playground.ts): open a live engine session,
// run one command line in it, close it. Parsing and evaluation live in main/playground;
// sessions and their lifetimes in playground_sessions.ts.
import type { NativeAddon } from '../addon/types';
import type { PlaygroundState } from '../contract/playground';
import { parseSize } from '../contract/spec';
import type { Host } from './host';
import { DEFAULT_MAX_SESSIONS, PlaygroundSessions } from './playground_sessions';

export const DEFAULT_PLAYGROUND_DEVICE = 'sim:h100-80gb';

export interface PlaygroundMethodOptions {
  maxSessions?: number;
}

interface OpenParams {
  device?: string;
  capacity?: number | string | null;
  alloc_conf?: string;
}

export function registerPlaygroundMethods(host: Host, native: NativeAddon, options: PlaygroundMethodOptions = {}): PlaygroundSessions {
  const sessions = new PlaygroundSessions(native, options.maxSessions ?? DEFAULT_MAX_SESSIONS);
  host.onDispose(() => sessions.closeAll());

  host.register('playground.open', (params): PlaygroundState => {
    const p = (params ?? {}) as OpenParams;
    return sessions.open({
      device: p.device?.trim() || DEFAULT_PLAYGROUND_DEVICE,
      capacity: capacityBytes(p.capacity),
      allocConf: (p.alloc_conf ?? '').trim(),
    });
  });
  host.register('playground.exec', (params): PlaygroundState => {
    const p = params as { sessionId: string; command: string };
    return sessions.exec(p.sessionId, p.command);
  });
  host.register('playground.close', (params) => ({ closed: sessions.close((params as { sessionId: string }).sessionId) }));
  return sessions;
}

/** "1100MiB", "24GB", 1073741824, '' or null (no cap) as bytes. */
function capacityBytes(v: number | string | null | undefined): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' && !v.trim()) return null;
  const bytes = typeof v === 'number' ? v : parseSize(v);
  if (bytes === null || !Number.isFinite(bytes))
    throw new Error(`capacity "${v}" is not a size: use a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. 1100MiB)`);
  if (bytes < 1 << 20 || bytes > 2 ** 50) throw new Error(`capacity must be from 1 MiB to 1 PiB (got ${v})`);
  return Math.floor(bytes);
}
