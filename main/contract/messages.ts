// The wire format shared by both transports (Electron IPC and WebSocket): requests carry
// an id and get exactly one response; events are pushed without an id.
import { z } from 'zod';

export const RequestSchema = z.object({
  id: z.union([z.number().int().nonnegative(), z.string().min(1).max(64)]),
  method: z.string().min(1).max(64),
  params: z.unknown().optional(),
});
export type Request = z.infer<typeof RequestSchema>;

export interface ErrorBody {
  code: 'bad_request' | 'unknown_method' | 'invalid_params' | 'failed' | 'unavailable';
  message: string;
}

export type Response = { id: Request['id'] | null; ok: true; result: unknown } | { id: Request['id'] | null; ok: false; error: ErrorBody };

export interface EventMessage {
  event: string;
  data: unknown;
}

/**
 * One piece of a response too large for one frame (WebSocket only): its JSON text, in
 * order; the last piece has `last: true`. The client joins them and parses the whole.
 */
export interface PartMessage {
  type: 'part';
  id: Request['id'] | null;
  data: string;
  last: boolean;
}

/** One frame on the wire from host to client. */
export type ServerMessage = ({ type: 'response' } & Response) | ({ type: 'event' } & EventMessage) | PartMessage;

export { MAX_FRAME_CHARS, MAX_MESSAGE_BYTES } from './frame_limits';
