// What a raw WebSocket client of `vramlab serve` reads: JSON text frames, and run progress as
// packed binary frames, decoded by the contract's own reader (the page's).
import { PACKED_MAGIC, unpackEvent } from '../../main/contract/packed_progress';

type Raw = Buffer | ArrayBuffer | Buffer[];

/** One frame as a ServerMessage-shaped object (`{type: 'event', event, data}` for a packed one). */
export function parseFrame(raw: Raw): any {
  const buf = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as ArrayBuffer);
  if (buf.length >= 4 && buf.readUInt32LE(0) === PACKED_MAGIC) return { type: 'event', ...unpackEvent(buf) };
  return JSON.parse(buf.toString());
}
