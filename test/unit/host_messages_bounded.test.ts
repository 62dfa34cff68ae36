// A request's refusal through the real host (what serve and the app's IPC answer) stays short
// whatever the request holds: zod's own message lists every unknown key it was sent.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHost } from '../../main/host/create';
import { native } from '../helpers/addon';

const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-hostmsg-'));
const host = createHost(native, { home });
afterAll(() => {
  host.dispose();
  rmSync(home, { recursive: true, force: true });
});

describe('host refusals', () => {
  it('100,000 unknown params, a huge spec and a 10 MB alloc_conf each get a reply of a few hundred characters', async () => {
    const params: Record<string, unknown> = { spec: { batch: 1 } };
    for (let i = 0; i < 1e5; i++) params[`p${i}`] = i;
    const wideSpec: Record<string, unknown> = {};
    for (let i = 0; i < 1e5; i++) wideSpec[`s${i}`] = i;
    const replies = [
      await host.handle({ id: 1, method: 'run.predict', params }, 'websocket'),
      await host.handle({ id: 2, method: 'run.predict', params: { spec: wideSpec } }, 'websocket'),
      await host.handle({ id: 3, method: 'run.predict', params: { spec: { alloc_conf: 'x'.repeat(1e7) } } }, 'websocket'),
    ];
    for (const r of replies) {
      expect(r.ok).toBe(false);
      expect(JSON.stringify(r).length).toBeLessThan(1400);
    }
    const message = (i: number) => (replies[i] as { error: { message: string } }).error.message;
    expect(message(0)).toMatch(/Unrecognized keys: "p0", "p1", .*\.\.\. \(\d+ characters\)$/);
    expect(message(1)).toMatch(/^run\.predict: spec: has 100000 keys, more than the 256/);
    expect(message(2)).toBe('run.predict: spec.alloc_conf: must be at most 1024 characters');
  });
});
