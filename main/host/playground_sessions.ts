// Live playground sessions: each owns a native engine session (its own allocator on its own
// device) and an interpreter. Capped in number; the oldest is closed to make room, and
// every session's memory is released on close, on eviction and on host dispose.
import { randomUUID } from 'node:crypto';
import type { NativeAddon } from '../addon/types';
import type { PlaygroundState } from '../contract/playground';
import { Interpreter } from '../playground/interpreter';
import { openNativeSession, type NativeSession } from '../playground/native';

export const DEFAULT_MAX_SESSIONS = 8;

export interface OpenOptions {
  device: string;
  capacity: number | null;
  allocConf: string;
}

interface Session {
  id: string;
  device: string;
  native: NativeSession;
  interp: Interpreter;
}

export class PlaygroundSessions {
  /** Insertion order is age: the first entry is the oldest. */
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly native: NativeAddon,
    readonly maxSessions = DEFAULT_MAX_SESSIONS,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  open(options: OpenOptions): PlaygroundState {
    const native = openNativeSession(this.native, {
      device: options.device,
      capacity: options.capacity,
      allocConf: options.allocConf,
    });
    const id = randomUUID();
    // PyTorch names the device cuda:0 whatever GPU it is; the sim id says which one it models.
    const device = native.device().id;
    const s: Session = { id, device, native, interp: new Interpreter(native, device) };
    while (this.sessions.size >= this.maxSessions) this.close(this.sessions.keys().next().value!);
    this.sessions.set(id, s);
    return this.state(s, '', false);
  }

  exec(sessionId: string, command: string): PlaygroundState {
    const s = this.get(sessionId);
    const r = s.interp.exec(command);
    return this.state(s, r.output, r.error);
  }

  close(sessionId: string): boolean {
    const s = this.sessions.get(sessionId);
    if (!s) return false;
    this.sessions.delete(sessionId);
    s.native.close();
    return true;
  }

  closeAll(): void {
    for (const id of [...this.sessions.keys()]) this.close(id);
  }

  private get(sessionId: string): Session {
    const s = this.sessions.get(sessionId);
    if (!s)
      throw new Error(
        `no playground session "${sessionId}": it was closed, or replaced after ${this.maxSessions} newer sessions were opened; start a new session`,
      );
    return s;
  }

  private state(s: Session, output: string, error: boolean): PlaygroundState {
    return {
      sessionId: s.id,
      device: s.device,
      output,
      error,
      allocated: s.native.memoryAllocated(),
      reserved: s.native.memoryReserved(),
      maxAllocated: s.native.maxMemoryAllocated(),
      tensors: s.interp.tensors(),
      segments: s.native.snapshot().segments,
    };
  }
}
